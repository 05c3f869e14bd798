/**
 * What the trailing passes cost (#35; BENCH_SECTIONS=trailing, run only when named): the
 * store reads a minute of every trailing pass (the count verifier's, the name sweeper's
 * and the list applier's) at the default LATE_WRITE_PASSES (the last hour every 60 s,
 * the last 3 h every 15 min), on an idle server and on a busy one: a steady stream of
 * createPost, addListItem and updateUser (a rename), in turn, BENCH_TRAILING_RATE a
 * second (default 2), with every background job's own pass every 5 s.
 *
 * Time is compressed: the server's clock is a controllable one, moved a second per
 * step, so 3 h 30 min of server time (the longest horizon filled with writes, then 30
 * minutes measured) runs in the time its writes and passes take; the intervals and
 * horizons are the defaults, in server time. The reads are real store round trips
 * (`relay_late_pass_reads_total` counts the same), so the figures are per minute of
 * server time; the wall time and the compression factor are reported beside them.
 * On the embedded store (in memory), and on Cassandra too when CASSANDRA_CONTACT_POINTS
 * is set (a keyspace of its own, dropped at the end).
 */
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import pino from 'pino';
import { ALL_TABLES, createListApplier, createRequestContext, createServices } from '../src/composition-root.js';
import { DEFAULT_LATE_PASSES, type ClusterSettings } from '../src/config.js';
import type { LatePassReport } from '../src/background/windowed-job.js';
import { MonotonicClock } from '../src/store/clock.js';
import type { Store } from '../src/store/port.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { onCassandraKeyspace } from './cassandra-keyspace.js';

const CLUSTER: ClusterSettings = { clockSkewMs: 1_000, writeTimeoutMs: 2_000, latePasses: DEFAULT_LATE_PASSES };
const LONGEST_MS = Math.max(...DEFAULT_LATE_PASSES.map((p) => p.horizonMs));
/** Server minutes measured once the longest horizon is full. */
const MEASURED_MINUTES = 30;
const RATE = Number(process.env.BENCH_TRAILING_RATE ?? 2);
const AUTHORS = 8;

/** What one run measured: reads a minute by component and horizon, and the wall time. */
export interface TrailingRun {
  readonly busy: boolean;
  readonly writesPerSecond: number;
  /** Store reads per server minute, all trailing passes together. */
  readonly readsPerMinute: number;
  /** The same by `component@horizon-seconds`. */
  readonly byPass: Record<string, number>;
  /** Late writes found (none land late here: what the passes cost when there is nothing to find). */
  readonly late: number;
  readonly wallSeconds: number;
  /** Server seconds per wall second. */
  readonly compression: number;
}

