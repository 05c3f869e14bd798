/**
 * `npm run bench`: the benchmarks, on the embedded store. Prints progress, then a table
 * with every figure next to its target, and writes bench/results/latest.json (ignored
 * by git, so a run leaves the tree clean; the runs BENCHMARKS.md reports are kept as
 * bench/results/recorded-*.json). BENCH_ROUNDS, BENCH_DURATION, BENCH_WARMUP, BENCH_CONNECTIONS
 * shape the overhead run and the metrics-cost run; BENCH_SECTIONS (comma-separated:
 * paging,overhead,metrics,roundtrips,counter,search,overload,cursors,order,idempotency, and jump and
 * trailing, which run only when named) narrows a run; BENCH_FLOOD_SECONDS sets how long each overload flood
 * lasts. The search section makes its 100,000 users once, into a
 * file in the system's temporary folder (BENCH_NAMES_FILE), reused by later runs.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { finishRun } from './results.js';
import { join } from 'node:path';
import { runCompiled } from './compiled.js';
import { runCursorSigning } from './cursors.js';
import { runDeepPaging } from './deep-paging.js';
import { runJump, runJumpOnCassandra } from './jump.js';
import { runIdempotency } from './idempotency.js';
import { runTrailing } from './trailing.js';
import { runMetricsCost } from './metrics-cost.js';
import { pinning, runOverhead } from './overhead.js';
import { runNameSearch } from './name-search.js';
import { runRoundTrips } from './round-trips.js';
import { runUniqueCounter } from './unique-counter.js';
import { runWriteOrder } from './write-order.js';
import { runOverload } from './overload.js';
import { startChildServer } from '../test/support/child-server.js';
import { TEST_AUTH_SECRET } from '../test/support/test-server.js';
import { authKey, signToken } from '../src/graphql/auth.js';
import { parseCli } from '../src/scripts/cli.js';
import { positive } from './settings.js';

parseCli(
  `usage: npm run bench

Runs the benchmarks on the embedded store, compiled as the server runs (about 5 minutes on 2 cores, and the first
time some minutes more to make the name search's 100,000 users) and writes
bench/results/latest.json. Environment: BENCH_ROUNDS (fresh-server rounds per server,
default 5), BENCH_DURATION (seconds per measured load, default 5), BENCH_WARMUP
(seconds of warm-up before each, default 2), BENCH_CONNECTIONS (default 32),
BENCH_SECTIONS (comma-separated: paging,overhead,metrics,roundtrips,counter,search,overload,cursors,order,idempotency;
and jump, offset pages over a 1,000,000-post timeline, only when named; on Cassandra
too, with BENCH_JUMP_CASSANDRA_POSTS posts (default 100000), when CASSANDRA_CONTACT_POINTS
is set; idempotency also runs on Cassandra when it is set; and trailing, the store reads a
minute of the trailing passes, idle and busy, only when named, on Cassandra too when it is
set), BENCH_TRAILING_RATE (the trailing section's busy writes a second, default 2), BENCH_JUMP_POSTS (the jump section's timeline, default 1000000), BENCH_NAMES_FILE
(where the name search's users are kept between runs), BENCH_FLOOD_SECONDS (how long
each overload flood lasts, default 20), BENCH_ORDER_LIST_CHANGES (list renames, and as many
moves, of the order section; default 1000).`,
  {},
);

// In process (the jump, paging and other in-process sections), the product's code runs as the
// server runs it: compiled (bench/compiled.ts), as the servers the load sections start run dist/.
await runCompiled(import.meta.url);

const ROUNDS = Math.round(positive('BENCH_ROUNDS', 5));
const DURATION = positive('BENCH_DURATION', 5);
const WARMUP = positive('BENCH_WARMUP', 2);
const CONNECTIONS = Math.round(positive('BENCH_CONNECTIONS', 32));
const SECTIONS = new Set((process.env.BENCH_SECTIONS ?? 'paging,overhead,metrics,roundtrips,counter,search,overload,cursors,order,idempotency').split(','));
const FLOOD_SECONDS = positive('BENCH_FLOOD_SECONDS', 20);
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

async function overhead() {
  results.overhead = await runOverhead(join(dir, 'overhead.db'), { rounds: ROUNDS, durationSeconds: DURATION, warmupSeconds: WARMUP, connections: CONNECTIONS }, progress, row);
}

async function main(): Promise<void> {
  progress(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`);
  // The in-process sections run on core 1 too, away from the servers' core 0.
  pinning();
  results.machine = { cores: cpus().length, cpu: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, date: new Date().toISOString(), loadAverageAtStart: loadavg() };
  if (SECTIONS.has('paging')) {
    progress('deep paging: 100,000-post timeline');
    results.deepPaging = await runDeepPaging(join(dir, 'paging.db'), progress, row);
  }
  if (SECTIONS.has('overhead')) await overhead();
  if (SECTIONS.has('metrics')) {
    progress('metrics cost: the same load with METRICS off and on');
    const options = { rounds: ROUNDS, durationSeconds: DURATION, warmupSeconds: WARMUP, connections: CONNECTIONS };
    results.metricsCost = await runMetricsCost(join(dir, 'metrics.db'), options, progress, row);
  }
  if (SECTIONS.has('roundtrips')) {
    progress('round trips: a 50-edge suspendedUsers page');
    results.roundTrips = await runRoundTrips(progress, row);
  }
  if (SECTIONS.has('counter')) {
    progress('unique counter: first-write-wins against the lightweight transaction');
    results.uniqueCounter = await runUniqueCounter(progress, row);
  }
  if (SECTIONS.has('jump')) {
    progress('jump: offset pages over a 1,000,000-post timeline, and the write cost');
    results.jump = await runJump(join(dir, 'jump.db'), progress, row);
    results.jumpCassandra = await runJumpOnCassandra(progress, row);
  }
  if (SECTIONS.has('search')) {
    progress('name search: usersByName against usersByLastName over 100,000 users; totalCount per request');
    results.nameSearch = await runNameSearch(progress, row);
  }
  if (SECTIONS.has('overload')) {
    progress('overload: one token floods on 400 connections while another user works, limits on and off');
    const key = authKey(TEST_AUTH_SECRET);
    const tokens = {
      flood: { username: 'flooder', token: await signToken(key, 'flooder') },
      other: { username: 'other', token: await signToken(key, 'other') },
    };
    const start = async (env: Record<string, string>) => {
      const server = await startChildServer(':memory:', { LOG_LEVEL: 'warn', ...env });
      // It inherits this process's core 1: the server goes to core 0, every thread of it, as the other sections' do.
      if (pinning().pinned) spawnSync('taskset', ['-a', '-p', '-c', '0', String(server.process.pid)]);
      return {
        url: server.url,
        pid: server.process.pid!,
        output: server.output,
        stop: async () => {
          server.process.kill('SIGTERM');
          await server.exited;
        },
      };
    };
    results.overload = await runOverload(start, tokens, { seconds: FLOOD_SECONDS, connections: 400 }, progress, row);
  }
  if (SECTIONS.has('cursors')) results.cursorSigning = await runCursorSigning(progress, row);
  if (SECTIONS.has('order')) {
    progress('write order: updateUser, list renames and moves (what ordering writes across servers costs)');
    results.writeOrder = await runWriteOrder(progress, row);
  }
  if (SECTIONS.has('idempotency')) {
    progress('idempotency: createPost with and without a clientMutationId');
    results.idempotency = await runIdempotency(progress, row);
  }
  if (SECTIONS.has('trailing')) {
    progress('trailing: store reads a minute of the trailing passes, idle and busy');
    results.trailing = await runTrailing(progress, row);
  }
  finishRun('latest.json', results, started, rows);
  rmSync(dir, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
