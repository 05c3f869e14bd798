/**
 * What ordering writes across servers costs (issue 34; docs/how-it-works.md, "Ordering
 * writes across servers"): `updateUser`, list renames and list moves per second and
 * their p50/p99, through the product's own features, 32 at a time, on the embedded
 * store (`npm run bench` with BENCH_SECTIONS=order), and on Cassandra in a keyspace of
 * its own when CASSANDRA_CONTACT_POINTS names one. An update now reads its row with
 * the cells' write times instead of through the loader (the same round trip); a list
 * change reads the list's newest transaction and mark before its append. The applier
 * runs as on a server (woken by each change), so pending transactions stay few.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import pino from 'pino';
import { ALL_TABLES, createListApplier, createRequestContext, createServices } from '../src/composition-root.js';
import type { ListApplier } from '../src/features/lists/applier.js';
import { aUser } from '../src/features/users/user-mother.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { Store } from '../src/store/port.js';
import { CountingStore } from '../src/store/store-decorator.js';
import { onCassandraKeyspace } from './cassandra-keyspace.js';
import { positive } from './settings.js';
import { quantile } from './unique-counter.js';

const CONCURRENCY = 32;
const USERS = 1_000;
const UPDATES = 20_000;
const LISTS = 20;
const ITEMS = 20;
/** List renames, and as many moves, per run (BENCH_ORDER_LIST_CHANGES). */
const LIST_CHANGES = Math.round(positive('BENCH_ORDER_LIST_CHANGES', 1_000));

/**
 * Throughput and latency of one kind of write, and what it cost: store round trips and
 * CPU per operation (the applier's included), which a busy shared machine disturbs far
 * less than the rate.
 */
export interface WriteRun {
  readonly operations: number;
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly roundTripsPerOp: number;
  readonly cpuMsPerOp: number;
}

/** Run `total` operations, `CONCURRENCY` at a time, each awaited: rate, latencies, round trips and CPU. */
async function measure(store: CountingStore, total: number, op: (i: number) => Promise<unknown>): Promise<WriteRun> {
  const latencies: number[] = [];
  let next = 0;
  const trips = store.roundTrips;
  const cpu = process.cpuUsage();
  const t = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < total; i = next++) {
        const started = performance.now();
        await op(i);
        latencies.push(performance.now() - started);
      }
    }),
  );
  const seconds = (performance.now() - t) / 1000;
  const used = process.cpuUsage(cpu);
  latencies.sort((a, b) => a - b);
  return {
    operations: total,
    perSecond: Math.round(total / seconds),
    p50Ms: +quantile(latencies, 0.5).toFixed(2),
    p99Ms: +quantile(latencies, 0.99).toFixed(2),
    roundTripsPerOp: +((store.roundTrips - trips) / total).toFixed(2),
    cpuMsPerOp: +((used.user + used.system) / 1000 / total).toFixed(3),
  };
}

/** The three measurements on `base`, a fresh store holding every table. */
async function measureWrites(base: Store, progress: (m: string) => void) {
  const store = new CountingStore(base);
  const settings = { cursorSecret: 'bench-cursor-secret-0123456789', suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins' } as const;
  let applier: ListApplier | undefined;
  const services = createServices(settings, { store, logger: pino({ level: 'silent' }), onListAppend: (listId) => applier?.wake(listId) });
  applier = createListApplier(services);
  // Each operation is its own request, as over HTTP: loaders start empty.
  const ctx = () => createRequestContext(services, { username: 'bench', isAdmin: true });
  const users: string[] = [];
  for (let i = 0; i < USERS; i++) users.push((await ctx().users.create({ ...aUser(), lastName: 'Start', location: 'Oslo' })).id);
  progress(`write order: ${USERS} users made; ${UPDATES} updateUser`);
  const updates = await measure(store, UPDATES, (i) => ctx().users.update(users[i % USERS]!, { displayName: `Name ${i}`, ...(i % 4 === 0 && { lastName: `Last ${i % 50}` }) }));
  const lists: Array<{ listId: string; items: string[] }> = [];
  for (let l = 0; l < LISTS; l++) {
    const list = await ctx().lists.create(`bench ${l}`, randomUUID());
    const items: string[] = [];
    for (let i = 0; i < ITEMS; i++) items.push((await ctx().lists.add(list.listId, `item ${i}`)).itemId);
    lists.push({ listId: list.listId, items });
  }
  progress(`write order: ${LISTS} lists of ${ITEMS} items made; ${LIST_CHANGES} renames, then ${LIST_CHANGES} moves`);
  const pick = (i: number) => lists[i % LISTS]!;
  const renames = await measure(store, LIST_CHANGES, (i) => {
    const { listId, items } = pick(i);
    return ctx().lists.rename(listId, items[(i >> 5) % ITEMS]!, `label ${i}`);
  });
  const moves = await measure(store, LIST_CHANGES, (i) => {
    const { listId, items } = pick(i);
    const item = items[(i >> 5) % ITEMS]!;
    const anchor = items[((i >> 5) + 1 + (i % (ITEMS - 1))) % ITEMS]!;
    return ctx().lists.move(listId, item, i % 2 === 0 ? { afterItemId: anchor } : { beforeItemId: anchor });
  });
  applier.stop();
  return { updates, renames, moves };
}

/** The section of `npm run bench`: updateUser, list renames and moves, per second and p99, per store. */
export async function runWriteOrder(
  progress: (m: string) => void,
  row: (figure: string, value: string, target?: string, met?: boolean | null) => void,
) {
  const report = (name: string, run: Awaited<ReturnType<typeof measureWrites>>) => {
    for (const [op, r] of [['updateUser', run.updates], ['list renames', run.renames], ['list moves', run.moves]] as const) {
      row(`write order on ${name}: ${op}/s (p50, p99 ms; round trips, CPU ms per op)`, `${r.perSecond} (${r.p50Ms}, ${r.p99Ms}; ${r.roundTripsPerOp}, ${r.cpuMsPerOp})`);
    }
  };
  const sqlite = new SqliteStore({ database: new Database(':memory:') });
  await sqlite.ensureTables(ALL_TABLES);
  const run = await measureWrites(sqlite, progress).finally(() => sqlite.close());
  report('SQLite', run);
  const cassandra = await onCassandraKeyspace('bench_order', progress, (store) => measureWrites(store, progress));
  if (cassandra) report('Cassandra', cassandra);
  return { store: 'SQLite (embedded, in memory)', concurrency: CONCURRENCY, ...run, ...(cassandra && { cassandra }) };
}
