/**
 * `npm run bench`: the benchmarks, on the embedded store. Prints progress, then a table
 * with every figure next to its target, and writes bench/results/latest.json (ignored
 * by git, so a run leaves the tree clean; bench/results/recorded.json is the run
 * BENCHMARKS.md reports). BENCH_DURATION (seconds per autocannon run, default 10) and
 * BENCH_SECTIONS (comma-separated: paging,overhead,roundtrips,counter) narrow a run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { runDeepPaging } from './deep-paging.js';
import { prepareOverheadFixture, TIMELINE_QUERY, benchServices } from './fixture.js';
import { runRoundTrips } from './round-trips.js';
import { runUniqueCounter } from './unique-counter.js';
import { createRequestContext } from '../src/composition-root.js';
import { parseCli } from '../src/scripts/cli.js';

parseCli(
  `usage: npm run bench

Runs the benchmarks on the embedded store (about a minute on 2 cores) and writes
bench/results/latest.json. Environment: BENCH_DURATION (seconds per load run, default
10), BENCH_SECTIONS (comma-separated: paging,overhead,roundtrips,counter).`,
  {},
);

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const SECTIONS = new Set((process.env.BENCH_SECTIONS ?? 'paging,overhead,roundtrips,counter').split(','));
const dir = mkdtempSync(join(tmpdir(), 'bench-'));
const results: Record<string, unknown> = {};
const rows: Array<{ figure: string; value: string; target: string; met: string }> = [];
const started = Date.now();

function progress(message: string): void {
  process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${message}\n`);
}

function row(figure: string, value: string, target = '', met: boolean | null = null): void {
  rows.push({ figure, value, target, met: met === null ? '' : met ? 'yes' : 'NO' });
}

/** Start a server script as a child process; resolves with its port once it says READY. */
function startServer(script: string, file: string): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, file], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODE_ENV: 'production' } });
    child.stdout!.on('data', (d: Buffer) => {
      const m = /READY (\d+)/.exec(d.toString());
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
}

function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

async function load(port: number, duration: number) {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/graphql`,
    connections: 32,
    duration,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: TIMELINE_QUERY }),
  });
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

async function overhead() {
  const file = join(dir, 'overhead.db');
  await prepareOverheadFixture(file);
  const servers = [
    { name: 'ours (Apollo Server)', script: 'bench/servers/ours.ts' },
    { name: 'graphql-js on node:http', script: 'bench/servers/graphql-js.ts' },
    { name: 'mercurius + graphql-jit', script: 'bench/servers/mercurius.ts' },
  ];
  const out: Record<string, { requestsPerSecond: number; p50: number; p99: number; errors: number; peakRssMb: number }> = {};
  for (const s of servers) {
    progress(`overhead: ${s.name}, ${DURATION} s at 32 connections (after a 2 s warm-up)`);
    const { child, port } = await startServer(s.script, file);
    try {
      // Check the answer once, then warm up.
      const res = await fetch(`http://127.0.0.1:${port}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: TIMELINE_QUERY }) });
      const body = (await res.json()) as { data?: { userByUsername: { posts: { edges: unknown[] } } } };
      if (body.data?.userByUsername.posts.edges.length !== 20) throw new Error(`${s.name} answered ${JSON.stringify(body).slice(0, 200)}`);
      await load(port, 2);
      out[s.name] = { ...(await load(port, DURATION)), peakRssMb: peakRssMb(child.pid!) };
    } finally {
      child.kill('SIGTERM');
    }
  }
  // The ceiling: the same rows read in-process, no HTTP and no GraphQL.
  progress('overhead: in-process ceiling');
  const { store, services } = await benchServices(file);
  const ctx0 = createRequestContext(services, null);
  const [benchId] = await ctx0.users.idsByUsername(['bench']);
  let ops = 0;
  const until = Date.now() + DURATION * 1000;
  while (Date.now() < until) {
    const ctx = createRequestContext(services, null);
    const page = await ctx.timeline.posts(benchId!, { first: 20 });
    await Promise.all(page.edges.map((e) => ctx.loaders.userById.load(e.node.authorId)));
    ops++;
  }
  await store.close();
  const ceiling = Math.round(ops / DURATION);
  const ours = out['ours (Apollo Server)']!;
  const bare = out['graphql-js on node:http']!;
  const jit = out['mercurius + graphql-jit']!;
  for (const [name, r] of Object.entries(out)) {
    row(`overhead: ${name} req/s (p50 / p99 ms)`, `${r.requestsPerSecond} (${r.p50} / ${r.p99})${r.errors ? `, ${r.errors} errors` : ''}`);
  }
  row('overhead: in-process ceiling (page + authors, no HTTP) ops/s', String(ceiling));
  row('overhead: ours vs bare graphql-js', `${(ours.requestsPerSecond / bare.requestsPerSecond).toFixed(2)}x`, '>= 1.0x', ours.requestsPerSecond >= bare.requestsPerSecond);
  row('overhead: ours vs mercurius + graphql-jit', `${(ours.requestsPerSecond / jit.requestsPerSecond).toFixed(2)}x`, '>= 0.8x', ours.requestsPerSecond >= 0.8 * jit.requestsPerSecond);
  row('memory: peak RSS of our server during its run', `${ours.peakRssMb.toFixed(0)} MB`);
  results.overhead = { durationSeconds: DURATION, connections: 32, servers: out, inProcessCeilingOpsPerSecond: ceiling };
}

async function main(): Promise<void> {
  progress(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`);
  results.machine = { cores: cpus().length, cpu: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, date: new Date().toISOString() };
  if (SECTIONS.has('paging')) {
    progress('deep paging: 100,000-post timeline');
    results.deepPaging = await runDeepPaging(join(dir, 'paging.db'), progress, row);
  }
  if (SECTIONS.has('overhead')) await overhead();
  if (SECTIONS.has('roundtrips')) {
    progress('round trips: a 50-edge suspendedUsers page');
    results.roundTrips = await runRoundTrips(progress, row);
  }
  if (SECTIONS.has('counter')) {
    progress('unique counter: first-write-wins against the lightweight transaction');
    results.uniqueCounter = await runUniqueCounter(progress, row);
  }
  results.totalSeconds = Math.round((Date.now() - started) / 1000);
  console.log('');
  console.table(rows);
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/latest.json', `${JSON.stringify({ results, rows }, null, 2)}\n`);
  console.log(`\nwrote bench/results/latest.json (${results.totalSeconds} s in all)`);
  rmSync(dir, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
