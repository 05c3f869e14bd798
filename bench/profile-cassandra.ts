/**
 * `npx tsx bench/profile-cassandra.ts [timeline|suspended] [seconds]`: a CPU profile of
 * the in-process part of `npm run bench:cassandra` (the features' own calls for one
 * page, 32 at a time, against the Cassandra at CASSANDRA_CONTACT_POINTS), compiled: src/
 * and bench/ are transpiled file by file into .bench-build/tree/ (so each frame keeps its
 * file) and run with node, the profiler on only while the pages are measured. Prints
 * the pages per second under the profiler, busy time per page, its shares by area
 * (inclusive) and the functions with the most self time. The profile is kept in
 * .bench-build/profiles/. `counts` prints instead what a page makes, ours and the
 * driver alone's: promises, ticks, socket writes, garbage collections, and Cassandra's
 * side (the CPU of every local Cassandra process a page and a second, and the requests
 * its native transport completed a page: whatever else uses the node counts too, so
 * read them on a quiet node); `allocations`,
 * ours and the driver alone's bytes allocated a page, by area and by function (V8's
 * sampling heap profiler, collected objects included: what the scavenges work on);
 * `retained`, what the pages in flight hold alive at a moment, per page, by kind of
 * object (a heap snapshot taken while 32 pages run, less one taken once they are done):
 * what lives through a page's waves is what scavenges copy and promote.
 */
import { createHook } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Socket } from 'node:net';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { GCProfiler, writeHeapSnapshot } from 'node:v8';
import pino from 'pino';
import { ALL_TABLES, createServices } from '../src/composition-root.js';
import { loadConfig } from '../src/config.js';
import { parseCli } from '../src/scripts/cli.js';
import { cassandraClientFrom, cassandraStoreFrom } from '../src/store/cassandra/cassandra-connect.js';
import { MonotonicClock } from '../src/store/clock.js';
import { runCompiled } from './compiled.js';
import { cassandraPids, closedLoop, preparePagesFixture, replay, StatementRecorder, suspendedPage, timelinePage } from './cassandra-pages.js';
import { BENCH_SECRETS } from './fixture.js';
import { busyTime, type Areas, type CpuProfile, type ProfileNode } from './profile-areas.js';

const { positionals } = parseCli(
  `usage: npx tsx bench/profile-cassandra.ts [timeline|suspended] [seconds] [ours|ceiling|counts|allocations|retained|lived]

Profiles the in-process timeline (or suspendedUsers) page against the Cassandra at
CASSANDRA_CONTACT_POINTS, compiled, 32 pages at a time, for 10 seconds by default, in a
keyspace of its own that it drops afterwards; \`ceiling\` profiles the driver alone
replaying the page's statements instead (what bench:cassandra compares with); \`counts\`
prints, for ours and the driver alone, the promises, ticks, socket writes and garbage
collections a page makes (counts hold on a busy machine, where times do not), and
Cassandra's CPU a page and a second and its requests a page (a quiet node's only);
\`allocations\`, the bytes a page allocates, ours and the driver alone's, by area and
by function; \`retained\`, what a page in flight holds alive, ours and the driver alone's;
\`lived\`, what it holds for 40 ms or more (what scavenges promote).`,
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

/** Where profiles and snapshots go (.bench-build/profiles/). */
const dir = join(fileURLToPath(new URL('../../profiles/', import.meta.url)));
mkdirSync(dir, { recursive: true });
/** Script ids and their files, for closures' places in a heap snapshot (`lived`). */
const scriptFiles = new Map<string, string>();
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
if (['ceiling', 'counts', 'allocations', 'retained', 'lived'].includes(positionals[2] ?? '')) {
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
if (positionals[2] === 'allocations') {
  for (const [name, op] of [['ours', ours], ['the driver alone', page]] as const) {
    await closedLoop(op, 2, 32, []);
    printAllocations(`${which}, ${name}`, ...(await allocationsPerPage(op, seconds)));
  }
  await dropKeyspace();
  process.exit(0);
}
if (positionals[2] === 'retained' || positionals[2] === 'lived') {
  for (const [name, op] of [['ours', ours], ['the driver alone', page]] as const) {
    await closedLoop(op, 2, 32, []);
    if (positionals[2] === 'lived') printRetained(`${which}, ${name}, held 40 ms or more`, await livedPerPage(op, seconds));
    else printRetained(`${which}, ${name}`, await retainedPerPage(op, seconds));
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
  // Scavenges (the young generation) apart from mark-compacts (the old one): which one a
  // page's garbage feeds says whether its objects die young or live through its waves.
  let majorMs = 0;
  let majors = 0;
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      collections++;
      gcMs += entry.duration;
      const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind;
      if (kind !== undefined && kind !== constants.NODE_PERFORMANCE_GC_MINOR) {
        majors++;
        majorMs += entry.duration;
      }
    }
  });
  gc.observe({ entryTypes: ['gc'] });
  // What the scavenges promote: the old generation's growth across each one.
  const gcProfiler = new GCProfiler();
  gcProfiler.start();
  const requestsBefore = await nativeRequests();
  const plain = await closedLoop(op, seconds, 32, cassandraPids());
  const requests = (await nativeRequests()) - requestsBefore;
  const promoted = promotedBytes(gcProfiler.stop());
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
    otherThanScavengesPer1000Pages: +((majors / pages) * 1000).toFixed(1),
    otherThanScavengesMsPerPage: +(majorMs / pages).toFixed(4),
    promotedKiBPerPage: +(promoted / 1024 / pages).toFixed(1),
    cpuMsPerPage: plain.cpuMsPerOp,
    cassandraCpuMsPerPage: plain.cassandraCpuMsPerOp,
    cassandraCpuMsPerSecond: plain.cassandraCpuMsPerOp === null ? null : Math.round(plain.cassandraCpuMsPerOp * plain.perSecond),
    cassandraRequestsPerPage: +(requests / pages).toFixed(2),
  };
}

