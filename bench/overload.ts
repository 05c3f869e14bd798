/**
 * A flood from one client while another user works (issue 37), shared by the flood
 * test (test/graphql/flood.test.ts) and `BENCH_SECTIONS=overload` of `npm run bench`.
 * One token sends a 100-edge timeline page with each post's author on hundreds of
 * connections (autocannon, in a worker thread of its own, only to 127.0.0.1), while
 * another user sends a light query every 100 ms from this thread. Reported: the other
 * user's success and latency, what the flooder was served and refused, the server's
 * peak resident memory, whether it lost its presence, and a check afterwards.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';

/** The flooder's query: the 100-edge timeline page with each post's author. */
export const FLOOD_QUERY = `query Flood($u: String!) { userByUsername(username: $u) { posts(first: 100) { edges { cursor node { id content createdAt author { id username displayName } } } } } }`;

/** The other user's light query. */
export const LIGHT_QUERY = `query Light { viewer { id username displayName } }`;

/** A server under the flood: where it answers, its process, and what it logged. */
export interface FloodTarget {
  /** The `/graphql` URL, on 127.0.0.1. */
  readonly url: string;
  readonly pid: number;
  /** Everything the server has logged so far (presence loss is logged). */
  readonly output: () => string;
}

/** What `runFlood` does. */
export interface FloodOptions {
  readonly seconds: number;
  /** The flooder's connections (hundreds). */
  readonly connections: number;
  readonly floodToken: string;
  /** The username whose timeline the flooder pages. */
  readonly floodUsername: string;
  readonly otherToken: string;
  /** How often the other user sends (default 100 ms). */
  readonly intervalMs?: number;
}

/** Percentiles and counts of the other user's requests. */
export interface UserReport {
  readonly sent: number;
  readonly succeeded: number;
  readonly successRate: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** What one flood showed. */
export interface FloodReport {
  readonly other: UserReport;
  readonly flooder: { readonly sent: number; readonly served: number; readonly rateLimited: number; readonly busy: number; readonly failed: number };
  /** The server's peak resident memory over its life (VmHWM), in MB. */
  readonly peakRssMb: number;
  /** Whether the server logged the loss of its presence (or a failed renewal). */
  readonly presenceLost: boolean;
  /** The other user's requests once the flood had stopped. */
  readonly after: UserReport;
}

const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!);

/**
 * The other user's connections: three, kept alive and used in turn (so none idles into
 * the server's keep-alive timeout), as an app's are. A new connection opened during a
 * flood waits for the server to accept it, which on Node happens late while hundreds of
 * connections keep its event loop busy (measured: seconds, with or without the limits;
 * a plain node:http server shows the same), so what is measured is the server's answer
 * to a client that is already connected.
 */
const agent = new Agent({ keepAlive: true, maxSockets: 3, scheduling: 'fifo' });

