/**
 * GraphQL overhead against peers: ours (the `npm run build` output that `npm start`
 * runs), mercurius + graphql-jit, and bare graphql-js with a parse/validation cache,
 * over the same schema, resolvers and store. Every server runs compiled (the peers are
 * bundled with esbuild into .bench-build/, which git ignores), pinned to one core with
 * the load generator on another; each round starts every server afresh, in an order
 * that rotates between rounds, warms it up, then loads each workload in turn.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus } from 'node:os';
import autocannon from 'autocannon';
import { build } from 'esbuild';
import { benchEnv, benchWorkloads, prepareOverheadFixture, type Workload } from './fixture.js';

/** How a run is shaped (environment: BENCH_ROUNDS, BENCH_DURATION, BENCH_WARMUP, BENCH_CONNECTIONS). */
export interface OverheadOptions {
  readonly rounds: number;
  readonly durationSeconds: number;
  readonly warmupSeconds: number;
  readonly connections: number;
}

/** A server the benchmarks start: its name, and how node runs it. */
export interface ServerSpec {
  readonly name: string;
  readonly key: 'ours' | 'mercurius' | 'graphqlJs' | 'floor';
  /** The node arguments, given the fixture file and the port. */
  readonly args: (file: string, port: number) => string[];
}

const BUILD_DIR = '.bench-build';

/** Ours: the `npm run build` output that `npm start` runs. */
export const OUR_SERVER: ServerSpec = { name: 'ours (Apollo Server + graphql-jit)', key: 'ours', args: () => ['dist/main.js'] };

/**
 * Apollo's floor (bench/floor.ts): our stack answering from responses recorded from
 * ours, given as a file (the fixture argument) of `RecordedResponse`s.
 */
export const FLOOR_SERVER: ServerSpec = { name: "Apollo's floor", key: 'floor', args: (file, port) => [`${BUILD_DIR}/apollo-floor.js`, file, String(port)] };

const SERVERS: readonly ServerSpec[] = [
  OUR_SERVER,
  { name: 'mercurius + graphql-jit', key: 'mercurius', args: (file, port) => [`${BUILD_DIR}/mercurius.js`, file, String(port)] },
  { name: 'graphql-js on node:http', key: 'graphqlJs', args: (file, port) => [`${BUILD_DIR}/graphql-js.js`, file, String(port)] },
];

/** One measured load of one workload on one server. */
export interface Measure {
  readonly requestsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  /** Server CPU (user + system) per completed request, from /proc/<pid>/stat. */
  readonly cpuMsPerRequest: number | null;
  /** Share of one core the load generator used meanwhile (near 1 means it limited the run). */
  readonly loadGeneratorCpu: number;
  /** Requests sent: those answered, and those still in flight when the load stopped. */
  readonly requestsSent: number;
}

