/**
 * `npm run bench:cassandra`: the product on a real Cassandra (CASSANDRA_CONTACT_POINTS,
 * one node or a ring), in a keyspace of its own that it drops at the end. Skipped, with
 * the reason printed and exit 0, when no Cassandra answers there. Side by side in one
 * run, `BENCH_CONNECTIONS` (32) at a time:
 * - pages: the timeline page (username, user, a 21-row slice) and a 50-edge
 *   `suspendedUsers` page, in process (the features' own calls as a request makes
 *   them: request context, loaders, paging engine, cursors, adapter) and over HTTP (the
 *   compiled server, autocannon); against the ceiling, a plain cassandra-driver loop
 *   sending the statements the product sent for that page (recorded from it), with the
 *   same dependencies between them. Req/s, p50, p99, CPU per page (this process's in
 *   process, the server's over HTTP, Cassandra's where its processes are visible).
 *   Over HTTP also against Apollo's floor (bench/floor.ts): the same server stack
 *   answering from the responses ours gave at the start of the run, with no store work,
 *   loaded the same way in each round; ours / floor, and our extra server CPU per
 *   request over it (the store path as it runs in the server). Over HTTP, the server's
 *   socket writes a request, and the requests Cassandra itself counted from the server's
 *   connections a request (`system_views.clients`): the statements it sent, as Cassandra saw them.
 * - counter: seed 001 through `Meetings.accept`, first-write-wins against the
 *   lightweight transaction, each user accepting twice, counts checked, the LWT's
 *   failures counted by kind.
 * - writes: `createPost` with the live change log and without it (and in the shapes
 *   `BENCH_CHANGE_LOG_VARIANTS` names), over 1,000 authors in turn (the target's workload)
 *   and over one author (the issue's first method), each load in empty tables of its own
 *   that its end drops (so Cassandra's CPU per write can count the load's own flush).
 * Writes bench/results/cassandra-latest.json (ignored by git; the figures BENCHMARKS.md
 * quotes are in bench/results/recorded-cassandra.json).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type cassandra from 'cassandra-driver';
import { mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { cpus, loadavg, totalmem } from 'node:os';
import { runCompiled } from './compiled.js';
import { finishRun } from './results.js';
import pino from 'pino';
import { ALL_TABLES, createRequestContext, createServices, type Services } from '../src/composition-root.js';
import { loadConfig } from '../src/config.js';
import { authKey, signToken } from '../src/graphql/auth.js';
import { parseCli } from '../src/scripts/cli.js';
import { cassandraClientFrom, cassandraStoreFrom } from '../src/store/cassandra/cassandra-connect.js';
import { oneLine } from '../src/store/cassandra/cassandra-errors.js';
import { MonotonicClock } from '../src/store/clock.js';
import type { Store } from '../src/store/port.js';
import { BENCH_SECRETS, benchEnv, TIMELINE_WORKLOAD, type Workload } from './fixture.js';
import type { RecordedResponse } from './floor.js';
import { buildServers, check, FLOOR_SERVER, load, median, OUR_SERVER, PROBE_WORKLOAD, spread, startServer, stopServer, type Measure } from './overhead.js';
import { measureAcceptances, type AcceptanceRun } from './unique-counter.js';
import { BatchRecorder, CHANGE_LOG_VARIANTS, ChangeLogVariant, partitionKeyValue, WithoutChangeLog } from './without-change-log.js';
import {
  ADMIN,
  cassandraCpuMs,
  cassandraPids,
  closedLoop,
  cpuMsPerCall,
  pageCursors,
  preparePagesFixture,
  replay,
  StatementRecorder,
  suspendedPage,
  suspendedWorkload,
  timelinePage,
  type LoopFigures,
} from './cassandra-pages.js';
import { positive } from './settings.js';

/** The writes part's shape of the product with `LIVE_COUNTED_POINTERS=true` (BENCH_CHANGE_LOG_VARIANTS). */
const COUNTED_POINTERS = 'counted-pointers';

parseCli(
  `usage: npm run bench:cassandra

Benchmarks the product on the Cassandra at CASSANDRA_CONTACT_POINTS (default 127.0.0.1;
CASSANDRA_LOCAL_DC, CASSANDRA_REPLICATION and the other CASSANDRA_* settings as the
server reads them), in a new keyspace it drops at the end; skipped (exit 0) when none
answers. Writes bench/results/cassandra-latest.json. Environment: BENCH_ROUNDS (default
3), BENCH_DURATION (seconds per measured load, default 5), BENCH_WARMUP (default 2),
BENCH_CONNECTIONS (default 32), BENCH_ACCEPTANCES (per run, default 2000),
BENCH_CASSANDRA_PARTS (comma-separated: pages,http,counter,writes; default all; http
sets ours beside Apollo's floor, the same server stack answering recorded responses).
The writes part: BENCH_WRITES_ROUNDS (default 5), BENCH_WRITES_DURATION (seconds per
load, default 10), BENCH_WRITES_AUTHORS (the target workload's authors, default 1000),
BENCH_CHANGE_LOG_VARIANTS (comma-separated shapes of the change log to measure beside
it: ${[...Object.keys(CHANGE_LOG_VARIANTS), COUNTED_POINTERS].join(', ')}; default none;
${COUNTED_POINTERS}: the product with LIVE_COUNTED_POINTERS=true, the layout before the
count's mark stood in for a post's pointer).`,
  {},
);

