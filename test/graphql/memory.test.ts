/**
 * Memory one kind of anonymous request can pin (issue 16, defect 2): 1,200 requests,
 * each carrying 900 KB of variables the query never declares, against the real server
 * in a child process. The server's resident memory must grow by less than 50 MB (it
 * grew by over 1 GB when the cost memo was keyed by the variables' JSON). The figure
 * is printed; MEMORY_REQUESTS changes the count.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChildServer, type ChildServer } from '../support/child-server.js';

const REQUESTS = Number(process.env.MEMORY_REQUESTS ?? 1_200);
// A few at a time: what is measured is memory kept, not the bodies in flight.
const CONCURRENCY = 4;

/** Resident set size of a process, in bytes (Linux). */
function rss(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]!;
  return Number(kb) * 1024;
}

describe('memory pinned by unused variables', () => {
  let server: ChildServer;
  beforeAll(async () => {
    server = await startChildServer(':memory:', { LIST_APPLIER: 'false', LOG_LEVEL: 'warn' });
  });
  afterAll(() => {
    server.process.kill('SIGKILL');
  });

  const query = `query ($n: Int) { userByUsername(username: "nobody") { posts(first: $n) { edges { cursor } } } }`;
  async function send(pad: string) {
    const res = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables: { n: 5, pad } }),
    });
    const body = (await res.json()) as { data?: unknown; errors?: unknown };
    expect(body).toMatchObject({ data: { userByUsername: null } });
  }

  it(`grows by less than 50 MB over ${REQUESTS} requests with 900 KB of unused variables each`, async () => {
    const pad = () => randomBytes(450_000).toString('hex');
    // Warm up: the first requests compile and cache what every later one reuses.
    for (let i = 0; i < 40; i++) await send(pad());
    const before = rss(server.process.pid!);
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < REQUESTS) {
          next++;
          await send(pad());
        }
      }),
    );
    // What stays: the lowest reading over the next 2.5 s, once garbage of the last
    // requests had its chance to be collected (kept memory cannot drop).
    let after = Infinity;
    for (let i = 0; i < 5; i++) {
      await sleep(500);
      after = Math.min(after, rss(server.process.pid!));
    }
    const grewMb = (after - before) / 2 ** 20;
    console.log(`server RSS ${(before / 2 ** 20).toFixed(0)} MB -> ${(after / 2 ** 20).toFixed(0)} MB (${grewMb.toFixed(1)} MB) after ${REQUESTS} requests of 900 KB unused variables`);
    expect(grewMb).toBeLessThan(50);
  }, 240_000);
});
