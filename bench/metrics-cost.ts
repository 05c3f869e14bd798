/**
 * What metrics cost on the request path: ours, compiled, under the same HTTP load with
 * METRICS off and on (two servers started together, each on its own copy of the fixture,
 * which starts first alternating between rounds, loaded in alternating slices), and the
 * servers' CPU per request compared slice by slice. BENCH_METRICS_CONTROL=1 runs the same
 * with METRICS off on both sides: the figure it gives is the method's own noise. The target: under 3% more CPU per
 * request with metrics on. The load is the overhead section's workloads; no scrape runs
 * during a measured load (Prometheus scrapes every 15 s or so: its cost is the scrape's,
 * not the requests'), one after it proves the series moved.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { copyFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Database from 'better-sqlite3';
import { Metrics } from '../src/observability/metrics.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { CountingStore } from '../src/store/store-decorator.js';
import { ObservedStore } from '../src/store/store-observer.js';
import { defineTable } from '../src/store/table.js';
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

/** CPU time (user + system, µs) per call of `op`, `calls` calls in a row. */
async function cpuMicrosPerCall(op: (i: number) => unknown, calls: number): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < calls; i++) await op(i);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / calls;
}

/**
 * The least CPU per call of `with` and of `without` over rounds that alternate them, and
 * their difference: what the metrics code adds per call. The least of many rounds is the
 * round the shared cores disturbed least.
 */
async function addedMicros(without: (i: number) => unknown, withMetrics: (i: number) => unknown, calls = 20_000, rounds = 15): Promise<number> {
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      a.push(await cpuMicrosPerCall(without, calls));
      b.push(await cpuMicrosPerCall(withMetrics, calls));
    } else {
      b.push(await cpuMicrosPerCall(withMetrics, calls));
      a.push(await cpuMicrosPerCall(without, calls));
    }
  }
  return Math.min(...b) - Math.min(...a);
}

/**
 * What the metrics code adds, part by part, in this process (not affected by the
 * servers' scheduling): a store round trip observed, a GraphQL request counted, an HTTP
 * response counted and timed (µs of CPU each).
 */
export async function metricsParts(): Promise<{ roundTrip: number; graphqlRequest: number; httpResponse: number }> {
  const metrics = new Metrics({ token: null });
  const table = defineTable({ name: 'parts', columns: { id: 'uuid', v: 'text' }, partitionKey: ['id'] });
  const base = new SqliteStore({ database: new Database(':memory:') });
  await base.ensureTables([table]);
  const id = randomUUID();
  await base.upsert(table, { id, v: 'value' });
  const observed = new ObservedStore(base, [metrics.storeObserver]);
  // A request's own counting view over the process's store, as every request has.
  const roundTrip = await addedMicros(
    () => new CountingStore(base).get(table, { id }),
    () => new CountingStore(observed).get(table, { id }),
  );
  const context = { startedAt: performance.now(), storeRoundTrips: () => 2, storeStatements: () => 2 };
  const ctx = {
    operationName: 'Timeline',
    operation: { operation: 'query', name: { value: 'Timeline' } },
    response: { body: { kind: 'single', singleResult: { data: {} } } },
    contextValue: context,
  } as unknown as Parameters<Metrics['graphqlFinished']>[0];
  const graphqlRequest = await addedMicros(
    () => context.storeRoundTrips(),
    () => metrics.graphqlFinished(ctx),
    200_000,
  );
  const req = { url: '/graphql' } as IncomingMessage;
  const handler = (_req: IncomingMessage, _res: ServerResponse) => undefined;
  const counted = metrics.wrapHttp(handler);
  const respond = (h: typeof handler) => () => {
    const res = Object.assign(new EventEmitter(), { statusCode: 200 }) as unknown as ServerResponse;
    h(req, res);
    res.emit('finish');
  };
  const httpResponse = await addedMicros(respond(handler), respond(counted), 200_000);
  await base.close();
  return { roundTrip, graphqlRequest, httpResponse };
}