// In process, the product's code runs as the server runs it: compiled.
await runCompiled(import.meta.url);

const ROUNDS = Math.round(positive('BENCH_ROUNDS', 3));
const DURATION = positive('BENCH_DURATION', 5);
const WARMUP = positive('BENCH_WARMUP', 2);
const CONNECTIONS = Math.round(positive('BENCH_CONNECTIONS', 32));
const ACCEPTANCES = Math.round(positive('BENCH_ACCEPTANCES', 2_000) / 2) * 2;
const PARTS = new Set((process.env.BENCH_CASSANDRA_PARTS ?? 'pages,http,counter,writes').split(','));
/** The writes part's rounds and seconds a load: longer than the pages', so that a round's spread is the change log's, not the machine's. */
const WRITE_ROUNDS = Math.round(positive('BENCH_WRITES_ROUNDS', 5));
const WRITE_DURATION = positive('BENCH_WRITES_DURATION', 10);
/** Authors the writes part's target workload takes in turn. */
const WRITE_AUTHORS = Math.round(positive('BENCH_WRITES_AUTHORS', 1_000));
/** Shapes of the change log measured beside it (bench/without-change-log.ts), and COUNTED_POINTERS. */
const VARIANTS = (process.env.BENCH_CHANGE_LOG_VARIANTS ?? '').split(',').filter(Boolean);
for (const v of VARIANTS) {
  if (!(v in CHANGE_LOG_VARIANTS) && v !== COUNTED_POINTERS) {
    console.error(`BENCH_CHANGE_LOG_VARIANTS must name shapes among ${[...Object.keys(CHANGE_LOG_VARIANTS), COUNTED_POINTERS].join(', ')}, got ${JSON.stringify(v)}`);
    process.exit(2);
  }
}
/**
 * The in-process ratio, ours / the driver alone, each page must reach ("Fast on
 * Cassandra, round two"): 0.6 on the timeline page, 0.7 on the 50-edge suspendedUsers page.
 */
const TARGET_IN_PROCESS: Record<string, number> = { timeline: 0.6, 'suspendedUsers (50 edges)': 0.7 };
/**
 * Over HTTP, ours / the limit: the limit is what a server would serve if its request
 * cost Apollo's floor plus the driver alone, 1 / (1 / floor + 1 / driver alone), both
 * in req/s for the same statements.
 */
const TARGET_OVER_LIMIT = 0.6;

const started = Date.now();
const load1 = () => +loadavg()[0]!.toFixed(2);
function progress(message: string): void {
  process.stderr.write(`[bench:cassandra ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s, load ${load1()}] ${message}\n`);
}
const rows: Array<{ figure: string; value: string; target: string; met: string }> = [];
function row(figure: string, value: string, target = '', met: boolean | null = null): void {
  rows.push({ figure, value, target, met: met === null ? '' : met ? 'yes' : 'NO' });
}

// ---- the cluster ----------------------------------------------------------------

const config = loadConfig({ ...process.env, ...BENCH_SECRETS, NODE_ENV: 'development', STORE: 'cassandra', SEED_DEMO: 'false' });
const contactPoints = config.cassandra.contactPoints.join(',');

/** The cluster's version and size, or why it cannot be reached. */
async function probe(): Promise<{ release: string; nodes: number } | string> {
  const client = cassandraClientFrom(config.cassandra);
  try {
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no answer within 10 s')), 10_000).unref());
    await Promise.race([client.connect(), timeout]);
    const local = await client.execute('SELECT release_version FROM system.local');
    const peers = await client.execute('SELECT peer FROM system.peers');
    return { release: String(local.rows[0]!.get('release_version')), nodes: peers.rows.length + 1 };
  } catch (err) {
    return oneLine(err);
  } finally {
    await client.shutdown().catch(() => undefined);
  }
}

const pids = cassandraPids();

async function measured(op: () => Promise<unknown>): Promise<LoopFigures> {
  await closedLoop(op, WARMUP, CONNECTIONS, pids);
  return closedLoop(op, DURATION, CONNECTIONS, pids);
}

/** Run `a` and `b` one after the other, `b` first in odd rounds (neither always meets a warmer cluster). */
async function inTurn<A, B>(round: number, a: () => Promise<A>, b: () => Promise<B>): Promise<[A, B]> {
  if (round % 2 === 0) {
    const first = await a();
    return [first, await b()];
  }
  const second = await b();
  return [await a(), second];
}

const fmt = (s: { median: number; min: number; max: number }, digits = 0) =>
  `${s.median.toFixed(digits)} [${s.min.toFixed(digits)}–${s.max.toFixed(digits)}]`;

/** A server `startServer` started. */
type Started = Awaited<ReturnType<typeof startServer>>;

/**
 * Apollo's floor, given the responses ours at `oursPort` answers `workloads` (and the
 * start-up probe) with; started with ours' environment, and checked to answer each
 * workload with the same data.
 */
