/**
 * `npm run bench:live`: live connections on one compiled server (pinned to core 0) over
 * the embedded store, with this process (core 1) holding the sockets and writing, as
 * the benchmark asks:
 * - store reads per second of the live hub at 100, 1,000 and 10,000 subscribers on 100
 *   feeds (the multiplexing: the same), and at 10,000 feeds of one subscriber each (the
 *   bound), under `LIVE_FANOUT=feeds` and the default `auto`;
 * - delivery delay from a write's acknowledgement to each subscriber, p50 and p99;
 * - RSS growth per idle subscription, and the RSS in all;
 * - the write path's throughput (createPost) with the change log and without it (what
 *   the change log costs a write), and with 10,000 idle subscribers (what the polling
 *   costs it), pairs in turn on fresh servers, medians of three;
 * - fan-out at saturation: writes to a feed 100 subscribers follow, as fast as they go.
 * Writes `bench/results/live-latest.json` (ignored by git; recorded runs are kept in
 * `bench/results/recorded-live.json`). BENCH_LIVE_SECONDS sets each
 * measurement's length (default 10), BENCH_LIVE_RATE the writes per second during the
 * delay measurements (default 20), BENCH_LIVE_PARTS which parts run
 * (feeds,auto,writes,fanout).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { finishRun } from './results.js';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { build } from 'esbuild';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { authKey, signToken } from '../src/graphql/auth.js';
import { parseCli } from '../src/scripts/cli.js';
import { cpuMs, freePort, pinning } from './overhead.js';

parseCli(
  `usage: npm run bench:live

Benchmarks live connections on one compiled server over the embedded store (about 6
minutes on 2 cores) and writes bench/results/live-latest.json. Environment:
BENCH_LIVE_SECONDS (seconds per measurement, default 10), BENCH_LIVE_RATE (writes per
second while delays are measured, default 20).`,
  {},
);

const SECONDS = Number(process.env.BENCH_LIVE_SECONDS ?? 10);
const RATE = Number(process.env.BENCH_LIVE_RATE ?? 20);
const PARTS = new Set((process.env.BENCH_LIVE_PARTS ?? 'feeds,auto,writes,fanout').split(','));
const SECRET = 'bench-live-secret-0123456789-0123456789-abcd';
const CURSOR = 'bench-live-cursor-0123456789-0123456789-abcd';
const POLL_MS = 500;
const PER_SOCKET = 10;
const SUBSCRIPTION = `subscription ($a: ID!) { postsChanged(authorId: $a) { cursor addedEdge { cursor node { id content createdAt } } deletedPostId } }`;
const started = Date.now();
const dir = mkdtempSync(join(tmpdir(), 'bench-live-'));
const key = authKey(SECRET);

function progress(message: string): void {
  process.stderr.write(`[bench:live ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${message}\n`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const now = () => performance.timeOrigin + performance.now();

/** What the server prints each second. */
interface Stats {
  at: number;
  polls: number;
  reads: number;
  rows: number;
  delivered: number;
  shardPolls: number;
  feeds: number;
  subscriptions: number;
  sockets: number;
  rss: number;
}

/** A running bench server and its latest stats line. */
interface Server {
  readonly url: string;
  readonly process: ChildProcess;
  latest: Stats | null;
  /** The next stats line (one a second). */
  next(): Promise<Stats>;
  stop(): Promise<void>;
}

async function startServer(file: string, port: number, env: Record<string, string>, pin: string[]): Promise<Server> {
  const command = [...pin, process.execPath, '.bench-build/live-server.js'];
  const child = spawn(command[0]!, command.slice(1), {
    env: {
      ...process.env,
      NODE_ENV: 'production',
      PORT: String(port),
      HOST: '127.0.0.1',
      SQLITE_PATH: file,
      AUTH_SECRET: SECRET,
      CURSOR_SECRET: CURSOR,
      SEED_DEMO: 'false',
      LOG_LEVEL: 'warn',
      // The load comes from one address, far past any budget and any one principal's
      // share of the slots: both off, explicitly.
      RATE_LIMIT_POINTS: '0',
      MAX_IN_FLIGHT: '0',
      LIVE_POLL_MS: String(POLL_MS),
      // 10,000 subscriptions on one feed's worth of sockets: the per-socket limit is not what is measured.
      LIVE_MAX_SOCKETS: '20000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const waiters: Array<(s: Stats) => void> = [];
  let ready: (port: number) => void;
  const isReady = new Promise<number>((resolve) => (ready = resolve));
  const server: Server = {
    url: `http://127.0.0.1:${port}/graphql`,
    process: child,
    latest: null,
    next: () => new Promise((resolve) => waiters.push(resolve)),
    async stop() {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (!line.startsWith('{')) return;
    const parsed = JSON.parse(line) as Stats & { ready?: number };
    if (parsed.ready !== undefined) return ready(parsed.ready);
    if (parsed.at === undefined) return;
    server.latest = parsed;
    for (const w of waiters.splice(0)) w(parsed);
  });
  await Promise.race([isReady, new Promise((_, reject) => child.once('exit', () => reject(new Error('the bench server exited at start'))))]);
  return server;
}

async function gql(url: string, query: string, variables: Record<string, unknown>, token: string): Promise<any> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ query, variables }) });
  const body = (await res.json()) as { data?: unknown; errors?: unknown[] };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

