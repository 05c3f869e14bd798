/**
 * `npx tsx bench/profile.ts [workload] [seconds]`: a CPU profile of the compiled
 * server (`node --cpu-prof dist/main.js`, built first) under the benchmark load, and
 * the shares of its busy time during the load by area, inclusive (a sample counts once
 * for every area on its stack), and its busy time per request. The profile is kept in
 * .bench-build/profiles/ for a closer look.
 */
import { spawn, spawnSync } from 'node:child_process';
import { buildServers } from './overhead.js';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { benchEnv, benchWorkloads, prepareOverheadFixture } from './fixture.js';
import { parseCli } from '../src/scripts/cli.js';
import { busyTime, type Areas, type CpuProfile } from './profile-areas.js';

const { positionals } = parseCli(
  `usage: npx tsx bench/profile.ts [timeline|acceptances] [seconds] [ours|mercurius|graphql-js]

Builds, starts the compiled server (ours by default, or a peer) under --cpu-prof on core 0, loads it from core 1
with the benchmark workload, and prints its busy time per request during the load (start-up
left out) and the shares of that time by area.`,
  {},
  true,
);

/** Areas, first match wins for a frame; a sample counts once per area on its stack. */
const AREAS: Areas = [
  ['SQLite adapter (src/store/sqlite + better-sqlite3)', (f) => f.url.includes('/store/sqlite/') || f.url.includes('better-sqlite3')],
  ['cursor codec (src/paging/cursor)', (f) => f.url.includes('/paging/cursor.')],
  ['paging engine and sources (src/paging)', (f) => f.url.includes('/paging/')],
  ['global ids (src/graphql/ids + graphql-relay)', (f) => f.url.includes('/graphql/ids.') || f.url.includes('graphql-relay')],
  ['DataLoader', (f) => f.url.includes('/dataloader/')],
  ['Apollo Server', (f) => f.url.includes('/@apollo/')],
  ['graphql-jit (compiled execution)', (f) => f.url.includes('/graphql-jit/') || (f.url === '' && f.functionName.startsWith('query'))],
  ['graphql-js', (f) => f.url.includes('/node_modules/graphql/')],
  ['our HTTP handler (src/server)', (f) => f.url.endsWith('/dist/server.js')],
  ['node http / net', (f) => /^node:(_http|net|internal\/(http|stream|streams))/.test(f.url)],
  ['JSON stringify/parse', (f) => f.functionName === 'stringify' || f.functionName === 'parse'],
  ['crypto (HMAC)', (f) => f.url.startsWith('node:internal/crypto') || f.url === 'node:crypto'],
  ['garbage collector', (f) => f.functionName === '(garbage collector)'],
];

const workloadName = positionals[0] ?? 'timeline';
const seconds = Number(positionals[1] ?? 10);
const server = positionals[2] ?? 'ours';
const entry = (file: string, port: number) => (server === 'ours' ? ['dist/main.js'] : [`.bench-build/${server}.js`, file, String(port)]);
const dir = mkdtempSync(join(tmpdir(), 'profile-'));
const profiles = join('.bench-build', 'profiles', `${server}-${workloadName}-${Date.now()}`);
const file = join(dir, 'profile.db');
await buildServers(() => undefined);
const meetingId = await prepareOverheadFixture(file);
const workload = benchWorkloads(meetingId).find((w) => w.name.startsWith(workloadName));
if (!workload) throw new Error(`no workload ${workloadName}`);
spawnSync('taskset', ['-p', '-c', '1', String(process.pid)]);
const port = 40_000 + Math.floor(Math.random() * 20_000);
const child = spawn('taskset', ['-c', '0', process.execPath, `--cpu-prof`, `--cpu-prof-dir=${profiles}`, ...entry(file, port)], {
  stdio: ['ignore', 'ignore', 'inherit'],
  env: { ...process.env, ...benchEnv(file), HOST: '127.0.0.1', PORT: String(port) },
});
const url = `http://127.0.0.1:${port}/graphql`;
const exited = new Promise((r) => child.once('exit', r));
child.once('exit', (code) => {
  if (code !== 0) throw new Error(`the server exited with ${code}`);
});
for (;;) {
  const ok = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: workload.body }).then((r) => r.ok, () => false);
  if (ok) break;
  await new Promise((r) => setTimeout(r, 100));
}
// The profile's timestamps and hrtime share the monotonic clock (µs): only the load's samples count.
const loadStart = Number(process.hrtime.bigint() / 1000n);
const result = await autocannon({ url, connections: 32, duration: seconds, method: 'POST', headers: { 'content-type': 'application/json' }, body: workload.body });
const loadEnd = Number(process.hrtime.bigint() / 1000n);
child.kill('SIGTERM');
await exited;
rmSync(dir, { recursive: true, force: true });

const [name] = readdirSync(profiles);
const profile = JSON.parse(readFileSync(join(profiles, name!), 'utf8')) as CpuProfile;
// The profile's timestamps and hrtime share the monotonic clock (µs): start-up (module
// loading, compilation) and shutdown are not the load.
const { busy, byArea: totals, bySelf } = busyTime(profile, AREAS, (at) => at >= loadStart && at <= loadEnd);
const perRequest = (us: number) => `${(us / result.requests.total).toFixed(0)} µs/request`;
console.log(`${workload.name}: ${Math.round(result.requests.average)} req/s under the profiler; busy ${(busy / 1e6).toFixed(1)} s of the load; profile in ${profiles}`);
console.log(`busy ${perRequest(busy)}, of which garbage collector ${perRequest(totals.get('garbage collector') ?? 0)}`);
for (const [area] of AREAS) console.log(`${(((totals.get(area) ?? 0) / busy) * 100).toFixed(1).padStart(5)}%  ${area}`);
if (process.env.METRICS === 'true') {
  // METRICS=true (with METRICS_TOKEN: the bench runs in production mode): the self time of
  // the metrics code (the store observer, the families, the HTTP and GraphQL counting,
  // prom-client, Node's event-loop and GC observers it turns on), which the load's
  // samples spent there and nowhere else. The store decorator's own frames serve the
  // request's CountingStore and the observer alike: shown apart.
  const metricsCode = /\/dist\/(metrics|metric-families|store\/store-observer)\.js:|prom-client\/|node:internal\/(perf|histogram)/;
  let own = 0;
  let decorator = 0;
  for (const [fn, us] of bySelf) {
    if (metricsCode.test(fn)) own += us;
    else if (fn.includes('/dist/store/store-decorator.js:')) decorator += us;
  }
  const fine = (us: number) => `${(us / result.requests.total).toFixed(1)} µs/request`;
  console.log(`METRICS on: the metrics code's self time ${fine(own)}, ${((own / busy) * 100).toFixed(2)}% of busy time; the store decorator's frames ${fine(decorator)} (${((decorator / busy) * 100).toFixed(2)}%, shared with the request's counting store)`);
}
