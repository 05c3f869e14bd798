/**
 * The store calls of first-visit offset pages, one by one (`npx tsx bench/jump-calls.ts`):
 * for each of the three counted connections of jump-connections.ts (BENCH_JUMP_ONLY, a
 * part of a name, narrows them), BENCH_JUMP_ITEMS edges (default 100,100) on the
 * embedded store (in memory), and on Cassandra too when CASSANDRA_CONTACT_POINTS names
 * one; for the first page and the pages the 3x target holds to on a first visit
 * (offset 10^5 both ways, 10^3 from a cursor in the middle): the median time where the
 * process keeps no list, then one such page's calls: wave, operation, table, rows, the
 * characters they hold, when each started and how long it took. Where a first visit's
 * time goes, call by call; not a figure for BENCHMARKS.md (bench/jump.ts is).
 */
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import pino from 'pino';
import { ALL_TABLES, createServices } from '../src/composition-root.js';
import { RankCache } from '../src/paging/ranked-index.js';
import type { PageArgs } from '../src/paging/types.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { StoreDecorator, type StoreCall } from '../src/store/store-decorator.js';
import type { Store } from '../src/store/port.js';
import { onCassandraKeyspace } from './cassandra-keyspace.js';
import { time, writeConcurrently } from './jump.js';
import { connections, fillConnection } from './jump-connections.js';
import { positive } from './settings.js';

/** One call of a traced page. */
interface TracedCall {
  readonly wave: number;
  readonly operation: string;
  readonly table: string | null;
  rows: number;
  chars: number;
  readonly startMs: number;
  ms: number;
}

/** Records every call while `tracing`, with its wave (calls that overlap share one), rows and time. */
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

  protected async around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    if (!this.tracing) return run();
    if (this.inFlight === 0) this.waves++;
    const traced: TracedCall = { wave: this.waves, operation: call.operation, table: call.table, rows: 0, chars: 0, startMs: performance.now() - this.started, ms: 0 };
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

const RUNS = 200;
const ADMIN_SETTINGS = { cursorSecret: 'bench-cursor-secret-0123456789', suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins' } as const;

async function traceOn(name: string, base: Store, write: (m: Parameters<Store['batch']>[0]) => Promise<void>): Promise<void> {
  const size = Math.round(positive('BENCH_JUMP_ITEMS', 100_100));
  const only = process.env.BENCH_JUMP_ONLY;
  const store = new CallTracingStore(base);
  const services = createServices(ADMIN_SETTINGS, { store, logger: pino({ level: 'silent' }) });
  const cold = { ...services, rankCache: new RankCache(0) };
  for (const connection of connections()) {
    if (only && !connection.name.includes(only)) continue;
    await fillConnection({ base, write }, connection, size);
    const middle = (await connection.page(services, { first: 1, offset: Math.floor(size / 2) })).pageInfo.endCursor!;
    const cases: Array<[string, PageArgs]> = [
      ['first page', { first: 20 }],
      ['first 20, offset 100,000', { first: 20, offset: 100_000 }],
      ['last 20, offset 100,000', { last: 20, offset: 100_000 }],
      ['first 20 after the middle, offset 1,000', { first: 20, after: middle, offset: 1_000 }],
    ];
    for (const [label, args] of cases) {
      await time(20, () => connection.page(cold, args));
      const { medianMs } = await time(RUNS, () => connection.page(cold, args));
      store.start();
      const t = performance.now();
      await connection.page(cold, args);
      const total = performance.now() - t;
      store.tracing = false;
      console.log(`\n${connection.name} (${name}), ${label}, every visit a first one: median ${medianMs} ms; traced ${total.toFixed(3)} ms, ${store.calls.length} calls`);
      console.table(store.calls.map((c) => ({ ...c, startMs: +c.startMs.toFixed(3), ms: +c.ms.toFixed(3) })));
    }
  }
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