/** Compile what the servers run: ours with the project's build, the peers with esbuild. */
export async function buildServers(progress: (m: string) => void): Promise<void> {
  progress("building: npm run build (ours), esbuild (peers, Apollo's floor)");
  const tsc = spawnSync('npm', ['run', '-s', 'build'], { stdio: 'inherit' });
  if (tsc.status !== 0) throw new Error('npm run build failed');
  await build({
    entryPoints: { mercurius: 'bench/servers/mercurius.ts', 'graphql-js': 'bench/servers/graphql-js.ts', 'apollo-floor': 'bench/servers/apollo-floor.ts' },
    outdir: BUILD_DIR,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
}

/** Pinning: the server on core 0, this process (and autocannon in it) on core 1. Idempotent. */
export function pinning(): { server: string[]; pinned: boolean } {
  const taskset = spawnSync('taskset', ['--version']);
  if (cpus().length < 2 || taskset.error || taskset.status !== 0) return { server: [], pinned: false };
  const self = spawnSync('taskset', ['-p', '-c', '1', String(process.pid)]);
  if (self.status !== 0) return { server: [], pinned: false };
  return { server: ['taskset', '-c', '0'], pinned: true };
}

/** A free loopback port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** The request `startServer` waits on: every server answers it once it is up. */
export const PROBE_WORKLOAD: Workload = {
  name: 'start-up probe',
  body: '{"query":"{__typename}"}',
  check: (response) => ((response as { data?: { __typename?: string } }).data?.__typename === 'Query' ? null : `expected Query, got ${JSON.stringify(response).slice(0, 200)}`),
};

/**
 * Start a compiled server over `file` (the fixture) with `env` (by default the bench
 * environment over that file), pinned by `prefix`; resolves once it answers.
 */
export async function startServer(
  spec: ServerSpec,
  file: string,
  prefix: string[],
  env: Record<string, string> = benchEnv(file),
): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const argv = [...prefix, process.execPath, ...spec.args(file, port)];
  const child = spawn(argv[0]!, argv.slice(1), {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, ...env, HOST: '127.0.0.1', PORT: String(port) },
  });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`${spec.name} exited with ${code}`))));
  exited.catch(() => undefined);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const up = await Promise.race([
      fetch(`http://127.0.0.1:${port}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: PROBE_WORKLOAD.body }).then(
        (r) => r.ok,
        () => false,
      ),
      exited,
    ]);
    if (up) return { child, port };
    if (Date.now() > deadline) throw new Error(`${spec.name} did not answer within 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** utime + stime of a process, in ms (null where /proc is absent). */
export function cpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat(5), counted from the state (field 3) here; clock ticks of 10 ms.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return null;
  }
}

function peakRssMb(pid: number): number | null {
  try {
    return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
  } catch {
    return null;
  }
}

/** Load `workload` on the server at `port` (process `pid`) for `seconds` with autocannon. */
export async function load(port: number, pid: number, workload: Workload, seconds: number, connections: number): Promise<Measure> {
  const cpuBefore = cpuMs(pid);
  const selfBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/graphql`,
    connections,
    duration: seconds,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...workload.headers },
    body: workload.body,
  });
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  const self = process.cpuUsage(selfBefore);
  const cpuAfter = cpuMs(pid);
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
    cpuMsPerRequest: cpuBefore === null || cpuAfter === null || result.requests.total === 0 ? null : (cpuAfter - cpuBefore) / result.requests.total,
    loadGeneratorCpu: (self.user + self.system) / 1000 / wallMs,
    requestsSent: result.requests.sent,
  };
}

/** Throws unless the server at `port` answers `workload` rightly; resolves to the answer. */
export async function check(port: number, workload: Workload, name: string): Promise<unknown> {
  const res = await fetch(`http://127.0.0.1:${port}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...workload.headers },
    body: workload.body,
  });
  const response: unknown = await res.json();
  const problem = workload.check(response);
  if (problem) throw new Error(`${name}, ${workload.name}: ${problem}`);
  return response;
}

/** Stop a server `startServer` started; resolves once it has exited. */
export async function stopServer(server: { child: ChildProcess }): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  const gone = new Promise((r) => server.child.once('exit', r));
  server.child.kill('SIGTERM');
  await gone;
}

/** The median of some numbers. */
export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Median and range of a series. */
export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

/** Median, least and most of a series. */
export function spread(xs: number[]): Spread {
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
}

