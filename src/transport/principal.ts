/**
 * Who a request's budget and its share of the execution slots belong to: the signed-in
 * user, or for an anonymous request the client's address. Behind a proxy every client
 * shares the proxy's address; with `TRUST_PROXY` the last `X-Forwarded-For` entry (the
 * one the proxy in front of this server appended, which a client cannot forge) is the
 * client's address instead.
 */
import type { IncomingMessage } from 'node:http';

/** The client address of a request (`TRUST_PROXY`: the last `X-Forwarded-For` entry, when there is one). */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const header = req.headers['x-forwarded-for'];
    const forwarded = Array.isArray(header) ? header.join(',') : header;
    if (forwarded) {
      const last = forwarded.slice(forwarded.lastIndexOf(',') + 1).trim();
      if (last !== '') return last;
    }
  }
  return req.socket.remoteAddress ?? 'unknown';
}

/** The principal of a user (`username`) or, anonymous, of a client address. */
export function principalOf(username: string | null, address: string): string {
  return username === null ? `address:${address}` : `user:${username}`;
}
