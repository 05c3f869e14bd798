/**
 * The store calls of first-visit offset pages, one by one (`npx tsx bench/jump-calls.ts`):
 * for each of the three counted connections of jump-connections.ts and a timeline
 * (User.posts, one post a millisecond; BENCH_JUMP_ONLY, a part of a name, narrows them),
 * BENCH_JUMP_ITEMS edges (default 100,100) on the
 * embedded store (in memory), and on Cassandra too when CASSANDRA_CONTACT_POINTS names
 * one; for the first page and the pages the 3x target holds to on a first visit
 * (offset 10^5 both ways, 10^3 from a cursor in the middle): the median time where the
 * process keeps no list (the cases in turn, one page each a round, BENCH_JUMP_RUNS rounds, default 400), then
 * one such page's calls: wave, operation, table, rows, the
 * characters they hold, when each started and how long it took. With BENCH_JUMP_PROFILE
 * (a part of a case's label), that case's pages also run under the CPU profiler, 2,000
 * of them, and the functions with the most self time are printed. Where a first visit's
 * time goes, call by call; not a figure for BENCHMARKS.md (bench/jump.ts is).
 */
import { Session } from 'node:inspector/promises';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import pino from 'pino';
import { ALL_TABLES, createRequestContext, createServices } from '../src/composition-root.js';
import { postsCountKey } from '../src/features/timeline/timeline.js';
import { timelineTable } from '../src/features/timeline/timeline-tables.js';
import { timeuuidOfMicros } from '../src/store/timeuuid.js';
import { RankCache } from '../src/paging/ranked-index.js';
import type { PageArgs } from '../src/paging/types.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { StoreDecorator, type StoreCall } from '../src/store/store-decorator.js';
import type { Store } from '../src/store/port.js';
import type { StatementTally } from '../src/store/statements.js';
import { onCassandraKeyspace } from './cassandra-keyspace.js';
import { writeConcurrently } from './jump.js';
import { added, connections, fillConnection, type Connection } from './jump-connections.js';
import { busyTime, type CpuProfile } from './profile-areas.js';
import { positive } from './settings.js';

/** One call of a traced page. */
interface TracedCall {
  readonly wave: number;
  readonly operation: string;
  readonly table: string | null;
  rows: number;
  chars: number;
  /** Statements the call sent (a Cassandra slice between keys of mixed clustering orders sends one per range, in turn). */
  readonly tally: StatementTally;
  readonly startMs: number;
  ms: number;
}

/** Records every call while `tracing`, with its wave (calls that overlap share one), statements, rows and time. */
class CallTracingStore extends StoreDecorator {
  private inFlight = 0;
  private waves = 0;
  private started = 0;
  tracing = false;
  calls: TracedCall[] = [];

  start(): void {
    this.waves = 0;
    this.calls = [];
    this.started = performance.now();
    this.tracing = true;
  }

  /** A tally of its own for each call (the adapter counts the call's statements into it). */
  protected override statementTally(): StatementTally {
    return { statements: 0 };
  }

  protected async around<T>(call: StoreCall, run: () => Promise<T>, tally: StatementTally | undefined): Promise<T> {
    if (!this.tracing) return run();
    if (this.inFlight === 0) this.waves++;
    const traced: TracedCall = { wave: this.waves, operation: call.operation, table: call.table, rows: 0, chars: 0, tally: tally!, startMs: performance.now() - this.started, ms: 0 };
    this.calls.push(traced);
    this.inFlight++;
    try {
      const result = await run();
      traced.ms = performance.now() - this.started - traced.startMs;
      traced.rows = Array.isArray(result) ? result.filter((r) => r != null).length : result == null ? 0 : 1;
      traced.chars = JSON.stringify(result, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))?.length ?? 0;
      return result;
    } finally {
      this.inFlight--;
    }
  }
}

