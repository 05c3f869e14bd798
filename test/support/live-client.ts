/**
 * A real `graphql-ws` client for tests: subscribes over a WebSocket to a test server
 * and collects what arrives, with helpers to wait for a number of changes, for the
 * completion, or for the socket's close.
 */
import { createClient, type Client, type ClientOptions } from 'graphql-ws';
import type { Delivery } from '../../src/live/live-hub.js';
import WebSocket from 'ws';

/** What one subscription received. */
export interface Received<T> {
  readonly values: T[];
  readonly errors: unknown[];
  completed: boolean;
  /** Resolves once `count` values have arrived (rejects after `timeoutMs`). */
  next(count: number, timeoutMs?: number): Promise<T[]>;
  /** Resolves once the subscription ended with an error or completed. */
  ended(timeoutMs?: number): Promise<void>;
  /** Stop the subscription. */
  stop(): void;
}

/** A test client: its subscriptions, and how its socket closed. */
export interface LiveClient {
  readonly client: Client;
  /** Close events of the socket, in order. */
  readonly closes: Array<{ code: number; reason: string }>;
  subscribe<T = Record<string, any>>(query: string, variables?: Record<string, unknown>): Received<T>;
  dispose(): Promise<void>;
}

/** Wait until `ready()` or fail after `timeoutMs`, polling every few ms. */
export async function waitFor(ready: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** How a test connects: its token (or its own `connection_init` payload) and its reconnects. */
export interface WsClientOptions {
  readonly token?: string;
  /** The `connection_init` payload, instead of the one `token` makes. */
  readonly params?: Record<string, unknown>;
  /** Reconnects after a dropped socket (none by default: a test sees every close). */
  readonly retryAttempts?: number;
  readonly on?: ClientOptions['on'];
}

/**
 * A graphql-ws client of a test server's `/graphql`, with `ws` as Node's WebSocket and
 * the token in `connection_init`: what every test's GraphQL client (Apollo's
 * `GraphQLWsLink`, Relay's network, urql's `subscriptionExchange`) subscribes through.
 */
export function wsClient(httpUrl: string, options: WsClientOptions = {}): Client {
  return createClient({
    url: httpUrl.replace(/^http/, 'ws'),
    webSocketImpl: WebSocket,
    retryAttempts: options.retryAttempts ?? 0,
    lazy: true,
    connectionParams: options.params ?? (options.token ? { Authorization: `Bearer ${options.token}` } : {}),
    on: options.on,
  });
}

/** Connect to a test server's `/graphql` over WebSocket (the token, if any, in connection_init). */
export function liveClient(httpUrl: string, options: Omit<WsClientOptions, 'on'> = {}): LiveClient {
  const closes: Array<{ code: number; reason: string }> = [];
  const client = wsClient(httpUrl, {
    ...options,
    on: { closed: (event) => closes.push({ code: (event as { code: number }).code, reason: String((event as { reason: unknown }).reason) }) },
  });
  return {
    client,
    closes,
    subscribe<T>(query: string, variables?: Record<string, unknown>): Received<T> {
      const received: Received<T> = {
        values: [],
        errors: [],
        completed: false,
        next: async (count, timeoutMs = 10_000) => {
          await waitFor(() => received.values.length >= count || received.errors.length > 0, timeoutMs, `${count} values`);
          if (received.values.length < count) throw new Error(`the subscription failed: ${JSON.stringify(received.errors)}`);
          return received.values.slice(0, count);
        },
        ended: (timeoutMs = 10_000) => waitFor(() => received.completed || received.errors.length > 0, timeoutMs, 'the end of the subscription'),
        stop: () => undefined,
      };
      received.stop = client.subscribe<T>(
        { query, variables },
        {
          next: (value) => {
            if (value.errors) received.errors.push(...value.errors);
            else received.values.push(value.data as T);
          },
          error: (err) => received.errors.push(...(Array.isArray(err) ? err : [err])),
          complete: () => (received.completed = true),
        },
      );
      return received;
    },
    dispose: async () => {
      await client.dispose();
    },
  };
}

/**
 * Pull a hub subscription continuously, as a transport does, into an array (what
 * arrived so far; `splice(0)` to take it).
 */
export function collectDeliveries(iterator: AsyncIterableIterator<Delivery>): Delivery[] {
  const got: Delivery[] = [];
  void (async () => {
    for (;;) {
      const next = await iterator.next();
      if (next.done) return;
      got.push(next.value);
    }
  })();
  return got;
}
