/**
 * What metrics cost on the request path: ours, compiled, under the same HTTP load with
 * METRICS off and on (two servers started together, loaded in alternating slices), and
 * the servers' CPU per request compared slice by slice. The target: under 3% more CPU per
 * request with metrics on. The load is the overhead section's workloads; no scrape runs
 * during a measured load (Prometheus scrapes every 15 s or so: its cost is the scrape's,
 * not the requests'), one after it proves the series moved.
 */
import { spawnSync } from 'node:child_process';
import { benchEnv, benchWorkloads, prepareOverheadFixture } from './fixture.js';
import { OUR_SERVER, check, load, pinning, spread, startServer, type Measure, type OverheadOptions, type Spread } from './overhead.js';

/** The token the bench server requires (it runs with NODE_ENV=production). */
const TOKEN = 'bench-metrics-token-0123456789';

/** Requests the scrape after a measured load saw on one server (proof the series moved). */
async function countedRequests(port: number): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  let total = 0;
  for (const line of (await res.text()).split('\n')) {
    if (line.startsWith('relay_graphql_requests_total{')) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** Run the rounds; per workload, CPU per request with metrics off and on, and their ratio. */
export async function runMetricsCost(
  fixtureFile: string,
  options: OverheadOptions,
  progress: (m: string) => void,
  row: (figure: string, value: string, target?: string, met?: boolean | null) => void,
) {
  progress('building: npm run build');
  if (spawnSync('npm', ['run', '-s', 'build'], { stdio: 'inherit' }).status !== 0) throw new Error('npm run build failed');
  const workloads = benchWorkloads(await prepareOverheadFixture(fixtureFile));
  const pin = pinning();
  const raw: Record<string, { off: Measure[]; on: Measure[] }> = Object.fromEntries(workloads.map((w) => [w.name, { off: [], on: [] }]));
  const slices = 4;
  const sliceSeconds = Math.max(1, options.durationSeconds / 2);
  for (let round = 0; round < options.rounds; round++) {
    // Both servers run at once, and their loads alternate in short slices: a change in the
    // machine's other load (2 shared cores) falls on both alike.
    progress(`metrics cost, round ${round + 1}/${options.rounds}: METRICS off and on, ${slices} alternating slices of ${sliceSeconds} s each`);
    const servers = {
      off: await startServer(OUR_SERVER, fixtureFile, pin.server, { ...benchEnv(fixtureFile), METRICS: 'false' }),
      on: await startServer(OUR_SERVER, fixtureFile, pin.server, { ...benchEnv(fixtureFile), METRICS: 'true', METRICS_TOKEN: TOKEN }),
    };
    try {
      for (const w of workloads) {
        for (const mode of ['off', 'on'] as const) {
          const { child, port } = servers[mode];
          await check(port, w, `METRICS ${mode}`);
          await load(port, child.pid!, w, options.warmupSeconds, options.connections);
        }
        for (let slice = 0; slice < slices; slice++) {
          const order = (slice + round) % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const);
          for (const mode of order) {
            const { child, port } = servers[mode];
            raw[w.name]![mode].push(await load(port, child.pid!, w, sliceSeconds, options.connections));
          }
        }
      }
      if ((await countedRequests(servers.on.port)) === 0) throw new Error('METRICS on, yet no GraphQL request was counted');
    } finally {
      for (const { child } of Object.values(servers)) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await gone;
      }
    }
  }
  const summary: Record<string, { cpuOff: Spread; cpuOn: Spread; extraCpuPercent: Spread; extraAtMinimumPercent: number; rpsOff: Spread; rpsOn: Spread }> = {};
  for (const w of workloads) {
    const { off, on } = raw[w.name]!;
    const extra = on.map((m, i) => ((m.cpuMsPerRequest ?? NaN) / (off[i]!.cpuMsPerRequest ?? NaN) - 1) * 100);
    const s = {
      cpuOff: spread(off.map((m) => m.cpuMsPerRequest ?? NaN)),
      cpuOn: spread(on.map((m) => m.cpuMsPerRequest ?? NaN)),
      extraCpuPercent: spread(extra),
      extraAtMinimumPercent: 0,
      rpsOff: spread(off.map((m) => m.requestsPerSecond)),
      rpsOn: spread(on.map((m) => m.requestsPerSecond)),
    };
    // Other processes on the shared cores only ever add to a slice's CPU per request (cache
    // and scheduler misses): the least of each side is the closest to its own cost.
    s.extraAtMinimumPercent = (s.cpuOn.min / s.cpuOff.min - 1) * 100;
    summary[w.name] = s;
    row(`${w.name}: server CPU ms/request, METRICS off / on`, `${s.cpuOff.median.toFixed(3)} / ${s.cpuOn.median.toFixed(3)}`);
    row(`${w.name}: req/s, METRICS off / on`, `${s.rpsOff.median} / ${s.rpsOn.median}`);
    row(
      `${w.name}: CPU per request added by METRICS, median [min–max]`,
      `${s.extraCpuPercent.median.toFixed(1)}% [${s.extraCpuPercent.min.toFixed(1)}–${s.extraCpuPercent.max.toFixed(1)}]`,
      '< 3%',
      s.extraCpuPercent.median < 3,
    );
    row(`${w.name}: CPU per request added by METRICS, least slice against least slice`, `${s.extraAtMinimumPercent.toFixed(1)}%`, '< 3%', s.extraAtMinimumPercent < 3);
  }
  return { ...options, pinned: pin.pinned, workloads: summary, rounds: raw };
}