/** The store round trips one request of a workload makes (its `extensions.storeRoundTrips`). */
async function roundTripsPerRequest(port: number, body: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return ((await res.json()) as { extensions: { storeRoundTrips: number } }).extensions.storeRoundTrips;
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
  // One file per server: neither waits on the other's writes (presence, background jobs).
  const files = { off: `${fixtureFile}.off`, on: `${fixtureFile}.on` };
  copyFileSync(fixtureFile, files.off);
  copyFileSync(fixtureFile, files.on);
  const control = process.env.BENCH_METRICS_CONTROL === '1';
  const envOf: Record<'off' | 'on', Record<string, string>> = {
    off: { METRICS: 'false' },
    on: control ? { METRICS: 'false' } : { METRICS: 'true', METRICS_TOKEN: TOKEN },
  };
  if (control) progress('CONTROL RUN: METRICS off on both sides (the "on" figures measure the method\'s noise)');
  const pin = pinning();
  const raw: Record<string, { off: Measure[]; on: Measure[] }> = Object.fromEntries(workloads.map((w) => [w.name, { off: [], on: [] }]));
  const slices = 4;
  const roundTripsOf: Record<string, number> = {};
  const sliceSeconds = Math.max(1, options.durationSeconds / 2);
  for (let round = 0; round < options.rounds; round++) {
    // Both servers run at once, and their loads alternate in short slices: a change in the
    // machine's other load (2 shared cores) falls on both alike.
    progress(`metrics cost, round ${round + 1}/${options.rounds}: METRICS off and on, ${slices} alternating slices of ${sliceSeconds} s each`);
    const first = round % 2 === 0 ? 'off' : 'on';
    const second = first === 'off' ? 'on' : 'off';
    const start = (mode: 'off' | 'on') => startServer(OUR_SERVER, files[mode], pin.server, { ...benchEnv(files[mode]), ...envOf[mode] });
    const started = { [first]: await start(first) };
    started[second] = await start(second);
    const servers = { off: started.off!, on: started.on! };
    try {
      for (const w of workloads) {
        roundTripsOf[w.name] ??= await roundTripsPerRequest(servers.off.port, w.body);
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
      if (!control && (await countedRequests(servers.on.port)) === 0) throw new Error('METRICS on, yet no GraphQL request was counted');
    } finally {
      for (const { child } of Object.values(servers)) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await gone;
      }
    }
  }
  progress('metrics cost: the metrics code part by part, in process');
  const parts = await metricsParts();
  row('metrics code: per store round trip observed, µs of CPU', parts.roundTrip.toFixed(2));
  row('metrics code: per GraphQL request counted, µs of CPU', parts.graphqlRequest.toFixed(2));
  row('metrics code: per HTTP response counted, µs of CPU', parts.httpResponse.toFixed(2));
  const summary: Record<
    string,
    { cpuOff: Spread; cpuOn: Spread; extraCpuPercent: Spread; extraAtMinimumPercent: number; rpsOff: Spread; rpsOn: Spread; roundTrips: number; partsMicros: number }
  > = {};
  for (const w of workloads) {
    const { off, on } = raw[w.name]!;
    const extra = on.map((m, i) => ((m.cpuMsPerRequest ?? NaN) / (off[i]!.cpuMsPerRequest ?? NaN) - 1) * 100);
    const s = {
      cpuOff: spread(off.map((m) => m.cpuMsPerRequest ?? NaN)),
      cpuOn: spread(on.map((m) => m.cpuMsPerRequest ?? NaN)),
      extraCpuPercent: spread(extra),
      extraAtMinimumPercent: 0,
      roundTrips: roundTripsOf[w.name] ?? NaN,
      partsMicros: 0,
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
    // The parts, for this workload's request: one HTTP response, one GraphQL request, its round trips.
    s.partsMicros = parts.httpResponse + parts.graphqlRequest + s.roundTrips * parts.roundTrip;
    const share = (s.partsMicros / (s.cpuOff.min * 1000)) * 100;
    row(
      `${w.name}: the metrics code per request (${s.roundTrips} round trips), µs and share of the least CPU per request`,
      `${s.partsMicros.toFixed(1)} µs, ${share.toFixed(2)}%`,
      '< 3%',
      share < 3,
    );
  }
  return { ...options, control, pinned: pin.pinned, workloads: summary, rounds: raw };
}