/**
 * Requests Cassandra's native transport has completed so far (its thread pool's count, a
 * virtual table of Cassandra 4 and later): the statements a page sends, as the server
 * counted them, whatever the client thinks it sent.
 */
async function nativeRequests(): Promise<number> {
  const result = await driver!.execute("SELECT completed_tasks FROM system_views.thread_pools WHERE name = 'Native-Transport-Requests'");
  return Number(result.rows[0]?.get('completed_tasks') ?? NaN);
}

/** Bytes the scavenges of a `GCProfiler` run moved to the old generation (its old and large-object spaces' growth across each). */
function promotedBytes(run: ReturnType<GCProfiler['stop']>): number {
  const old = (side: { heapSpaceStatistics: Array<{ spaceName: string; spaceUsedSize: number }> }) =>
    side.heapSpaceStatistics.filter((s) => s.spaceName === 'old_space' || s.spaceName === 'large_object_space').reduce((n, s) => n + s.spaceUsedSize, 0);
  let bytes = 0;
  for (const gc of run?.statistics ?? []) if (gc.gcType === 'Scavenge') bytes += old(gc.afterGC) - old(gc.beforeGC);
  return bytes;
}

/** A node of V8's sampling heap profile. */
interface HeapNode {
  callFrame: ProfileNode['callFrame'];
  selfSize: number;
  children: HeapNode[];
}

/**
 * Bytes allocated per page of `op`, 32 at a time for `seconds`, by area (inclusive, as
 * the CPU profile's) and by allocating function: V8's sampling heap profiler, one
 * sample per 1 KiB on average, keeping the samples of objects collected since.
 */
async function allocationsPerPage(op: () => Promise<unknown>, seconds: number): Promise<[number, Map<string, number>, Map<string, number>]> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  const figures = await closedLoop(op, seconds, 32, []);
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: HeapNode } };
  await session.post('HeapProfiler.disable');
  session.disconnect();
  const pages = figures.perSecond * seconds;
  const byArea = new Map<string, number>();
  const bySelf = new Map<string, number>();
  let total = 0;
  const walk = (node: HeapNode, areas: ReadonlySet<string>) => {
    const area = AREAS.find(([, test]) => test(node.callFrame));
    const here = area && !areas.has(area[0]) ? new Set([...areas, area[0]]) : areas;
    if (node.selfSize > 0) {
      total += node.selfSize;
      for (const a of here) byArea.set(a, (byArea.get(a) ?? 0) + node.selfSize);
      const f = node.callFrame;
      const name = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|\.bench-build\/tree)\//, '')}:${f.lineNumber + 1}`;
      bySelf.set(name, (bySelf.get(name) ?? 0) + node.selfSize);
    }
    for (const c of node.children) walk(c, here);
  };
  walk(profile.head, new Set());
  const perPage = (m: Map<string, number>) => new Map([...m].map(([k, v]) => [k, v / pages]));
  return [total / pages, perPage(byArea), perPage(bySelf)];
}

