/**
 * Deep paging: a 100,000-post timeline, page size 20. Latency of pages 1, 100, 1,000
 * and 5,000 reached by cursor (the engine: one slice from the cursor), against the
 * same pages by offset (bench/offset-baseline.ts).
 */
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import pino from 'pino';
import { createRequestContext, createServices } from '../src/composition-root.js';
import { timelineTable } from '../src/features/timeline/timeline-tables.js';
import { encodePartition } from '../src/store/sqlite/sqlite-keys.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { newTimeuuid } from '../src/store/timeuuid.js';
import type { Mutation } from '../src/store/port.js';
import { pageByArraySlice, pageBySqlOffset } from './offset-baseline.js';

const POSTS = 100_000;
const PAGES = [1, 100, 1_000, 5_000];

function stats(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { medianMs: +at(0.5).toFixed(3), p99Ms: +at(0.99).toFixed(3), runs: s.length };
}

async function time(runs: number, fn: () => unknown) {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    samples.push(performance.now() - t);
  }
  return stats(samples);
}

export async function runDeepPaging(
  file: string,
  progress: (m: string) => void,
  row: (figure: string, value: string, target?: string, met?: boolean | null) => void,
) {
  const db = new Database(file);
  const store = new SqliteStore({ database: db });
  await store.ensureTables([timelineTable]);
  const userId = '00000000-0000-4000-8000-00000000b0b0';
  const start = Date.UTC(2020, 0, 1);
  for (let i = 0; i < POSTS; i += 1_000) {
    const batch: Mutation[] = [];
    for (let k = i; k < i + 1_000; k++) {
      batch.push({ kind: 'upsert', table: timelineTable, row: { user_id: userId, post_id: newTimeuuid(start + k * 1_000), content: `post ${k}` } });
    }
    await store.batch(batch);
    if (i % 20_000 === 0) progress(`deep paging: inserted ${i.toLocaleString()} of ${POSTS.toLocaleString()} posts`);
  }
  const settings = { cursorSecret: 'bench-cursor-secret-0123456789', suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins' } as const;
  const { timeline } = createRequestContext(createServices(settings, { store, logger: pino({ level: 'silent' }) }), null, { cache: false });
  // Walk to each target page by cursor, as a client would, keeping the cursor before it.
  const cursorBefore = new Map<number, string | undefined>([[1, undefined]]);
  let after: string | undefined;
  for (let page = 1; page <= Math.max(...PAGES); page++) {
    if (PAGES.includes(page)) cursorBefore.set(page, after);
    const p = await timeline.posts(userId, { first: 20, after });
    after = p.pageInfo.endCursor ?? undefined;
  }
  progress('deep paging: walked 5,000 pages; timing each target page');
  const pk = encodePartition(timelineTable, { user_id: userId });
  const out: Record<string, unknown> = {};
  for (const page of PAGES) {
    const byCursor = await time(300, () => timeline.posts(userId, { first: 20, after: cursorBefore.get(page) }));
    const bySqlOffset = await time(100, () => pageBySqlOffset(db, pk, page));
    const byArraySlice = await time(5, () => pageByArraySlice(store, userId, page));
    out[`page ${page}`] = { byCursor, bySqlOffset, byArraySlice };
    row(`deep paging: page ${page.toLocaleString()} by cursor / SQL OFFSET / array slice (median ms)`, `${byCursor.medianMs} / ${bySqlOffset.medianMs} / ${byArraySlice.medianMs}`);
  }
  const first = (out['page 1'] as { byCursor: { medianMs: number } }).byCursor.medianMs;
  const last = (out['page 5000'] as { byCursor: { medianMs: number } }).byCursor.medianMs;
  row('deep paging: page 5,000 vs page 1, by cursor', `${(last / first).toFixed(2)}x`, '<= 1.5x', last <= 1.5 * first);
  await store.close();
  return { posts: POSTS, pageSize: 20, pages: out };
}
