/**
 * Logs: readable lines on a development terminal, JSON lines everywhere else
 * (production, pipes), for log collectors.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';

/** A stream that records what is written, optionally posing as a terminal. */
function sink(isTTY: boolean) {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString());
      done();
    },
  }) as Writable & { isTTY?: boolean };
  stream.isTTY = isTTY;
  return { stream: stream as unknown as NodeJS.WriteStream, text: () => chunks.join('') };
}

describe('the logger', () => {
  it('prints readable lines on a development terminal', async () => {
    const out = sink(true);
    createLogger({ level: 'info', production: false, stream: out.stream }).info({ port: 4000 }, 'server ready');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const line = out.text().replace(/\x1b\[[0-9;]*m/g, '');
    expect(line).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: server ready\n\s+port: 4000\n$/);
  });

  it.each([
    ['in production, even on a terminal', true, true],
    ['when stdout is not a terminal', false, false],
  ])('prints JSON lines %s', (_, production, isTTY) => {
    const out = sink(isTTY);
    createLogger({ level: 'info', production, stream: out.stream }).info({ port: 4000 }, 'server ready');
    expect(JSON.parse(out.text())).toMatchObject({ level: 30, port: 4000, msg: 'server ready' });
  });
});