/** Run 3 h 30 min of server time over `store` (its tables made), idle or busy (see the file comment). */
export async function measureTrailing(store: Store, busy: boolean, progress: (m: string) => void): Promise<TrailingRun> {
  let nowMs = Date.now();
  const clock = new MonotonicClock({ now: () => nowMs });
  const services = createServices(
    { cursorSecret: 'bench-cursor-secret-0123456789', suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins', cluster: CLUSTER },
    { store, logger: pino({ level: 'silent' }), clock },
  );
  const applier = createListApplier(services);
  const admin = () => createRequestContext(services, { username: 'bench', isAdmin: true }, { cache: false });
  const authors: string[] = [];
  const lists: string[] = [];
  for (let i = 0; i < AUTHORS; i++) {
    const user = await admin().users.create({ username: `trail_${i}`, displayName: `Trail ${i}`, lastName: 'Start' });
    authors.push(user.id);
    lists.push((await admin().lists.create(`list ${i}`, user.id)).listId);
  }
  const jobs: Array<[string, (horizonMs: number) => Promise<LatePassReport>]> = [
    ['count_verifier', (h) => services.countVerifier.runLate(h)],
    ['name_sweeper', (h) => services.nameSweeper.runLate(h)],
    ['list_applier', (h) => applier.runLate(h)],
  ];
  const byPass: Record<string, number> = {};
  let late = 0;
  let writes = 0;
  const totalSeconds = (LONGEST_MS + MEASURED_MINUTES * 60_000) / 1000;
  const measureFrom = LONGEST_MS / 1000;
  const started = performance.now();
  for (let s = 1; s <= totalSeconds; s++) {
    nowMs += 1000;
    // A steady stream: RATE writes a second, each kind in turn.
    for (let k = 0; busy && k < RATE; k++, writes++) {
      const who = writes % AUTHORS;
      if (writes % 3 === 0) await admin().timeline.createPost(authors[who]!, `post ${writes}`);
      else if (writes % 3 === 1) await admin().lists.add(lists[who]!, `item ${writes}`);
      else await admin().users.update(authors[who]!, { lastName: `Name${writes}` });
    }
    if (s % 5 === 0) {
      await services.countVerifier.runOnce();
      await services.nameSweeper.runOnce();
      await applier.runOnce();
    }
    for (const pass of DEFAULT_LATE_PASSES) {
      if (s % (pass.intervalMs / 1000) !== 0) continue;
      for (const [component, run] of jobs) {
        const report = await run(pass.horizonMs);
        if (s <= measureFrom) continue;
        const id = `${component}@${pass.horizonMs / 1000}`;
        byPass[id] = (byPass[id] ?? 0) + report.reads;
        late += report.late;
      }
    }
    if (s % 1800 === 0) progress(`trailing (${busy ? 'busy' : 'idle'}): ${s / 60} of ${totalSeconds / 60} server minutes, ${writes} writes`);
  }
  applier.stop();
  const wallSeconds = (performance.now() - started) / 1000;
  for (const id of Object.keys(byPass)) byPass[id] = +(byPass[id]! / MEASURED_MINUTES).toFixed(1);
  const readsPerMinute = +Object.values(byPass).reduce((a, b) => a + b, 0).toFixed(1);
  return { busy, writesPerSecond: busy ? RATE : 0, readsPerMinute, byPass, late, wallSeconds: +wallSeconds.toFixed(1), compression: +(totalSeconds / wallSeconds).toFixed(1) };
}

/** The rows of one store's runs. */
function report(row: (figure: string, value: string) => void, store: string, runs: readonly TrailingRun[]): void {
  for (const run of runs) {
    const label = run.busy ? `busy (${run.writesPerSecond} writes/s)` : 'idle';
    row(`trailing passes on ${store}, ${label}: store reads per minute (all passes)`, String(run.readsPerMinute));
    row(`trailing passes on ${store}, ${label}: by pass (reads/min)`, Object.entries(run.byPass).map(([id, n]) => `${id} ${n}`).join(', '));
  }
}

/** The `trailing` section of `npm run bench`: on the embedded store (in memory), and on Cassandra when one is named. */
export async function runTrailing(progress: (m: string) => void, row: (figure: string, value: string, target?: string, met?: boolean | null) => void) {
  progress(`trailing: ${(LONGEST_MS + MEASURED_MINUTES * 60_000) / 60_000} server minutes idle, then busy at ${RATE} writes/s, on a compressed clock`);
  const sqlite: TrailingRun[] = [];
  for (const busy of [false, true]) {
    const store = new SqliteStore({ database: new Database(':memory:') });
    await store.ensureTables(ALL_TABLES);
    sqlite.push(await measureTrailing(store, busy, progress));
    await store.close();
  }
  report(row, 'SQLite', sqlite);
  if (!process.env.CASSANDRA_CONTACT_POINTS) return { sqlite, cassandra: 'not run: CASSANDRA_CONTACT_POINTS is unset' };
  const cassandra: TrailingRun[] = [];
  for (const busy of [false, true]) {
    const run = await onCassandraKeyspace('bench_trailing', progress, (store) => measureTrailing(store, busy, progress));
    if (run) cassandra.push(run);
  }
  report(row, 'Cassandra', cassandra);
  return { sqlite, cassandra };
}
