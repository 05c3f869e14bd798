/**
 * `npx tsx bench/profile-cassandra.ts [timeline|suspended] [seconds]`: a CPU profile of
 * the in-process part of `npm run bench:cassandra` (the features' own calls for one
 * page, 32 at a time, against the Cassandra at CASSANDRA_CONTACT_POINTS), compiled: src/
 * and bench/ are transpiled file by file into .bench-build/tree/ (so each frame keeps its
 * file) and run with node, the profiler on only while the pages are measured. Prints
 * the pages per second under the profiler, busy time per page, its shares by area
 * (inclusive) and the functions with the most self time. The profile is kept in
 * .bench-build/profiles/. `counts` prints instead what a page makes, ours and the
 * driver alone's: promises, ticks, socket writes, garbage collections.
 */
import { createHook } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Socket } from 'node:net';
import { PerformanceObserver } from 'node:perf_hooks';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { ALL_TABLES, createServices } from '../src/composition-root.js';
import { loadConfig } from '../src/config.js';
import { parseCli } from '../src/scripts/cli.js';
import { cassandraClientFrom, cassandraStoreFrom } from '../src/store/cassandra/cassandra-connect.js';
import { MonotonicClock } from '../src/store/clock.js';
import { runCompiled } from './compiled.js';
import { closedLoop, preparePagesFixture, replay, StatementRecorder, suspendedPage, timelinePage } from './cassandra-pages.js';
import { BENCH_SECRETS } from './fixture.js';
import { busyTime, type Areas, type CpuProfile } from './profile-areas.js';

const { positionals } = parseCli(
  `usage: npx tsx bench/profile-cassandra.ts [timeline|suspended] [seconds] [ours|ceiling|counts]

Profiles the in-process timeline (or suspendedUsers) page against the Cassandra at
CASSANDRA_CONTACT_POINTS, compiled, 32 pages at a time, for 10 seconds by default, in a
keyspace of its own that it drops afterwards; \`ceiling\` profiles the driver alone
replaying the page's statements instead (what bench:cassandra compares with); \`counts\`
prints, for ours and the driver alone, the promises, ticks, socket writes and garbage
collections a page makes (counts hold on a busy machine, where times do not).`,
  {},
  true,
);

await runCompiled(import.meta.url);

/** Areas, first match wins for a frame; a sample counts once per area on its stack. */
const AREAS: Areas = [
  ['cassandra-driver', (f) => f.url.includes('/cassandra-driver/')],
  ['Cassandra adapter (src/store/cassandra)', (f) => f.url.includes('/store/cassandra/')],
  ['store validation and values (src/store)', (f) => /\/src\/store\/(validate|values|table|timeuuid)\./.test(f.url)],
  ['store decorators (counting, deadline)', (f) => /\/src\/store\/(store-decorator|deadline|statements)\./.test(f.url)],
  ['cursor codec (src/paging/cursor)', (f) => f.url.includes('/paging/cursor.')],
  ['paging engine and sources (src/paging)', (f) => f.url.includes('/src/paging/')],
  ['DataLoader', (f) => f.url.includes('/dataloader/')],
  ['request context (composition root)', (f) => f.url.includes('/src/composition-root.')],
  ['features (src/features)', (f) => f.url.includes('/src/features/')],
  ['crypto (HMAC)', (f) => f.url.startsWith('node:internal/crypto') || f.url === 'node:crypto'],
  ['node net / streams', (f) => /^node:(net|internal\/(stream|streams|net))/.test(f.url)],
  ['garbage collector', (f) => f.functionName === '(garbage collector)'],
];

