/**
 * The request log: one debug line per request (method, path without the query string,
 * status, duration), and no wrapper at all above debug level.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { withRequestLog } from '../../src/transport/request-log.js';

function capture(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level }, stream), lines };
}

describe('the request log', () => {
  it('logs one line per request at debug level', async () => {
    const { logger, lines } = capture('debug');
    const server = createServer(withRequestLog((_req, res) => void res.writeHead(418).end(), logger));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await fetch(`http://127.0.0.1:${port}/graphql?query=%7Bviewer%7Busername%7D%7D`);
    await fetch(`http://127.0.0.1:${port}/readyz`, { method: 'POST' });
    await new Promise<void>((resolve) => server.close(() => resolve()));
    expect(lines.map(({ method, path, status, level }) => ({ method, path, status, level }))).toEqual([
      { method: 'GET', path: '/graphql', status: 418, level: 20 },
      { method: 'POST', path: '/readyz', status: 418, level: 20 },
    ]);
    expect(lines[0]!.msg).toMatch(/^GET \/graphql 418 [\d.]+ ms$/);
    expect(typeof lines[0]!.ms).toBe('number');
  });

  it('leaves the handler unwrapped above debug level', () => {
    const handler = () => undefined;
    expect(withRequestLog(handler, capture('info').logger)).toBe(handler);
  });
});