const RUNS = Math.round(positive('BENCH_JUMP_RUNS', 400));
const ADMIN_SETTINGS = { cursorSecret: 'bench-cursor-secret-0123456789', suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins' } as const;

async function traceOn(name: string, base: Store, write: (m: Parameters<Store['batch']>[0]) => Promise<void>): Promise<void> {
  const size = Math.round(positive('BENCH_JUMP_ITEMS', 100_100));
  const only = process.env.BENCH_JUMP_ONLY;
  const store = new CallTracingStore(base);
  const services = createServices(ADMIN_SETTINGS, { store, logger: pino({ level: 'silent' }) });
  const cold = { ...services, rankCache: new RankCache(0) };
  for (const connection of [...connections(), await timelineOf(services)]) {
    if (only && !connection.name.includes(only)) continue;
    await fillConnection({ base, write }, connection, size);
    const middle = (await connection.page(services, { first: 1, offset: Math.floor(size / 2) })).pageInfo.endCursor!;
    // Every visit a first one: a process that keeps no list, but knows the index's shape
    // from its page before (`IndexShape`); and one that knows nothing of it (a new process).
    const cases: Array<[string, PageArgs, 'shape'?]> = [
      ['first page', { first: 20 }],
      ['first 20, offset 100,000', { first: 20, offset: 100_000 }],
      ['last 20, offset 100,000', { last: 20, offset: 100_000 }],
      ['first 20 after the middle, offset 1,000', { first: 20, after: middle, offset: 1_000 }],
      ['first 20, offset 100,000, nothing known', { first: 20, offset: 100_000 }, 'shape'],
      ['first 20 after the middle, offset 1,000, nothing known', { first: 20, after: middle, offset: 1_000 }, 'shape'],
    ];
    const on = (unknown?: 'shape') => (unknown ? { ...services, rankCache: new RankCache(0) } : cold);
    // The cases in turn, a page of each a round: a burst of load elsewhere on the machine
    // slows every case alike rather than the one it lands on.
    const samples = cases.map((): number[] => []);
    for (let round = 0; round < RUNS + 20; round++) {
      for (const [i, [, args, unknown]] of cases.entries()) {
        const services = on(unknown);
        const t = performance.now();
        await connection.page(services, args);
        if (round >= 20) samples[i]!.push(performance.now() - t);
      }
    }
    const medians = samples.map((s) => s.sort((a, b) => a - b)[Math.floor(s.length / 2)]!);
    for (const [i, [label, args, unknown]] of cases.entries()) {
      const medianMs = +medians[i]!.toFixed(3);
      const services = on(unknown);
      store.start();
      const t = performance.now();
      await connection.page(services, args);
      const total = performance.now() - t;
      store.tracing = false;
      console.log(`\n${connection.name} (${name}), ${label}, every visit a first one: median ${medianMs} ms (${(medianMs / medians[0]!).toFixed(2)}x the first page); traced ${total.toFixed(3)} ms, ${store.calls.length} calls`);
      console.table(store.calls.map(({ tally, ...c }) => ({ ...c, statements: tally.statements, startMs: +c.startMs.toFixed(3), ms: +c.ms.toFixed(3) })));
      const profiled = process.env.BENCH_JUMP_PROFILE;
      if (profiled && label.includes(profiled)) await profile(() => connection.page(on(unknown), args));
    }
  }
}

/** A timeline as a connection of the section: one author's posts, one a millisecond, written as createPost writes what a page reads. */
async function timelineOf(services: ReturnType<typeof createServices>): Promise<Connection> {
  const author = (await createRequestContext(services, { username: 'root', isAdmin: true }).users.create({ username: `jumper${Date.now()}`, displayName: 'Jumper' })).id;
  const countKey = postsCountKey(author);
  return {
    name: 'User.posts',
    countKey,
    rows(_i, micros) {
      const postId = timeuuidOfMicros(micros);
      return [
        { kind: 'upsert', table: timelineTable, row: { user_id: author, post_id: postId, content: `post ${micros}` }, options: { timestamp: micros } },
        added(countKey, postId, micros),
      ];
    },
    page: (on, args) => createRequestContext(on, null, { cache: false }).timeline.posts(author, args),
  };
}

/** Self time by function over 2,000 runs of `fn` under the CPU profiler: the top 25, µs a run. */
async function profile(fn: () => Promise<unknown>): Promise<void> {
  const runs = 2_000;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 50 });
  await session.post('Profiler.start');
  for (let i = 0; i < runs; i++) await fn();
  const { profile: taken } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
  session.disconnect();
  const { busy, bySelf } = busyTime(taken, []);
  console.log(`busy ${(busy / runs).toFixed(1)} µs a run; self time by function, µs a run:`);
  console.table([...bySelf].sort((a, b) => b[1] - a[1]).slice(0, 25).map(([name, us]) => ({ name, us: +(us / runs).toFixed(2) })));
}

async function main(): Promise<void> {
  const db = new Database(':memory:');
  const base = new SqliteStore({ database: db });
  await base.ensureTables(ALL_TABLES);
  await traceOn('embedded', base, (m) => base.batch(m));
  await base.close();
  await onCassandraKeyspace('bench_jump_calls', (m) => console.error(m), (cassandra) => traceOn('Cassandra', cassandra, (m) => writeConcurrently(cassandra, m)));
}

await main();