async function startFloor(oursPort: number, workloads: readonly Workload[], env: Record<string, string>): Promise<Started> {
  const answered: Array<{ workload: Workload; data: unknown }> = [];
  for (const workload of [PROBE_WORKLOAD, ...workloads]) {
    const response = (await check(oursPort, workload, 'ours on Cassandra')) as { data: unknown };
    answered.push({ workload, data: response.data });
  }
  const recorded: RecordedResponse[] = answered.map(({ workload, data }) => {
    const { query, variables } = JSON.parse(workload.body) as { query: string; variables?: Record<string, unknown> };
    return { query, variables, data: data as Record<string, unknown> };
  });
  mkdirSync('.bench-build', { recursive: true });
  const file = '.bench-build/apollo-floor-responses.json';
  writeFileSync(file, JSON.stringify(recorded));
  const floor = await startServer(FLOOR_SERVER, file, [], env);
  for (const { workload, data } of answered) {
    const response = (await check(floor.port, workload, FLOOR_SERVER.name)) as { data: unknown };
    if (!isDeepStrictEqual(response.data, data)) throw new Error(`${FLOOR_SERVER.name}, ${workload.name}: its data differs from ours'`);
  }
  progress(`${FLOOR_SERVER.name}: serving ${recorded.length} responses recorded from ours`);
  return floor;
}

/** Bytes this process has written so far, sockets included (`wchar` of /proc/self/io; null where it cannot be read). */
function bytesWritten(): number | null {
  try {
    return Number(/^wchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))![1]);
  } catch {
    return null;
  }
}

/** Write system calls a process has made so far (`syscw` of /proc/PID/io; null where it cannot be read). */
function writeCalls(pid: number): number | null {
  try {
    return Number(/^syscw: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))![1]);
  } catch {
    return null;
  }
}

