/**
 * The unique counter: acceptances per second and their p99, seed 001's first-write-wins
 * against the lightweight-transaction variant, through the product's own
 * `Meetings.accept`, 32 at a time, every user accepting twice. On the embedded store
 * (`npm run bench`) an LWT is a local read-then-write; on Cassandra
 * (`npm run bench:cassandra`, `measureAcceptances` over its store) it costs Paxos
 * rounds, and under contention some fail: those failures are counted by kind, not hidden.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import pino from 'pino';
import { ALL_TABLES, createRequestContext, createServices } from '../src/composition-root.js';
import type { AcceptanceStrategy } from '../src/features/meetings/meetings.js';
import { meetingUsersTable } from '../src/features/meetings/meetings-tables.js';
import type { Store } from '../src/store/port.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';

const ACCEPTANCES = 20_000;
const CONCURRENCY = 32;

/** What one run of acceptances gave, and whether its counts are exact. */
export interface AcceptanceRun {
  readonly strategy: AcceptanceStrategy;
  readonly acceptances: number;
  readonly distinctUsers: number;
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Accepts that answered `counted: true`. */
  readonly counted: number;
  /** Acceptance rows the meeting holds afterwards. */
  readonly rows: number;
  /** The meeting's `acceptanceCount` afterwards. */
  readonly count: number;
  /** Accepts that failed, by error name and first words of the message. */
  readonly failures: Record<string, number>;
  /** Every user counted once: counted, rows and count all equal the distinct users. */
  readonly exact: boolean;
}

/** The value at quantile `q` of sorted numbers. */
export function quantile(sorted: readonly number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** A failure's kind: its class and its message up to the first digit or colon. */
function failureKind(err: unknown): string {
  const e = err as Error;
  return `${e?.name ?? 'Error'}: ${String(e?.message ?? e).split(/[:\d]/)[0]!.trim()}`;
}

/**
 * `acceptances` accepts of one new meeting over `store` (its tables created), half of
 * them repeats, `concurrency` at a time, through `Meetings.accept` with `strategy`.
 */
export async function measureAcceptances(
  store: Store,
  strategy: AcceptanceStrategy,
  options: { acceptances: number; concurrency: number },
): Promise<AcceptanceRun> {
  const settings = { cursorSecret: 'bench-cursor-secret-0123456789', suspensionBucket: 'month', acceptanceStrategy: strategy } as const;
  const services = createServices(settings, { store, logger: pino({ level: 'silent' }) });
  // Thousands of acceptances in one job: the loaders batch but keep nothing.
  const { meetings } = createRequestContext(services, { username: 'bench', isAdmin: true }, { cache: false });
  const meeting = await meetings.create({ title: 'bench' }, randomUUID());
  // Every user accepts twice: half the requests are repeats that must not count.
  const users = Array.from({ length: options.acceptances / 2 }, () => randomUUID());
  const work = [...users, ...users];
  const latencies: number[] = [];
  const failures: Record<string, number> = {};
  let next = 0;
  let counted = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      for (let i = next++; i < work.length; i = next++) {
        const started = performance.now();
        try {
          if ((await meetings.accept(meeting.meetingId, work[i]!)).counted) counted++;
        } catch (err) {
          const kind = failureKind(err);
          failures[kind] = (failures[kind] ?? 0) + 1;
        }
        latencies.push(performance.now() - started);
      }
    }),
  );
  const seconds = (performance.now() - t) / 1000;
  const count = await meetings.acceptanceCount(meeting.meetingId);
  const rows = (await store.slice(meetingUsersTable, { partition: { meeting_id: meeting.meetingId }, limit: work.length + 1 })).length;
  latencies.sort((a, b) => a - b);
  return {
    strategy,
    acceptances: work.length,
    distinctUsers: users.length,
    perSecond: Math.round(work.length / seconds),
    p50Ms: +quantile(latencies, 0.5).toFixed(2),
    p99Ms: +quantile(latencies, 0.99).toFixed(2),
    counted,
    rows,
    count,
    failures,
    exact: counted === users.length && rows === users.length && count === users.length,
  };
}

async function measureOnSqlite(strategy: AcceptanceStrategy) {
  const store = new SqliteStore({ database: new Database(':memory:') });
  // Every table: an acceptance also writes the live change log and its count.
  await store.ensureTables(ALL_TABLES);
  const run = await measureAcceptances(store, strategy, { acceptances: ACCEPTANCES, concurrency: CONCURRENCY });
  await store.close();
  if (!run.exact) throw new Error(`${strategy} counted ${run.counted}/${run.count} (${run.rows} rows), expected ${run.distinctUsers}`);
  return { acceptances: run.acceptances, distinctUsers: run.distinctUsers, perSecond: run.perSecond, counted: run.counted, p99Ms: run.p99Ms };
}

export async function runUniqueCounter(
  progress: (m: string) => void,
  row: (figure: string, value: string, target?: string, met?: boolean | null) => void,
) {
  const fww = await measureOnSqlite('first-write-wins');
  progress('unique counter: first-write-wins done; now the lightweight transaction');
  const lwt = await measureOnSqlite('lwt');
  row('unique counter on SQLite: first-write-wins acceptances/s', String(fww.perSecond));
  row('unique counter on SQLite: lightweight transaction acceptances/s', String(lwt.perSecond));
  return { store: 'SQLite (embedded)', concurrency: CONCURRENCY, firstWriteWins: fww, lightweightTransaction: lwt };
}
