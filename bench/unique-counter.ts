/**
 * The unique counter: acceptances per second, seed 001's first-write-wins against the
 * lightweight-transaction variant, on the embedded store. (On SQLite an LWT is a local
 * read-then-write; on Cassandra it costs Paxos rounds, which this cannot show.)
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import pino from 'pino';
import { ALL_TABLES, createRequestContext, createServices } from '../src/composition-root.js';
import type { AcceptanceStrategy } from '../src/features/meetings/meetings.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';

const ACCEPTANCES = 20_000;
const CONCURRENCY = 32;

async function measure(strategy: AcceptanceStrategy) {
  const store = new SqliteStore({ database: new Database(':memory:') });
  // Every table: an acceptance also writes the live change log and its count.
  await store.ensureTables(ALL_TABLES);
  const settings = { cursorSecret: 'bench-cursor-secret-0123456789', suspensionBucket: 'month', acceptanceStrategy: strategy } as const;
  const services = createServices(settings, { store, logger: pino({ level: 'silent' }) });
  // Thousands of acceptances in one job: the loaders batch but keep nothing.
  const { meetings } = createRequestContext(services, { username: 'bench', isAdmin: true }, { cache: false });
  const meeting = await meetings.create({ title: 'bench' }, randomUUID());
  // Every user accepts twice: half the requests are repeats that must not count.
  const users = Array.from({ length: ACCEPTANCES / 2 }, () => randomUUID());
  const work = [...users, ...users];
  let next = 0;
  let counted = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < work.length; i = next++) if ((await meetings.accept(meeting.meetingId, work[i]!)).counted) counted++;
    }),
  );
  const seconds = (performance.now() - t) / 1000;
  const count = await meetings.acceptanceCount(meeting.meetingId);
  await store.close();
  if (counted !== users.length || count !== users.length) throw new Error(`${strategy} counted ${counted}/${count}, expected ${users.length}`);
  return { acceptances: work.length, distinctUsers: users.length, perSecond: Math.round(work.length / seconds), counted };
}

export async function runUniqueCounter(
  progress: (m: string) => void,
  row: (figure: string, value: string, target?: string, met?: boolean | null) => void,
) {
  const fww = await measure('first-write-wins');
  progress('unique counter: first-write-wins done; now the lightweight transaction');
  const lwt = await measure('lwt');
  row('unique counter on SQLite: first-write-wins acceptances/s', String(fww.perSecond));
  row('unique counter on SQLite: lightweight transaction acceptances/s', String(lwt.perSecond));
  return { store: 'SQLite (embedded)', concurrency: CONCURRENCY, firstWriteWins: fww, lightweightTransaction: lwt };
}
