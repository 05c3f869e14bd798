/**
 * `npx tsx bench/memory.ts [workload] [seconds] [ours|mercurius|graphql-js]`: the garbage
 * collector's side of a server under the benchmark load. Builds, starts the compiled
 * server (as `npm start` runs it, plus `--trace-gc-nvp`) on core 0, warms it up, loads it
 * from core 1, and prints per request: CPU, time paused in GC, bytes allocated and bytes
 * promoted to the old generation (the survivors of two scavenges), and the peak RSS.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { benchEnv, benchWorkloads, prepareOverheadFixture } from './fixture.js';
import { buildServers } from './overhead.js';
import { parseCli } from '../src/scripts/cli.js';

const { positionals } = parseCli(
  `usage: npx tsx bench/memory.ts [timeline|acceptances] [seconds] [ours|mercurius|graphql-js]

Builds, starts the compiled server with --trace-gc-nvp on core 0, warms it up for 3 s,
loads it from core 1 for the given seconds (default 10) at 32 connections, and prints
GC pause, allocation and promotion per request, CPU per request and the peak RSS.
BENCH_NO_BUILD=1 runs what dist/ and .bench-build/ already hold (to compare two builds).`,
  {},
  true,
);

const workloadName = positionals[0] ?? 'timeline';
const seconds = Number(positionals[1] ?? 10);
const server = positionals[2] ?? 'ours';
const entry = (file: string, port: number) => (server === 'ours' ? ['dist/main.js'] : [`.bench-build/${server}.js`, file, String(port)]);
const dir = mkdtempSync(join(tmpdir(), 'memory-'));
const file = join(dir, 'memory.db');
if (!process.env.BENCH_NO_BUILD) await buildServers(() => undefined);
const meetingId = await prepareOverheadFixture(file);
const workload = benchWorkloads(meetingId).find((w) => w.name.startsWith(workloadName));
if (!workload) throw new Error(`no workload ${workloadName}`);
spawnSync('taskset', ['-p', '-c', '1', String(process.pid)]);
const port = 40_000 + Math.floor(Math.random() * 20_000);
const child = spawn('taskset', ['-c', '0', process.execPath, '--trace-gc-nvp', ...entry(file, port)], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, ...benchEnv(file), HOST: '127.0.0.1', PORT: String(port) },
});
const exited = new Promise((r) => child.once('exit', r));

/** GC totals while `counting` is on. */
const gc = { counting: false, scavenges: 0, marks: 0, pauseMs: 0, allocated: 0, promoted: 0 };
createInterface({ input: child.stdout! }).on('line', (line) => {
  if (!gc.counting || !line.includes(' gc=')) return;
  const field = (name: string) => Number(new RegExp(` ${name}=([\\d.]+)`).exec(line)?.[1] ?? 0);
  if (line.includes(' gc=s ')) {
    gc.scavenges++;
    gc.allocated += field('allocated');
    gc.promoted += field('promoted');
  } else gc.marks++;
  gc.pauseMs += field('pause');
});

const url = `http://127.0.0.1:${port}/graphql`;
for (;;) {
  const ok = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: workload.body }).then((r) => r.ok, () => false);
  if (ok) break;
  await new Promise((r) => setTimeout(r, 100));
}
const options = { url, connections: 32, method: 'POST' as const, headers: { 'content-type': 'application/json' }, body: workload.body };
await autocannon({ ...options, duration: 3 });
/** utime + stime in ms of the process, or of one of its threads (`task`). */
const cpuMs = (task?: number) => {
  const stat = readFileSync(task === undefined ? `/proc/${child.pid}/stat` : `/proc/${child.pid}/task/${task}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
};
// taskset execs node in place, so the child's pid is the server's.
const cpuBefore = cpuMs();
const mainBefore = cpuMs(child.pid);
gc.counting = true;
const result = await autocannon({ ...options, duration: seconds });
gc.counting = false;
const cpu = cpuMs() - cpuBefore;
// The main thread runs JavaScript; the others are V8's (GC, compilers) and libuv's.
const mainCpu = cpuMs(child.pid) - mainBefore;
const peakMb = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024;
child.kill('SIGTERM');
await exited;
rmSync(dir, { recursive: true, force: true });

const n = result.requests.total;
console.log(`${server}, ${workload.name}: ${Math.round(result.requests.average)} req/s, ${n} requests, ${result.errors + result.non2xx} errors, latency p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, max ${result.latency.max} ms`);
console.log(`  CPU ${(cpu / n).toFixed(3)} ms/request (main thread ${(mainCpu / n).toFixed(3)}); GC pause ${((gc.pauseMs * 1000) / n).toFixed(1)} µs/request (${gc.scavenges} scavenges, ${gc.marks} mark-compact events)`);
console.log(
  `  allocated ${(gc.allocated / n / 1024).toFixed(1)} KiB/request, promoted ${(gc.promoted / n / 1024).toFixed(2)} KiB/request (${((gc.promoted / gc.allocated) * 100).toFixed(2)}%)`,
);
console.log(`  peak RSS ${peakMb.toFixed(0)} MB`);