const which = positionals[0] === 'suspended' ? 'suspended' : 'timeline';
const seconds = Number(positionals[1] ?? 10);
const config = loadConfig({ ...process.env, ...BENCH_SECRETS, NODE_ENV: 'development', STORE: 'cassandra', SEED_DEMO: 'false' });
const keyspace = `profile_${randomBytes(6).toString('hex')}`;
const settings = { ...config.cassandra, keyspace, autoSchema: true };
const clock = new MonotonicClock();
const store = cassandraStoreFrom(settings, { log: () => undefined, clock });
await store.ensureTables(ALL_TABLES);
const services = createServices(config, { store, logger: pino({ level: 'silent' }), clock });
await preparePagesFixture(services);
const ours = which === 'timeline' ? () => timelinePage(services) : () => suspendedPage(services);
let page: () => Promise<unknown> = ours;
let driver: ReturnType<typeof cassandraClientFrom> | undefined;
if (positionals[2] === 'ceiling' || positionals[2] === 'counts') {
  let recorder!: StatementRecorder;
  const recording = cassandraStoreFrom({ ...settings, autoSchema: false }, { log: () => undefined, wrapClient: (c) => (recorder = new StatementRecorder(c)) });
  await recording.ensureTables(ALL_TABLES);
  const recordingServices = createServices(config, { store: recording, logger: pino({ level: 'silent' }), clock });
  const statements = await recorder.record(() => (which === 'timeline' ? timelinePage(recordingServices) : suspendedPage(recordingServices)));
  await recording.close();
  const client = cassandraClientFrom(settings);
  driver = client;
  await client.connect();
  page = () => replay(client, statements);
}
if (positionals[2] === 'counts') {
  // Counts, not times: they hold on a busy machine, where rates and CPU do not.
  for (const [name, op] of [['ours', ours], ['the driver alone', page]] as const) {
    await closedLoop(op, 2, 32, []);
    console.log(`${which}, ${name}: ${JSON.stringify(await countsPerPage(op, seconds))}`);
  }
  await dropKeyspace();
  process.exit(0);
}
await closedLoop(page, 3, 32, []);
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 100 });
await session.post('Profiler.start');
const figures = await closedLoop(page, seconds, 32, []);
const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
session.disconnect();
await dropKeyspace();

/** Drop the keyspace, and close the store and the ceiling's own client (or their open connections keep the process alive). */
async function dropKeyspace(): Promise<void> {
  const dropper = cassandraClientFrom(settings);
  await dropper.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
  await dropper.shutdown();
  await store.close();
  await driver?.shutdown();
}

/**
 * Per page of `op`, 32 at a time for `seconds`: the promises and ticks (process.nextTick)
 * made, the socket writes, and the garbage collections and their time (each counted in
 * its own loop, the async hook's cost kept out of the others).
 */
async function countsPerPage(op: () => Promise<unknown>, seconds: number) {
  const made = new Map<string, number>();
  const hook = createHook({ init: (_id, type) => void made.set(type, (made.get(type) ?? 0) + 1) });
  hook.enable();
  const hooked = await closedLoop(op, seconds, 32, []);
  hook.disable();
  let writes = 0;
  const write = Socket.prototype.write;
  Socket.prototype.write = function (this: Socket, ...args: Parameters<Socket['write']>) {
    writes++;
    return write.apply(this, args);
  } as Socket['write'];
  let collections = 0;
  let gcMs = 0;
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      collections++;
      gcMs += entry.duration;
    }
  });
  gc.observe({ entryTypes: ['gc'] });
  const plain = await closedLoop(op, seconds, 32, []);
  gc.disconnect();
  Socket.prototype.write = write;
  const hookedPages = hooked.perSecond * seconds;
  const pages = plain.perSecond * seconds;
  return {
    promises: +((made.get('PROMISE') ?? 0) / hookedPages).toFixed(1),
    ticks: +((made.get('TickObject') ?? 0) / hookedPages).toFixed(1),
    socketWrites: +(writes / pages).toFixed(2),
    collectionsPer1000Pages: +((collections / pages) * 1000).toFixed(1),
    gcMsPerPage: +(gcMs / pages).toFixed(4),
    cpuMsPerPage: plain.cpuMsPerOp,
  };
}

const dir = join(fileURLToPath(new URL('../../profiles/', import.meta.url)));
mkdirSync(dir, { recursive: true });
const file = join(dir, `cassandra-${which}-${Date.now()}.cpuprofile`);
writeFileSync(file, JSON.stringify(profile));

const { busy, byArea: totals, bySelf: self } = busyTime(profile, AREAS);
const pages = figures.perSecond * seconds;
const perPage = (us: number) => `${(us / pages).toFixed(0)} µs/page`;
console.log(`${which}: ${figures.perSecond} pages/s under the profiler (p50 ${figures.p50Ms} ms, p99 ${figures.p99Ms} ms, ${figures.errors} errors); profile in ${file}`);
console.log(`busy ${perPage(busy)} (CPU ${figures.cpuMsPerOp} ms/page)`);
for (const [area] of AREAS) console.log(`${(((totals.get(area) ?? 0) / busy) * 100).toFixed(1).padStart(5)}%  ${area}`);
console.log('\nmost self time:');
for (const [name, us] of [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
  console.log(`${((us / busy) * 100).toFixed(1).padStart(5)}%  ${perPage(us).padStart(14)}  ${name}`);
}