/** The local ports of process `pid`'s TCP connections to any of `remotePorts` (/proc; empty where it cannot be read). */
function connectionPorts(pid: number, remotePorts: ReadonlySet<number>): Set<number> {
  const ports = new Set<number>();
  try {
    const sockets = new Set<string>();
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`, { encoding: 'utf8' }))?.[1];
      if (inode) sockets.add(inode);
    }
    for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
      for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
        // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
        const f = line.trim().split(/\s+/);
        if (f.length > 9 && sockets.has(f[9]!) && remotePorts.has(parseInt(f[2]!.split(':')[1]!, 16))) ports.add(parseInt(f[1]!.split(':')[1]!, 16));
      }
    }
  } catch {
    // No /proc, or the process is gone: no ports.
  }
  return ports;
}

/**
 * The requests every Cassandra node has counted so far from process `pid`'s connections
 * (`request_count` of `system_views.clients`, Cassandra 4.0 and later, asked of each node
 * for its own clients): the statements the node received, re-prepares, retries and the
 * driver's own requests included, whatever the product believes it sent. Null where
 * they cannot be read (no /proc, no virtual table, or none of the process's ports).
 */
async function requestsCassandraCounted(driver: cassandra.Client, pid: number): Promise<number | null> {
  const hosts = driver.hosts.values();
  // A host's address ends in its native transport port.
  const ports = connectionPorts(pid, new Set(hosts.map((h) => Number(h.address.slice(h.address.lastIndexOf(':') + 1)))));
  if (ports.size === 0) return null;
  try {
    let requests = 0;
    for (const host of hosts) {
      const rs = await driver.execute('SELECT port, request_count FROM system_views.clients', [], { host });
      for (const r of rs.rows) if (ports.has(Number(r.get('port')))) requests += Number(r.get('request_count'));
    }
    return requests;
  } catch {
    return null;
  }
}

/** How long a server is given to finish the requests a load left in flight, before Cassandra's count is read. */
const SETTLE_MS = 300;

/**
 * Check, warm up and load `workload` on `server`; Cassandra's CPU per request where
 * visible, the server's socket writes per request (one is the response; the rest went
 * to Cassandra), and the requests Cassandra received from the server per HTTP request
 * sent (where `system_views.clients` can be read): read once the warm-up's requests have
 * settled, and again once the load's have, so that every request sent is counted whole,
 * the few left in flight when the load stopped included (a request whose client has
 * gone starts no further store call, so those count a little under a whole).
 */
async function loadHttp(
  server: Started,
  workload: Workload,
  name: string,
  driver: cassandra.Client,
): Promise<Measure & { cassandraCpuMsPerRequest: number | null; writesPerRequest: number | null; cassandraRequestsPerRequest: number | null }> {
  await check(server.port, workload, name);
  await load(server.port, server.child.pid!, workload, WARMUP, CONNECTIONS);
  const pid = server.child.pid!;
  const settled = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  await settled();
  const counted = await requestsCassandraCounted(driver, pid);
  const dbBefore = cassandraCpuMs(pids);
  const writesBefore = writeCalls(pid);
  const http = await load(server.port, pid, workload, DURATION, CONNECTIONS);
  const dbAfter = cassandraCpuMs(pids);
  const writesAfter = writeCalls(pid);
  await settled();
  const countedAfter = await requestsCassandraCounted(driver, pid);
  const total = http.requestsPerSecond * DURATION;
  return {
    ...http,
    cassandraCpuMsPerRequest: dbBefore === null || dbAfter === null ? null : +((dbAfter - dbBefore) / total).toFixed(3),
    writesPerRequest: writesBefore === null || writesAfter === null ? null : +((writesAfter - writesBefore) / total).toFixed(2),
    // The count's own query is the admin connection's, never the server's.
    cassandraRequestsPerRequest: counted === null || countedAfter === null ? null : +((countedAfter - counted) / http.requestsSent).toFixed(3),
  };
}

// ---- the run ---------------------------------------------------------------------------

async function main(): Promise<void> {
  const cluster = await probe();
  if (typeof cluster === 'string') {
    const where = process.env.CASSANDRA_CONTACT_POINTS ? contactPoints : `${contactPoints} (CASSANDRA_CONTACT_POINTS unset, the default)`;
    console.log(`bench:cassandra skipped: no Cassandra reachable at ${where}: ${cluster}`);
    return;
  }
  const keyspace = `bench_${randomBytes(6).toString('hex')}`;
  const settings = { ...config.cassandra, keyspace, autoSchema: true };
  const results: Record<string, unknown> = {
    machine: { cores: cpus().length, cpu: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, date: new Date().toISOString(), loadAverageAtStart: loadavg() },
    cassandra: { release: cluster.release, nodes: cluster.nodes, contactPoints, replication: config.cassandra.replication, consistency: config.cassandra.consistency, localProcesses: pids.length },
    settings: { rounds: ROUNDS, durationSeconds: DURATION, warmupSeconds: WARMUP, concurrency: CONNECTIONS, acceptancesPerRun: ACCEPTANCES },
  };
  progress(`Cassandra ${cluster.release}, ${cluster.nodes} node(s) at ${contactPoints}; keyspace ${keyspace} (${JSON.stringify(config.cassandra.replication)})`);
  const clock = new MonotonicClock();
  const logger = pino({ level: 'silent' });
  const store = cassandraStoreFrom(settings, { log: () => undefined, clock });
  const schemaStarted = Date.now();
  await store.ensureTables(ALL_TABLES);
  results.schemaSeconds = +((Date.now() - schemaStarted) / 1000).toFixed(1);
  progress(`schema: ${ALL_TABLES.length} tables in ${results.schemaSeconds} s`);
  const services = createServices(config, { store, logger, clock });
  const driver = cassandraClientFrom(settings);
  await driver.connect();
  try {
    if (PARTS.has('pages') || PARTS.has('http')) results.pages = await pagesPart(services, settings, store);
    if (PARTS.has('counter')) results.counter = await counterPart(store);
    if (PARTS.has('writes')) results.writes = await writesPart(store, clock);
  } finally {
    await driver.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`).catch((err: unknown) => progress(`could not drop ${keyspace}: ${oneLine(err)}`));
    await driver.shutdown();
    await store.close();
  }
  finishRun('cassandra-latest.json', results, started, rows);

  /** Pages in process, the ceiling, and over HTTP, round after round. */
  async function pagesPart(services: Services, settings: typeof config.cassandra, store: Store) {
    progress('fixture: "bench" with 100 posts, 60 suspended users');
    await preparePagesFixture(services);
    // What each page sends, recorded through a second store over the same keyspace.
    let recorder!: StatementRecorder;
    const recording = cassandraStoreFrom({ ...settings, autoSchema: false }, { log: () => undefined, wrapClient: (c) => (recorder = new StatementRecorder(c)) });
    await recording.ensureTables(ALL_TABLES);
    const recordingServices = createServices(config, { store: recording, logger: pino({ level: 'silent' }) });
    const pages = [
      { name: 'timeline', op: timelinePage, statements: await recorder.record(() => timelinePage(recordingServices)), cursors: await pageCursors(services, 'timeline') },
      {
        name: 'suspendedUsers (50 edges)',
        op: suspendedPage,
        statements: await recorder.record(() => suspendedPage(recordingServices)),
        cursors: await pageCursors(services, 'suspended'),
      },
    ];
    await recording.close();
    const driver = cassandraClientFrom(settings);
    await driver.connect();
    const token = await signToken(authKey(BENCH_SECRETS.AUTH_SECRET), 'root', { admin: true, expiresIn: '1d' });
    const workloads: Record<string, Workload> = { timeline: TIMELINE_WORKLOAD, 'suspendedUsers (50 edges)': suspendedWorkload(token) };
    let server: Started | null = null;
    let floor: Started | null = null;
    // Ours and the floor run with the same environment.
    const env = { ...benchEnv(''), STORE: 'cassandra', CASSANDRA_KEYSPACE: settings.keyspace, CASSANDRA_CONTACT_POINTS: contactPoints };
    if (PARTS.has('http')) {
      await buildServers(progress);
      server = await startServer(OUR_SERVER, '', [], env);
    }
    const raw: Record<string, Array<Record<string, any>>> = {};
    try {
      if (server) floor = await startFloor(server.port, Object.values(workloads), env);
      for (let round = 0; round < ROUNDS; round++) {
        for (const page of pages) {
          progress(`round ${round + 1}/${ROUNDS}: ${page.name}, ${page.statements.length} statements a page`);
          const [inProcess, driverAlone] = await inTurn(
            round,
            () => measured(() => page.op(services)),
            () => measured(() => replay(driver, page.statements)),
          );
          const entry: Record<string, any> = { loadAverage: load1(), inProcess, ceiling: driverAlone, oursOverCeiling: +(inProcess.perSecond / driverAlone.perSecond).toFixed(3) };
          if (server && floor) {
            const workload = workloads[page.name]!;
            const [http, floorHttp] = await inTurn(
              round,
              () => loadHttp(server!, workload, 'ours on Cassandra', driver),
              () => loadHttp(floor!, workload, "Apollo's floor", driver),
            );
            entry.http = http;
            entry.httpOverCeiling = +(http.requestsPerSecond / driverAlone.perSecond).toFixed(3);
            entry.floor = floorHttp;
            entry.httpOverFloor = +(http.requestsPerSecond / floorHttp.requestsPerSecond).toFixed(3);
            entry.limit = +(1 / (1 / floorHttp.requestsPerSecond + 1 / driverAlone.perSecond)).toFixed(1);
            entry.httpOverLimit = +(http.requestsPerSecond / entry.limit).toFixed(3);
            entry.extraCpuMsPerRequestOverFloor =
              http.cpuMsPerRequest === null || floorHttp.cpuMsPerRequest === null ? null : +(http.cpuMsPerRequest - floorHttp.cpuMsPerRequest).toFixed(3);
          }
          progress(`${page.name}: ${JSON.stringify(entry)}`);
          (raw[page.name] ??= []).push(entry);
        }
      }
    } finally {
      if (server) await stopServer(server);
      if (floor) await stopServer(floor);
      await driver.shutdown();
    }
    const summary: Record<string, unknown> = {};
    for (const page of pages) {
      const rounds = raw[page.name]!;
      const pick = (f: (r: Record<string, any>) => number) => spread(rounds.map(f));
      const ratio = pick((r) => r.oursOverCeiling);
      // The page's signed cursors are work the ceiling does not do and the product must:
      // with everything else free, ours / the ceiling could reach no more than this.
      const cursorMs = cpuMsPerCall(page.cursors, 2_000);
      const ceilingCpu = median(rounds.map((r) => r.ceiling.cpuMsPerOp));
      const bound = ceilingCpu / (ceilingCpu + cursorMs);
      row(`${page.name}: in process req/s, median [min–max]`, fmt(pick((r) => r.inProcess.perSecond)));
      row(`${page.name}: in process p50 / p99 ms`, `${+median(rounds.map((r) => r.inProcess.p50Ms)).toFixed(2)} / ${+median(rounds.map((r) => r.inProcess.p99Ms)).toFixed(2)}`);
      row(`${page.name}: in process CPU ms/page`, fmt(pick((r) => r.inProcess.cpuMsPerOp), 3));
      row(`${page.name}: driver alone (ceiling) req/s`, fmt(pick((r) => r.ceiling.perSecond)));
      row(`${page.name}: driver alone CPU ms/page`, fmt(pick((r) => r.ceiling.cpuMsPerOp), 3));
      const target = TARGET_IN_PROCESS[page.name];
      row(`${page.name}: ours / ceiling in process`, `${fmt(ratio, 3)}x`, target ? `>= ${target}x` : '', target ? ratio.median >= target : null);
      row(`${page.name}: CPU ms/page of its signed cursors alone`, cursorMs.toFixed(3));
      row(`${page.name}: by CPU, ours / ceiling at most (all but the cursors free)`, `${bound.toFixed(3)}x`);
      if (server) {
        row(`${page.name}: over HTTP req/s`, fmt(pick((r) => r.http.requestsPerSecond)));
        row(`${page.name}: over HTTP p50 / p99 ms`, `${median(rounds.map((r) => r.http.p50))} / ${median(rounds.map((r) => r.http.p99))}`);
        row(`${page.name}: over HTTP server CPU ms/request`, fmt(pick((r) => r.http.cpuMsPerRequest ?? NaN), 3));
        row(`${page.name}: over HTTP server socket writes/request (the response, and to Cassandra)`, fmt(pick((r) => r.http.writesPerRequest ?? NaN), 2));
        row(
          `${page.name}: over HTTP requests Cassandra received a request (the page's statements: ${page.statements.length})`,
          fmt(pick((r) => r.http.cassandraRequestsPerRequest ?? NaN), 2),
        );
        row(`${page.name}: over HTTP Cassandra CPU ms/request (in process; the driver alone)`, `${fmt(pick((r) => r.http.cassandraCpuMsPerRequest ?? NaN), 3)} (${fmt(pick((r) => r.inProcess.cassandraCpuMsPerOp ?? NaN), 3)}; ${fmt(pick((r) => r.ceiling.cassandraCpuMsPerOp ?? NaN), 3)})`);
        row(`${page.name}: ours over HTTP / ceiling`, `${fmt(pick((r) => r.httpOverCeiling), 3)}x`);
        row(`${page.name}: Apollo's floor req/s`, fmt(pick((r) => r.floor.requestsPerSecond)));
        row(`${page.name}: Apollo's floor p50 / p99 ms`, `${median(rounds.map((r) => r.floor.p50))} / ${median(rounds.map((r) => r.floor.p99))}`);
        row(`${page.name}: Apollo's floor server CPU ms/request`, fmt(pick((r) => r.floor.cpuMsPerRequest ?? NaN), 3));
        row(`${page.name}: ours over HTTP / Apollo's floor`, `${fmt(pick((r) => r.httpOverFloor), 3)}x`);
        row(`${page.name}: the limit, 1 / (1 / floor + 1 / driver alone), req/s`, fmt(pick((r) => r.limit)));
        const overLimit = pick((r) => r.httpOverLimit);
        const limitTarget = page.name === 'timeline' ? TARGET_OVER_LIMIT : null;
        row(`${page.name}: ours over HTTP / the limit`, `${fmt(overLimit, 3)}x`, limitTarget ? `>= ${limitTarget}x` : '', limitTarget ? overLimit.median >= limitTarget : null);
        row(`${page.name}: our server CPU ms/request over the floor (the store path)`, fmt(pick((r) => r.extraCpuMsPerRequestOverFloor ?? NaN), 3));
      }
      summary[page.name] = {
        statements: page.statements.map((s) => ({ query: s.query, after: s.after, idempotent: s.options.isIdempotent })),
        oursOverCeilingInProcess: ratio,
        cursorCpuMsPerPage: +cursorMs.toFixed(4),
        oursOverCeilingBoundByCursors: +bound.toFixed(3),
        ...(server ? { oursOverFloorHttp: pick((r) => r.httpOverFloor), extraCpuMsPerRequestOverFloor: pick((r) => r.extraCpuMsPerRequestOverFloor ?? NaN) } : {}),
        rounds,
      };
    }
    return summary;
  }

  /** Seed 001 through Meetings.accept: first-write-wins against the LWT, rounds alternating. */
  async function counterPart(store: Store) {
    const runs: AcceptanceRun[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['first-write-wins', 'lwt'] as const) : (['lwt', 'first-write-wins'] as const);
      for (const strategy of order) {
        const run = await measureAcceptances(store, strategy, { acceptances: ACCEPTANCES, concurrency: CONNECTIONS });
        progress(`seed 001, round ${round + 1}/${ROUNDS}, ${strategy}: ${JSON.stringify(run)}`);
        runs.push(run);
      }
    }
    const of = (strategy: string) => runs.filter((r) => r.strategy === strategy);
    const summary: Record<string, unknown> = { acceptancesPerRun: ACCEPTANCES, concurrency: CONNECTIONS, loadAverage: load1(), runs };
    for (const strategy of ['first-write-wins', 'lwt'] as const) {
      const rs = of(strategy);
      const failures = rs.reduce((n, r) => n + Object.values(r.failures).reduce((a, b) => a + b, 0), 0);
      const kinds = [...new Set(rs.flatMap((r) => Object.keys(r.failures)))];
      row(`seed 001, ${strategy}: acceptances/s`, fmt(spread(rs.map((r) => r.perSecond))));
      row(`seed 001, ${strategy}: p99 ms`, fmt(spread(rs.map((r) => r.p99Ms)), 1));
      row(`seed 001, ${strategy}: failed accepts, of ${rs.length * ACCEPTANCES}`, `${failures}${kinds.length ? ` (${kinds.join('; ')})` : ''}`);
      row(`seed 001, ${strategy}: runs with exact counts`, `${rs.filter((r) => r.exact).length} of ${rs.length}`, 'all', rs.every((r) => r.exact));
    }
    const ratio = spread(of('first-write-wins').map((r, i) => r.perSecond / of('lwt')[i]!.perSecond));
    row('seed 001: first-write-wins / lwt acceptances/s', `${fmt(ratio, 2)}x`);
    summary.firstWriteWinsOverLwt = ratio;
    return summary;
  }

  /**
   * createPost with the change log, without it, and in the shapes `BENCH_CHANGE_LOG_VARIANTS`
   * names, the order rotating by round; two workloads: `WRITE_AUTHORS` authors taken in
   * turn (the target's, as writes spread in use) and one author (the issue's original
   * method: every write in the same partitions). Each load writes into tables of its own,
   * created empty for it and dropped after it: no load meets the rows, flushes or
   * compactions of another, and its drop flushes what it wrote (Cassandra flushes a
   * dropped table's memtable), which the load's Cassandra CPU "with its flush" counts.
   */
  async function writesPart(store: Store, clock: MonotonicClock) {
    const silent = pino({ level: 'silent' });
    const viewer = { username: 'writer', isAdmin: false };
    // What createPost's batch writes: its partitions (a figure the load does not move) and its tables.
    const recordedBatch = async (over: (recorded: Store) => Store, settings = config) => {
      const recorder = new BatchRecorder(store);
      const recorded = createServices(settings, { store: over(recorder), logger: silent, clock });
      await createRequestContext(recorded, viewer).timeline.createPost(randomUUID(), 'partitions');
      return recorder.batches.flat();
    };
    const withRows = await recordedBatch((s) => s);
    const withoutRows = await recordedBatch((s) => new WithoutChangeLog(s));
    const batchPartitions = { withChangeLog: new Set(withRows.map(partitionKeyValue)).size, withoutChangeLog: new Set(withoutRows.map(partitionKeyValue)).size };
    // LIVE_COUNTED_POINTERS is the product's own setting: that shape is the product configured so, not a rewrite.
    const pointersToo = { ...config, live: { ...config.live, countedPointers: true } };
    // Its batch's tables too (the pointers'), when it runs.
    const extraRows = VARIANTS.includes(COUNTED_POINTERS) ? await recordedBatch((s) => s, pointersToo) : [];
    const tables = [...new Set([...withRows, ...extraRows].map((m) => m.table))];
    const shapes: Array<{ name: string; over: (s: Store) => Store; settings?: typeof config }> = [
      { name: 'with', over: (s) => s },
      { name: 'without', over: (s) => new WithoutChangeLog(s) },
      ...VARIANTS.map((v) =>
        v === COUNTED_POINTERS ? { name: v, over: (s: Store) => s, settings: pointersToo } : { name: v, over: (s: Store) => new ChangeLogVariant(s, CHANGE_LOG_VARIANTS[v]!) },
      ),
    ];
    const workloads = [
      { name: `${WRITE_AUTHORS} authors in turn`, authors: WRITE_AUTHORS, target: true, shapes },
      { name: "one author (the issue's first method)", authors: 1, target: false, shapes: shapes.slice(0, 2) },
    ];
    progress(`writes: ${tables.length} tables a load (${tables.map((t) => t.name).join(', ')}), ${WRITE_ROUNDS} rounds of ${WARMUP} + ${WRITE_DURATION} s a load`);

    let fresh = 0;
    /** Empty tables of createPost's, in a keyspace of their own, whose drop leaves no snapshot. */
    async function freshTables(): Promise<{ keyspace: string; store: Store }> {
      const ks = `${keyspace}_w${++fresh}`;
      const freshStore = cassandraStoreFrom({ ...settings, keyspace: ks, autoSchema: true }, { log: () => undefined, clock });
      await freshStore.ensureTables(tables);
      const names = await driver.execute('SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?', [ks], { prepare: true });
      for (const r of names.rows) await driver.execute(`ALTER TABLE ${ks}.${String(r.get('table_name'))} WITH allow_auto_snapshot = false`);
      return { keyspace: ks, store: freshStore };
    }
    /** Wait (5 s at most) until the local Cassandra processes use under a tenth of a core, twice running. */
    async function settle(): Promise<void> {
      let last = cassandraCpuMs(pids);
      if (last === null) return;
      for (let quiet = 0, until = Date.now() + 5_000; quiet < 2 && Date.now() < until; ) {
        await new Promise((r) => setTimeout(r, 250));
        const now = cassandraCpuMs(pids)!;
        quiet = now - last < 25 ? quiet + 1 : 0;
        last = now;
      }
    }
    /** Cassandra CPU ms from `before` through the drop of `ks` and the quiet after it. */
    async function dropped(ks: string, freshStore: Store, before: number | null): Promise<number | null> {
      await freshStore.close();
      await driver.execute(`DROP KEYSPACE ${ks}`);
      await settle();
      const after = cassandraCpuMs(pids);
      return before === null || after === null ? null : after - before;
    }
    /** What dropping and settling an empty copy costs Cassandra: its median over the rounds is taken off each load's "with its flush". */
    async function emptyCost(): Promise<number | null> {
      const t = await freshTables();
      await settle();
      return dropped(t.keyspace, t.store, cassandraCpuMs(pids));
    }
    /** One load of createPost on fresh tables through the shape's store (and settings), for `authors` authors in turn. */
    async function writeLoad(shape: (typeof shapes)[number], authors: number, seconds = WRITE_DURATION) {
      const t = await freshTables();
      const s = createServices(shape.settings ?? config, { store: shape.over(t.store), logger: silent, clock });
      const ids = Array.from({ length: authors }, () => randomUUID());
      let writes = 0;
      const op = () => createRequestContext(s, viewer).timeline.createPost(ids[writes++ % authors]!, 'throughput');
      await settle();
      const before = cassandraCpuMs(pids);
      await closedLoop(op, WARMUP, CONNECTIONS, pids);
      const [written, sent] = [writes, bytesWritten()];
      const figures = await closedLoop(op, seconds, CONNECTIONS, pids);
      const bytesPerWrite = sent === null ? null : Math.round((bytesWritten()! - sent) / (writes - written));
      const cassandraCpuMsWithDrop = await dropped(t.keyspace, t.store, before);
      return { ...figures, bytesSentPerWrite: bytesPerWrite, cassandraCpuMsWithDrop, writesWithWarmup: writes };
    }
    type WriteLoad = Awaited<ReturnType<typeof writeLoad>> & { cassandraCpuMsPerOpWithFlush?: number | null };

    // Unrecorded: the first loads on a fresh node meet its cold code paths (and ours).
    for (const shape of shapes.slice(0, 2)) await writeLoad(shape, WRITE_AUTHORS, WARMUP);
    const raw: Record<string, Array<Record<string, WriteLoad | number | null>>> = {};
    const empties: number[] = [];
    for (let round = 0; round < WRITE_ROUNDS; round++) {
      const empty = await emptyCost();
      if (empty !== null) empties.push(empty);
      for (const w of workloads) {
        const entry: Record<string, WriteLoad | number | null> = { emptyCassandraCpuMs: empty };
        // Each shape goes first in turn: none always meets a warmer (or busier) cluster.
        for (let i = 0; i < w.shapes.length; i++) {
          const shape = w.shapes[(i + round) % w.shapes.length]!;
          entry[shape.name] = await writeLoad(shape, w.authors);
        }
        entry.loadAverage = load1();
        progress(`writes, ${w.name}, round ${round + 1}/${WRITE_ROUNDS}: ${JSON.stringify(entry)}`);
        (raw[w.name] ??= []).push(entry);
      }
    }
    // A load's Cassandra CPU through its drop, less an empty copy's drop (the median over the rounds), a write.
    const empty = empties.length === 0 ? null : median(empties);
    for (const entries of Object.values(raw)) {
      for (const entry of entries) {
        for (const l of Object.values(entry)) {
          if (typeof l !== 'object' || l === null) continue;
          l.cassandraCpuMsPerOpWithFlush = l.cassandraCpuMsWithDrop === null || empty === null ? null : +((l.cassandraCpuMsWithDrop - empty) / l.writesWithWarmup).toFixed(3);
        }
      }
    }

    const summary: Record<string, unknown> = { batchPartitions, tables: tables.map((t) => t.name), emptyDropCassandraCpuMs: empty, rounds: raw };
    const percent = (s: { median: number; min: number; max: number }) => `${fmt({ median: s.median * 100, min: s.min * 100, max: s.max * 100 }, 1)} %`;
    for (const w of workloads) {
      const rs = raw[w.name]!.map((r) => r as Record<string, WriteLoad>);
      const of = (shape: string, f: (l: WriteLoad) => number | null | undefined) => spread(rs.map((r) => f(r[shape]!) ?? NaN));
      const added = (shape: string, f: (l: WriteLoad) => number | null | undefined) => spread(rs.map((r) => (f(r[shape]!) ?? NaN) / (f(r.without!) ?? NaN) - 1));
      const lost = (shape: string) => spread(rs.map((r) => 1 - r[shape]!.perSecond / r.without!.perSecond));
      const label = `writes (createPost), ${w.name}`;
      const withLost = lost('with');
      row(`${label}: with the change log / without it, writes/s`, `${fmt(of('with', (l) => l.perSecond))} / ${fmt(of('without', (l) => l.perSecond))}`);
      row(
        `${label}: throughput lost to the change log${w.target ? '' : ' (not the target\'s workload)'}`,
        percent(withLost),
        w.target ? '< 15 %' : '',
        w.target ? withLost.median < 0.15 : null,
      );
      row(`${label}: bench CPU per write added by the change log`, percent(added('with', (l) => l.cpuMsPerOp)));
      row(
        `${label}: Cassandra CPU ms per write during the load, with / without (added)`,
        `${fmt(of('with', (l) => l.cassandraCpuMsPerOp), 3)} / ${fmt(of('without', (l) => l.cassandraCpuMsPerOp), 3)} (${percent(added('with', (l) => l.cassandraCpuMsPerOp))})`,
      );
      row(
        `${label}: Cassandra CPU ms per write with its flush, with / without (added)`,
        `${fmt(of('with', (l) => l.cassandraCpuMsPerOpWithFlush), 3)} / ${fmt(of('without', (l) => l.cassandraCpuMsPerOpWithFlush), 3)} (${percent(added('with', (l) => l.cassandraCpuMsPerOpWithFlush))})`,
      );
      row(`${label}: bytes sent per write, with / without`, `${fmt(of('with', (l) => l.bytesSentPerWrite))} / ${fmt(of('without', (l) => l.bytesSentPerWrite))}`);
      for (const v of VARIANTS) {
        if (!w.shapes.some((s) => s.name === v)) continue;
        row(
          `${label}: the change log as ${v}: throughput lost; Cassandra CPU with its flush added; bytes a write`,
          `${percent(lost(v))}; ${percent(added(v, (l) => l.cassandraCpuMsPerOpWithFlush))}; ${fmt(of(v, (l) => l.bytesSentPerWrite))}`,
        );
      }
      summary[w.name] = { target: w.target, throughputLost: withLost, cpuPerWriteAdded: added('with', (l) => l.cpuMsPerOp), cassandraCpuWithFlushAdded: added('with', (l) => l.cassandraCpuMsPerOpWithFlush) };
    }
    row("writes: partitions in createPost's logged batch, with / without the change log", `${batchPartitions.withChangeLog} / ${batchPartitions.withoutChangeLog}`);
    return summary;
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