/** Run the rounds; returns per-workload medians and spreads, and per-round raw figures. */
export async function runOverhead(
  fixtureFile: string,
  options: OverheadOptions,
  progress: (m: string) => void,
  row: (figure: string, value: string, target?: string, met?: boolean | null) => void,
) {
  await buildServers(progress);
  const meetingId = await prepareOverheadFixture(fixtureFile);
  const workloads = benchWorkloads(meetingId);
  const pin = pinning();
  progress(pin.pinned ? 'pinned: servers on core 0, load generator on core 1' : 'NOT pinned (fewer than 2 cores or no taskset)');
  // raw[workload][server] = one Measure per round
  const raw: Record<string, Record<string, Measure[]>> = {};
  const peakRss: Record<string, number[]> = {};
  for (const w of workloads) raw[w.name] = Object.fromEntries(SERVERS.map((s) => [s.key, []]));
  for (let round = 0; round < options.rounds; round++) {
    // Rotate the order so no server always runs first (or last).
    const order = SERVERS.map((_, i) => SERVERS[(i + round) % SERVERS.length]!);
    for (const spec of order) {
      progress(`round ${round + 1}/${options.rounds}: ${spec.name}`);
      const { child, port } = await startServer(spec, fixtureFile, pin.server);
      try {
        for (const w of workloads) {
          await check(port, w, spec.name);
          await load(port, child.pid!, w, options.warmupSeconds, options.connections);
          raw[w.name]![spec.key]!.push(await load(port, child.pid!, w, options.durationSeconds, options.connections));
        }
        const rss = peakRssMb(child.pid!);
        if (rss !== null) (peakRss[spec.key] ??= []).push(rss);
      } finally {
        await stopServer({ child });
      }
    }
  }

  const summary: Record<string, unknown> = {};
  for (const w of workloads) {
    const byServer = raw[w.name]!;
    const rps = (k: string) => byServer[k]!.map((m) => m.requestsPerSecond);
    // Ratios within a round (servers measured minutes apart under the same conditions).
    const ratio = (k: string) => byServer.ours!.map((m, i) => m.requestsPerSecond / byServer[k]![i]!.requestsPerSecond);
    const cpu = (k: string) => byServer[k]!.map((m) => m.cpuMsPerRequest ?? NaN);
    // The same comparison by server CPU per request (peer's over ours: above 1, ours costs less).
    const cpuRatio = (k: string) => byServer.ours!.map((m, i) => (byServer[k]![i]!.cpuMsPerRequest ?? NaN) / (m.cpuMsPerRequest ?? NaN));
    const vsMercurius = spread(ratio('mercurius'));
    const vsGraphqlJs = spread(ratio('graphqlJs'));
    const cpuVsMercurius = spread(cpuRatio('mercurius'));
    for (const s of SERVERS) {
      const r = spread(rps(s.key));
      const c = spread(cpu(s.key));
      const errors = byServer[s.key]!.reduce((n, m) => n + m.errors, 0);
      row(`${w.name}: ${s.name} req/s, median [min–max]`, `${r.median} [${r.min}–${r.max}]${errors ? `, ${errors} errors` : ''}`);
      row(`${w.name}: ${s.name} server CPU ms/request`, `${c.median.toFixed(3)} [${c.min.toFixed(3)}–${c.max.toFixed(3)}]`);
    }
    row(`${w.name}: ours / mercurius + graphql-jit`, `${vsMercurius.median.toFixed(3)}x [${vsMercurius.min.toFixed(3)}–${vsMercurius.max.toFixed(3)}]`, '>= 1.0x', vsMercurius.median >= 1);
    row(`${w.name}: mercurius CPU per request / ours`, `${cpuVsMercurius.median.toFixed(3)}x [${cpuVsMercurius.min.toFixed(3)}–${cpuVsMercurius.max.toFixed(3)}]`);
    row(`${w.name}: ours / bare graphql-js`, `${vsGraphqlJs.median.toFixed(3)}x [${vsGraphqlJs.min.toFixed(3)}–${vsGraphqlJs.max.toFixed(3)}]`, '>= 1.0x', vsGraphqlJs.median >= 1);
    const generator = Math.max(...Object.values(byServer).flat().map((m) => m.loadGeneratorCpu));
    summary[w.name] = {
      oursVsMercurius: vsMercurius,
      oursVsGraphqlJs: vsGraphqlJs,
      cpuPerRequestMercuriusOverOurs: cpuVsMercurius,
      requestsPerSecond: Object.fromEntries(SERVERS.map((s) => [s.key, spread(rps(s.key))])),
      cpuMsPerRequest: Object.fromEntries(SERVERS.map((s) => [s.key, spread(cpu(s.key))])),
      loadGeneratorCpuMax: generator,
      rounds: byServer,
    };
  }
  for (const s of SERVERS) {
    const r = spread(peakRss[s.key] ?? [NaN]);
    row(`peak RSS: ${s.name}, MB`, `${r.median.toFixed(0)} [${r.min.toFixed(0)}–${r.max.toFixed(0)}]`, s.key === 'ours' ? '< 150 MB' : '', s.key === 'ours' ? r.max < 150 : null);
  }
  return {
    ...options,
    pinned: pin.pinned,
    workloads: summary,
    peakRssMb: Object.fromEntries(SERVERS.map((s) => [s.key, spread(peakRss[s.key] ?? [NaN])])),
  };
}