function printAllocations(title: string, total: number, byArea: Map<string, number>, bySelf: Map<string, number>): void {
  const kb = (bytes: number) => `${(bytes / 1024).toFixed(1).padStart(7)} KiB/page`;
  console.log(`${title}: ${kb(total)} allocated`);
  for (const [area] of AREAS) if (byArea.has(area)) console.log(`  ${kb(byArea.get(area)!)}  ${area}`);
  console.log('  most allocated by:');
  for (const [name, bytes] of [...bySelf].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${kb(bytes)}  ${name}`);
  const own = [...bySelf].filter(([name]) => !/^\S+ (cassandra-driver\/|node:)/.test(name)).sort((a, b) => b[1] - a[1]);
  if (own.length === 0) return;
  console.log('  most allocated by functions other than the driver\'s and node\'s:');
  for (const [name, bytes] of own.slice(0, 25)) console.log(`  ${kb(bytes)}  ${name}`);
}

/** Objects of one kind (V8's node type and name) in a heap snapshot: how many, and their own bytes. */
type Census = Map<string, { count: number; bytes: number }>;

/**
 * What one page in flight holds alive, by kind: a heap snapshot (which collects first)
 * half way through `seconds` of 32 pages at a time, less one taken once they have all
 * finished, divided by 32. A page's objects are caught at every point of its life, so
 * this is what a page keeps through its waves on average.
 */
async function retainedPerPage(op: () => Promise<unknown>, seconds: number): Promise<Census> {
  const running = closedLoop(op, seconds, 32, []);
  await sleep((seconds * 1000) / 2);
  const busy = census();
  await running;
  const idle = census();
  const out: Census = new Map();
  for (const [kind, { count, bytes }] of busy) {
    const before = idle.get(kind) ?? { count: 0, bytes: 0 };
    out.set(kind, { count: (count - before.count) / 32, bytes: (bytes - before.bytes) / 32 });
  }
  return out;
}

/** The live objects of the heap now, by kind (a snapshot, written, read and removed). */
function census(): Census {
  return censusOf(heapObjects().values());
}

/** Objects of a snapshot by kind: how many and their bytes. */
function censusOf(objects: Iterable<{ label: string; size: number }>): Census {
  const out: Census = new Map();
  for (const { label, size } of objects) {
    const entry = out.get(label) ?? { count: 0, bytes: 0 };
    entry.count++;
    entry.bytes += size;
    out.set(label, entry);
  }
  return out;
}

/**
 * Every object of the heap now, by its snapshot id (the same object keeps its id from one
 * snapshot to the next): its kind (V8's node type and name; a closure also with its file
 * and line) and its own bytes.
 */
function heapObjects(): Map<number, { label: string; size: number }> {
  const file = writeHeapSnapshot(join(dir, `census-${process.pid}-${Date.now()}.heapsnapshot`));
  const snapshot = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]]; location_fields: string[] } };
    nodes: number[];
    strings: string[];
    locations: number[];
  };
  rmSync(file);
  const { node_fields: fields, location_fields: locationFields } = snapshot.snapshot.meta;
  const [type, name, id, size] = ['type', 'name', 'id', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number, number];
  const types = snapshot.snapshot.meta.node_types[0];
  const places = new Map<number, string>();
  for (let i = 0; i < snapshot.locations.length; i += locationFields.length) {
    const [at, script, line] = [0, 1, 2].map((k) => snapshot.locations[i + k]!) as [number, number, number];
    const url = scriptFiles.get(String(script)) ?? `script ${script}`;
    places.set(at, `${url.replace(/^.*\/(node_modules|\.bench-build\/tree)\//, '')}:${line + 1}`);
  }
  const out = new Map<number, { label: string; size: number }>();
  for (let i = 0; i < snapshot.nodes.length; i += fields.length) {
    const kind = types[snapshot.nodes[i + type]!]!;
    // Strings are named by their text: count them by kind alone.
    const place = kind === 'closure' ? ` ${places.get(i) ?? ''}` : '';
    const label = /string|number|bigint/.test(kind) ? `(${kind})` : `${kind} ${snapshot.strings[snapshot.nodes[i + name]!]!.slice(0, 60)}${place}`;
    out.set(snapshot.nodes[i + id]!, { label, size: snapshot.nodes[i + size]! });
  }
  return out;
}

/**
 * What one page in flight holds for 40 ms or more (what the scavenges then copy again
 * and promote): the objects of a snapshot half way through `seconds` of 32 pages at a
 * time that are still there in a snapshot 40 ms of running later and gone once the
 * pages have all finished, divided by 32.
 */
async function livedPerPage(op: () => Promise<unknown>, seconds: number): Promise<Census> {
  const session = new Session();
  session.connect();
  session.on('Debugger.scriptParsed', ({ params }) => void scriptFiles.set(params.scriptId, params.url));
  await session.post('Debugger.enable');
  await session.post('Debugger.disable');
  session.disconnect();
  const running = closedLoop(op, seconds, 32, []);
  await sleep((seconds * 1000) / 2);
  const first = heapObjects();
  await sleep(40);
  const second = heapObjects();
  await running;
  const idle = heapObjects();
  const kept = [...second].filter(([id]) => first.has(id) && !idle.has(id)).map(([, o]) => o);
  const out = censusOf(kept);
  for (const entry of out.values()) {
    entry.count /= 32;
    entry.bytes /= 32;
  }
  return out;
}

function printRetained(title: string, perPage: Census): void {
  const rows = [...perPage].filter(([, c]) => c.bytes > 0).sort((a, b) => b[1].bytes - a[1].bytes);
  const total = rows.reduce((n, [, c]) => n + c.bytes, 0);
  console.log(`${title}: ${(total / 1024).toFixed(1)} KiB held a page in flight`);
  for (const [kind, c] of rows.slice(0, 40)) console.log(`  ${(c.bytes / 1024).toFixed(2).padStart(7)} KiB  ${c.count.toFixed(1).padStart(7)}  ${kind}`);
}

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
