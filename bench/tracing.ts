/**
 * What tracing costs on the request path: the built server (`dist/main.js`) with tracing
 * off, and on (every request sampled, spans exported over OTLP/HTTP protobuf to a sink on
 * loopback that answers 200 and keeps nothing), under the same load, alternating which
 * goes first each round. Reports server CPU per request (from /proc) and throughput.
 *
 *   npx tsx bench/tracing.ts        (BENCH_ROUNDS, BENCH_DURATION, BENCH_CONNECTIONS)
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { benchEnv, benchWorkloads, prepareOverheadFixture } from './fixture.js';
import { cpuMs } from './overhead.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const seconds = Number(process.env.BENCH_DURATION ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 16);

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

async function start(env: Record<string, string>): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['dist/main.js'], { env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' }, stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok) return { child, port };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error('server did not become ready');
}

async function main(): Promise<void> {
  if (spawnSync('npm', ['run', '-s', 'build'], { stdio: 'inherit' }).status !== 0) throw new Error('npm run build failed');
  const dir = mkdtempSync(join(tmpdir(), 'bench-tracing-'));
  const file = join(dir, 'bench.db');
  const meetingId = await prepareOverheadFixture(file);
  const workloads = benchWorkloads(meetingId);
  const sink = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  const modes = {
    off: benchEnv(file),
    on: { ...benchEnv(file), OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SERVICE_NAME: 'bench' },
    // Context propagation and instrumentation without recording: what sampling cannot save.
    unsampled: { ...benchEnv(file), OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SERVICE_NAME: 'bench', OTEL_TRACES_SAMPLER: 'always_off' },
  };
  const results: Record<string, Record<string, Array<{ rps: number; cpuMsPerRequest: number; p50: number }>>> = {};
  console.log(`load average before: ${loadavg().map((n) => n.toFixed(2)).join(' ')}`);
  for (let round = 0; round < rounds; round++) {
    const all = ['off', 'on', 'unsampled'] as const;
    // A different mode first each round.
    const order = all.map((_, i) => all[(i + round) % all.length]!);
    for (const mode of order) {
      const { child, port } = await start(modes[mode]);
      for (const workload of workloads) {
        const request = { url: `http://127.0.0.1:${port}/graphql`, connections, method: 'POST' as const, headers: { 'content-type': 'application/json' }, body: workload.body };
        await autocannon({ ...request, duration: 1 });
        const before = cpuMs(child.pid!)!;
        const run = await autocannon({ ...request, duration: seconds });
        const cpu = (cpuMs(child.pid!)! - before) / run.requests.total;
        if (run.errors + run.non2xx > 0) throw new Error(`${mode} ${workload.name}: ${run.errors + run.non2xx} errors`);
        ((results[workload.name] ??= {})[mode] ??= []).push({ rps: Math.round(run.requests.average), cpuMsPerRequest: cpu, p50: run.latency.p50 });
        console.log(`round ${round + 1} ${mode.padEnd(9)} ${workload.name}: ${Math.round(run.requests.average)} req/s, ${cpu.toFixed(3)} ms CPU/request, p50 ${run.latency.p50} ms`);
      }
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
  }
  console.log(`load average after: ${loadavg().map((n) => n.toFixed(2)).join(' ')}`);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const [name, byMode] of Object.entries(results)) {
    const off = median(byMode.off!.map((m) => m.cpuMsPerRequest));
    const on = median(byMode.on!.map((m) => m.cpuMsPerRequest));
    const rpsOff = median(byMode.off!.map((m) => m.rps));
    const rpsOn = median(byMode.on!.map((m) => m.rps));
    const unsampled = median(byMode.unsampled!.map((m) => m.cpuMsPerRequest));
    const pct = (x: number) => `${x >= off ? '+' : ''}${(((x - off) / off) * 100).toFixed(0)}%`;
    console.log(
      `${name}: CPU/request off ${off.toFixed(3)} ms, on ${on.toFixed(3)} ms (${pct(on)}), on but unsampled ${unsampled.toFixed(3)} ms (${pct(unsampled)}); req/s off ${rpsOff}, on ${rpsOn}`,
    );
  }
  sink.close();
  rmSync(dir, { recursive: true, force: true });
}

await main();