/** `count` users (feeds), created `concurrency` at a time; their ids and tokens. */
async function createAuthors(url: string, count: number): Promise<Array<{ id: string; token: string }>> {
  const admin = await signToken(key, 'root', { admin: true, expiresIn: '1d' });
  const out: Array<{ id: string; token: string }> = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < count) {
        const i = next++;
        const username = `author_${i}`;
        const data = await gql(url, `mutation ($u: String!) { createUser(input: { username: $u, displayName: $u }) { user { id } } }`, { u: username }, admin);
        out[i] = { id: data.createUser.user.id, token: await signToken(key, username, { expiresIn: '1d' }) };
      }
    }),
  );
  return out;
}

/** Sockets holding subscriptions, and the delays of what they receive. */
class Subscribers {
  readonly clients: Client[] = [];
  private stops: Array<() => void> = [];
  /** Write acknowledgement times by post content, and the delays measured (ms). */
  readonly acked = new Map<string, number>();
  readonly delays: number[] = [];
  received = 0;

  constructor(private readonly url: string) {}

  /** Open `feedIds.length` subscriptions, PER_SOCKET per socket. */
  async open(feedIds: readonly string[]): Promise<void> {
    for (let s = 0; s < feedIds.length; s += PER_SOCKET) {
      const client = createClient({ url: this.url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, retryAttempts: 0, lazy: false });
      this.clients.push(client);
      for (const feed of feedIds.slice(s, s + PER_SOCKET)) {
        this.stops.push(
          client.subscribe<{ postsChanged: { addedEdge: { node: { content: string } } | null } }>(
            { query: SUBSCRIPTION, variables: { a: feed } },
            {
              next: (result) => {
                const content = result.data?.postsChanged.addedEdge?.node.content;
                this.received++;
                const at = content !== undefined ? this.acked.get(content) : undefined;
                if (at !== undefined) this.delays.push(now() - at);
              },
              error: (err) => progress(`subscription error: ${JSON.stringify(err).slice(0, 200)}`),
              complete: () => undefined,
            },
          ),
        );
      }
      if (s % 1_000 === 0) await sleep(0);
    }
  }

  async close(): Promise<void> {
    for (const stop of this.stops.splice(0)) stop();
    await Promise.all(this.clients.splice(0).map((c) => c.dispose()));
  }
}

/** Write `rate` posts a second to random feeds for `seconds`, recording each acknowledgement. */
async function write(url: string, authors: ReadonlyArray<{ token: string }>, rate: number, seconds: number, subscribers: Subscribers, tag: string): Promise<number> {
  const end = Date.now() + seconds * 1_000;
  let n = 0;
  const inFlight: Array<Promise<void>> = [];
  while (Date.now() < end) {
    const author = authors[Math.floor(Math.random() * authors.length)]!;
    const content = `${tag}-${n++}`;
    inFlight.push(
      gql(url, `mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`, { c: content }, author.token).then(() => {
        subscribers.acked.set(content, now());
      }),
    );
    await sleep(1_000 / rate);
  }
  await Promise.all(inFlight);
  return n;
}