/** POST a query; its status and whether it was a whole answer (200, data, no errors). */
function send(url: string, query: string, token: string, variables?: object): Promise<{ ok: boolean; ms: number; status: number }> {
  const started = performance.now();
  const body = JSON.stringify({ query, variables });
  return new Promise((resolve) => {
    const done = (ok: boolean, status: number) => resolve({ ok, ms: performance.now() - started, status });
    const req = request(url, { method: 'POST', agent, timeout: 10_000, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: `Bearer ${token}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        try {
          const answer = JSON.parse(text) as { data?: unknown; errors?: unknown };
          done(res.statusCode === 200 && answer.data != null && answer.errors === undefined, res.statusCode ?? 0);
        } catch {
          done(false, res.statusCode ?? 0);
        }
      });
      res.on('error', () => done(false, 0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => done(false, 0));
    req.end(body);
  });
}

/** The other user's light query every `intervalMs` until `until` (epoch ms), one at a time or overlapping as the latency goes. */
async function work(url: string, token: string, until: number, intervalMs: number): Promise<UserReport> {
  const pending: Array<Promise<{ ok: boolean; ms: number }>> = [];
  while (Date.now() < until) {
    pending.push(send(url, LIGHT_QUERY, token));
    await sleep(intervalMs);
  }
  const results = await Promise.all(pending);
  if (process.env.FLOOD_TRACE) console.error(`other user's latencies (ms): ${results.map((r) => Math.round(r.ms)).join(' ')}`);
  const times = results.map((r) => r.ms).sort((a, b) => a - b);
  const succeeded = results.filter((r) => r.ok).length;
  return { sent: results.length, succeeded, successRate: results.length === 0 ? 0 : succeeded / results.length, p50Ms: percentile(times, 50), p99Ms: percentile(times, 99) };
}

function peakRssMb(pid: number): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

/** Lines a server logs when its presence is in danger (src/background/presence.ts). */
export const PRESENCE_LOSS = /lost its clock node|renewing this process presence failed/;

/** Make the flooder's timeline (100 posts) and both users; the flooder's token must be an admin's or the user's own. */
export async function seedFlood(url: string, users: Array<{ token: string; username: string }>, posts = 100): Promise<void> {
  for (const { token, username } of users) {
    const created = await send(url, `mutation ($u: String!) { createUser(input: { username: $u, displayName: "Flood ${username}" }) { user { id } } }`, token, { u: username });
    if (!created.ok) throw new Error(`could not create ${username}: status ${created.status}`);
  }
  const author = users[0]!;
  for (let i = 0; i < posts; i++) {
    const made = await send(url, `mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`, author.token, { c: `flood post ${i}` });
    if (!made.ok) throw new Error(`could not create post ${i}: status ${made.status}`);
  }
}

/** Flood `target` for `options.seconds` while the other user works; then check it serves normally. */
export async function runFlood(target: FloodTarget, options: FloodOptions): Promise<FloodReport> {
  const intervalMs = options.intervalMs ?? 100;
  const logged = target.output().length;
  // The other user's connections are open before the flood, as an app's would be.
  await Promise.all([0, 1, 2].map(() => send(target.url, LIGHT_QUERY, options.otherToken)));
  // (FLOOD_TRACE=1 prints each of the other user's latencies, in order.)
  const until = Date.now() + options.seconds * 1000;
  const flood = autocannon({
    url: target.url,
    connections: options.connections,
    duration: options.seconds,
    // Its own thread: the other user's latency is the server's, not this thread's.
    workers: 1,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${options.floodToken}` },
    body: JSON.stringify({ query: FLOOD_QUERY, variables: { u: options.floodUsername } }),
  });
  // Let the flood's connections open before the other user starts.
  await sleep(200);
  const other = await work(target.url, options.otherToken, until, intervalMs);
  const result = await flood;
  const codes = result.statusCodeStats as Record<string, { count: number }>;
  const count = (code: string) => codes[code]?.count ?? 0;
  const sent = Object.values(codes).reduce((sum, { count: n }) => sum + n, 0);
  // Afterwards: a pause, then normal service for the other user.
  await sleep(1_000);
  const after = await work(target.url, options.otherToken, Date.now() + 2_000, intervalMs);
  return {
    other,
    flooder: { sent, served: count('200'), rateLimited: count('429'), busy: count('503'), failed: sent - count('200') - count('429') - count('503') + result.errors },
    peakRssMb: peakRssMb(target.pid),
    presenceLost: PRESENCE_LOSS.test(target.output().slice(logged)),
    after,
  };
}

/** The flood with the limits on (the defaults) and off (`RATE_LIMIT_POINTS=0`, `MAX_IN_FLIGHT=0`), for `npm run bench`. */
export async function runOverload(
  start: (env: Record<string, string>) => Promise<FloodTarget & { stop(): Promise<void> }>,
  tokens: { flood: { username: string; token: string }; other: { username: string; token: string } },
  options: { seconds: number; connections: number },
  progress: (message: string) => void,
  row: (figure: string, value: string, target?: string, met?: boolean | null) => void,
): Promise<Record<'on' | 'off', FloodReport>> {
  const modes = { on: {}, off: { RATE_LIMIT_POINTS: '0', MAX_IN_FLIGHT: '0' } } as const;
  const reports = {} as Record<'on' | 'off', FloodReport>;
  for (const mode of ['on', 'off'] as const) {
    progress(`overload: limits ${mode}, ${options.connections} connections for ${options.seconds} s`);
    const server = await start(modes[mode]);
    try {
      await seedFlood(server.url, [tokens.flood, tokens.other]);
      reports[mode] = await runFlood(server, {
        seconds: options.seconds,
        connections: options.connections,
        floodToken: tokens.flood.token,
        floodUsername: tokens.flood.username,
        otherToken: tokens.other.token,
      });
    } finally {
      await server.stop();
    }
    const r = reports[mode];
    const on = mode === 'on';
    row(`overload, limits ${mode}: other user's success`, `${(r.other.successRate * 100).toFixed(1)}% of ${r.other.sent}`, on ? '>= 99%' : '', on ? r.other.successRate >= 0.99 : null);
    row(`overload, limits ${mode}: other user's p50 / p99`, `${r.other.p50Ms.toFixed(1)} / ${r.other.p99Ms.toFixed(1)} ms`, on ? '<= 50 / 250 ms' : '', on ? r.other.p50Ms <= 50 && r.other.p99Ms <= 250 : null);
    row(`overload, limits ${mode}: flooder served / refused 429 / 503`, `${r.flooder.served} / ${r.flooder.rateLimited} / ${r.flooder.busy} (of ${r.flooder.sent})`);
    row(`overload, limits ${mode}: peak RSS, presence`, `${r.peakRssMb.toFixed(0)} MB, ${r.presenceLost ? 'LOST' : 'kept'}`, on ? '<= 400 MB, kept' : '', on ? r.peakRssMb <= 400 && !r.presenceLost : null);
  }
  return reports;
}