function quantile(values: readonly number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** Store reads a second over `seconds`, from two stats lines. */
async function readsPerSecond(server: Server, seconds: number): Promise<{ reads: number; rows: number; polls: number; shardPolls: number }> {
  const first = await server.next();
  let last = first;
  for (let i = 0; i < seconds; i++) last = await server.next();
  const span = (last.at - first.at) / 1_000;
  return {
    reads: (last.reads - first.reads) / span,
    rows: (last.rows - first.rows) / span,
    polls: (last.polls - first.polls) / span,
    shardPolls: (last.shardPolls - first.shardPolls) / span,
  };
}

/** Subscribe `subscriptions` over `feeds` feeds (round robin), measure reads and delays under writes. */
async function scenario(
  server: Server,
  authors: readonly Author[],
  feeds: number,
  subscriptions: number,
  label: string,
): Promise<Record<string, unknown>> {
  const subscribers = new Subscribers(server.url);
  const feedIds = Array.from({ length: subscriptions }, (_, i) => authors[i % feeds]!.id);
  const before = (await server.next()).rss;
  await subscribers.open(feedIds);
  for (;;) {
    const s = await server.next();
    if (s.subscriptions >= subscriptions) break;
  }
  await sleep(2_000);
  const idle = await server.next();
  const idleReads = await readsPerSecond(server, SECONDS);
  progress(`${label}: idle ${idleReads.reads.toFixed(1)} reads/s; writing ${RATE}/s`);
  const writing = readsPerSecond(server, SECONDS);
  const written = await write(server.url, authors.slice(0, feeds), RATE, SECONDS, subscribers, label);
  const busy = await writing;
  await sleep(POLL_MS * 3);
  const end = await server.next();
  await subscribers.close();
  const result = {
    feeds,
    subscriptions,
    sockets: Math.ceil(subscriptions / PER_SOCKET),
    idleReadsPerSecond: round(idleReads.reads),
    writingReadsPerSecond: round(busy.reads),
    rowsReadPerSecond: round(busy.rows),
    shardPollShare: round(busy.shardPolls / Math.max(busy.polls, 1)),
    written,
    delivered: subscribers.delays.length,
    expectedDeliveries: written * (subscriptions / feeds),
    delayMs: { p50: round(quantile(subscribers.delays, 0.5)), p99: round(quantile(subscribers.delays, 0.99)), max: round(quantile(subscribers.delays, 1)) },
    rssBeforeMB: round(before / 2 ** 20),
    rssIdleMB: round(idle.rss / 2 ** 20),
    rssEndMB: round(end.rss / 2 ** 20),
    rssPerIdleSubscriptionKB: round((idle.rss - before) / subscriptions / 1024),
  };
  progress(`${label}: ${JSON.stringify(result)}`);
  return result;
}

function round(n: number | null): number | null {
  return n === null ? null : Math.round(n * 100) / 100;
}

/** What a write load gave: throughput, latency, and the server's CPU per write. */
interface WriteLoad {
  readonly requestsPerSecond: number;
  readonly p99: number;
  readonly errors: number;
  /** Server CPU (user + system) per completed write: what a write costs the server, whatever limited the load. */
  readonly cpuMsPerWrite: number | null;
}

/** createPost at concurrency 16 for SECONDS, as the first of `authors`. */
async function writeThroughput(server: Server, authors: readonly Author[]): Promise<WriteLoad> {
  const pid = server.process.pid!;
  const before = cpuMs(pid);
  const result = await autocannon({
    url: server.url,
    method: 'POST',
    connections: 16,
    duration: SECONDS,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${authors[0]!.token}` },
    body: JSON.stringify({ query: `mutation { createPost(input: { content: "throughput" }) { post { id } } }` }),
  });
  const after = cpuMs(pid);
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
    cpuMsPerWrite: before === null || after === null || result.requests.total === 0 ? null : round((after - before) / result.requests.total),
  };
}

/** A server per measurement, over one file: its RSS is its own. */
type Run = (env: Record<string, string>, body: (server: Server) => Promise<void>) => Promise<void>;
/** A feed's author: their user id, and a token to post as them. */
type Author = { id: string; token: string };

/** Reads, delays and memory at 100, 1,000 and 10,000 subscribers on 100 feeds, and at 10,000 feeds. */
async function subscriptionsPart(run: Run, authors: readonly Author[], fanout: 'feeds' | 'auto'): Promise<Record<string, unknown>> {
  const rows: Record<string, unknown> = {};
  for (const subscriptions of [100, 1_000, 10_000]) {
    await run({ LIVE_FANOUT: fanout }, async (server) => {
      rows[`100 feeds, ${subscriptions} subscriptions`] = await scenario(server, authors, 100, subscriptions, `${fanout}, 100 feeds x ${subscriptions}`);
    });
  }
  await run({ LIVE_FANOUT: fanout }, async (server) => {
    rows['10,000 feeds, 10,000 subscriptions'] = await scenario(server, authors, 10_000, 10_000, `${fanout}, 10,000 feeds`);
  });
  return rows;
}

/** The median of some numbers. */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * The write path: createPost throughput with the change log against without it (the
 * change log's cost on a write), and with 10,000 subscribers on 100 feeds the writes do
 * not touch against none (what live subscribers cost the writes: the polling). Each
 * pair in turn on fresh servers, WRITE_ROUNDS times, ratios per pair, medians quoted.
 */
async function writesPart(run: Run, authors: readonly Author[]): Promise<Record<string, unknown>> {
  const WRITE_ROUNDS = 3;
  const writers = authors.slice(5_000);
  const measure = async (env: Record<string, string>, subscriptions: number) => {
    let throughput: WriteLoad = { requestsPerSecond: 0, p99: 0, errors: 0, cpuMsPerWrite: null };
    await run(env, async (server) => {
      const subscribers = new Subscribers(server.url);
      if (subscriptions > 0) {
        await subscribers.open(Array.from({ length: subscriptions }, (_, i) => authors[i % 100]!.id));
        await sleep(3_000);
      }
      throughput = await writeThroughput(server, writers);
      await subscribers.close();
    });
    return throughput;
  };
  const rounds: Array<Record<string, WriteLoad>> = [];
  for (let round = 0; round < WRITE_ROUNDS; round++) {
    progress(`write path, round ${round + 1} of ${WRITE_ROUNDS}`);
    rounds.push({
      withChangeLog: await measure({}, 0),
      withoutChangeLog: await measure({ BENCH_NO_CHANGE_LOG: '1' }, 0),
      with10000IdleSubscribers: await measure({}, 10_000),
    });
  }
  // Throughput lost, and server CPU added per write, each pair's own ratio, the median quoted.
  const lost = (a: string, b: string) => round(1 - median(rounds.map((r) => r[a]!.requestsPerSecond / r[b]!.requestsPerSecond)));
  const added = (a: string, b: string) => round(median(rounds.map((r) => r[a]!.cpuMsPerWrite! / r[b]!.cpuMsPerWrite!)) - 1);
  const writes = {
    rounds,
    changeLog: { throughputLost: lost('withChangeLog', 'withoutChangeLog'), cpuPerWriteAdded: added('withChangeLog', 'withoutChangeLog') },
    idleSubscribers: { throughputLost: lost('with10000IdleSubscribers', 'withChangeLog'), cpuPerWriteAdded: added('with10000IdleSubscribers', 'withChangeLog') },
  };
  progress(`writes: change log ${JSON.stringify(writes.changeLog)}, 10,000 idle subscribers ${JSON.stringify(writes.idleSubscribers)}`);
  return writes;
}

/**
 * Fan-out at saturation: writes as fast as the server takes them to one feed with 100
 * subscribers; every write is 100 deliveries. On two cores the sockets live in this
 * process, so this says how many deliveries a second one server plus its clients
 * sustain, not the server alone.
 */
async function fanOutPart(run: Run, authors: readonly Author[]): Promise<Record<string, unknown>> {
  let out: Record<string, unknown> = {};
  await run({}, async (server) => {
    const subscribers = new Subscribers(server.url);
    await subscribers.open(Array.from({ length: 100 }, () => authors[0]!.id));
    await sleep(3_000);
    const before = subscribers.received;
    const writes = await writeThroughput(server, authors.slice(0, 1));
    await sleep(POLL_MS * 4);
    out = { writesPerSecond: writes.requestsPerSecond, deliveriesPerSecond: Math.round((subscribers.received - before) / SECONDS), writeP99: writes.p99 };
    await subscribers.close();
  });
  progress(`fan-out: ${JSON.stringify(out)}`);
  return out;
}

async function main(): Promise<void> {
  progress(`machine: ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const pin = pinning();
  progress('building the bench server (esbuild)');
  await build({ entryPoints: { 'live-server': 'bench/servers/live-server.ts' }, outdir: '.bench-build', bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', logLevel: 'warning' });
  const results: Record<string, unknown> = {
    machine: { cores: cpus().length, cpu: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, date: new Date().toISOString(), loadAverageAtStart: loadavg(), pinned: pin.pinned },
    settings: { seconds: SECONDS, writesPerSecond: RATE, pollMs: POLL_MS, subscriptionsPerSocket: PER_SOCKET },
  };
  const file = join(dir, 'live.db');
  const run: Run = async (env, body) => {
    const server = await startServer(file, await freePort(), env, pin.server);
    try {
      await body(server);
    } finally {
      await server.stop();
    }
  };
  let authors: Author[] = [];
  await run({}, async (server) => {
    progress('creating 10,000 authors (feeds)');
    authors = await createAuthors(server.url, 10_000);
  });
  for (const fanout of ['feeds', 'auto'] as const) if (PARTS.has(fanout)) results[`fanout=${fanout}`] = await subscriptionsPart(run, authors, fanout);
  if (PARTS.has('writes')) results.writes = await writesPart(run, authors);
  if (PARTS.has('fanout')) results.fanOut = await fanOutPart(run, authors);
  finishRun('live-latest.json', results, started);
  rmSync(dir, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  rmSync(dir, { recursive: true, force: true });
  process.exit(1);
});
