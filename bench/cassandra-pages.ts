/**
 * The parts of `npm run bench:cassandra` that its profile (bench/profile-cassandra.ts)
 * runs too: the fixture, the two pages as a request makes them, recording what a page
 * sends and replaying it with the driver alone (the ceiling), and a closed loop.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import cassandra from 'cassandra-driver';
import { createRequestContext, type Services } from '../src/composition-root.js';
import type { RequestLoader } from '../src/graphql/loaders.js';
import { oneLine } from '../src/store/cassandra/cassandra-errors.js';
import type { CassandraClientLike, CassandraResultLike } from '../src/store/cassandra/cassandra-store.js';
import type { Workload } from './fixture.js';
import { cpuMs } from './overhead.js';
import { quantile } from './unique-counter.js';

/** The admin the suspendedUsers page and the fixture act as. */
export const ADMIN = { username: 'root', isAdmin: true };

/** Users suspended in the fixture (a 50-edge page has a next one). */
const SUSPENDED = 60;

/** The fixture: "bench" with 100 posts, and 60 suspended users, written through the features. */
export async function preparePagesFixture(services: Services): Promise<void> {
  const setup = createRequestContext(services, ADMIN);
  const bench = await setup.users.create({ username: 'bench', displayName: 'Bench Mark' });
  for (let i = 0; i < 100; i++) await setup.timeline.createPost(bench.id, `benchmark post number ${i}`, new Date(Date.now() - (100 - i) * 60_000));
  for (let i = 0; i < SUSPENDED; i++) {
    const u = await setup.users.create({ username: `suspended_${i}`, displayName: `Suspended ${i}` });
    await setup.suspensions.suspend({ userId: u.id, reason: `reason ${i}`, suspendedAt: new Date(Date.now() - (i + 1) * 60_000) });
  }
}

/** Pids of the Cassandra processes on this machine (a local node or ring), to read their CPU. */
export function cassandraPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('org.apache.cassandra.service.CassandraDaemon')) pids.push(Number(entry));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return pids;
}

/** CPU ms used so far by every local Cassandra process (null when none is visible). */
export function cassandraCpuMs(pids: readonly number[]): number | null {
  if (pids.length === 0) return null;
  let total = 0;
  for (const pid of pids) total += cpuMs(pid) ?? 0;
  return total;
}

// ---- recording what a page sends, and sending it again with the driver alone ------

/** A statement the product sent, and how many of the page's statements had completed when it did. */
export interface Recorded {
  readonly query: string;
  readonly params: unknown[];
  readonly options: cassandra.QueryOptions;
  readonly after: number;
}

/**
 * A statement's options as a plain caller of the driver gives them: without the routing
 * key the adapter sends with a keyed read (its partition's token, kept from an earlier
 * read: cassandra-routing.ts). That is ours' use of the driver, not the statement: the
 * driver alone works out each statement's replicas from its parameters, as a caller who
 * names no routing key has the driver do (issue 39, round five).
 */
function naiveOptions(options: cassandra.QueryOptions): cassandra.QueryOptions {
  const { routingKey: _ours, ...plain } = options;
  return plain;
}

/** A driver client that, while recording, keeps every statement sent and when. */
export class StatementRecorder implements CassandraClientLike {
  private recorded: Recorded[] | null = null;
  private completed = 0;
  constructor(private readonly client: CassandraClientLike) {}
  get metadata() {
    return this.client.metadata;
  }
  connect() {
    return this.client.connect();
  }
  shutdown() {
    return this.client.shutdown();
  }
  batch(queries: Array<{ query: string; params?: unknown[] }>, options?: cassandra.QueryOptions): Promise<CassandraResultLike> {
    if (this.recorded) throw new Error('a page sent a batch: the ceiling replays reads only');
    return this.client.batch(queries, options);
  }
  async execute(query: string, params: unknown[] = [], options: cassandra.QueryOptions = {}): Promise<CassandraResultLike> {
    const recording = this.recorded;
    recording?.push({ query, params, options: naiveOptions(options), after: this.completed });
    try {
      return await this.client.execute(query, params, options);
    } finally {
      if (recording) this.completed++;
    }
  }
  /**
   * What `op` sends, run warm: it runs once unrecorded first. A store starts its first
   * pass over its batchlog as it starts (`ensureTables`), and that pass's read was
   * recorded with the page: the driver alone replayed 104 statements a
   * `suspendedUsers` page, ours sent 103 (issue 39, round three).
   */
  async record(op: () => Promise<unknown>): Promise<Recorded[]> {
    await op();
    this.recorded = [];
    this.completed = 0;
    try {
      await op();
      return this.recorded;
    } finally {
      this.recorded = null;
    }
  }
}

/**
 * The ceiling: send `statements` with the bare driver, each as soon as as many of them
 * have completed as had when the product sent it (its own dependencies, its own
 * parallelism), and nothing else: no rows converted, no cursors, no loaders.
 */
export function replay(client: cassandra.Client, statements: readonly Recorded[]): Promise<void> {
  return new Promise((resolve, reject) => {
    let completed = 0;
    let next = 0;
    const pump = () => {
      while (next < statements.length && statements[next]!.after <= completed) {
        const s = statements[next++]!;
        client.execute(s.query, s.params, s.options).then(() => {
          if (++completed === statements.length) resolve();
          else pump();
        }, reject);
      }
    };
    pump();
  });
}

// ---- the pages, as a request makes them --------------------------------------------

/**
 * The values of `keys`, asked for one by one as the resolvers ask (`loadNow`: a value
 * the request already holds comes at once, the rest in one batch).
 */
async function asResolvers<V>(loader: RequestLoader<string, V>, keys: readonly string[]): Promise<V[]> {
  const found = keys.map((key) => loader.loadNow(key));
  return found.some((f) => f instanceof Promise) ? Promise.all(found) : (found as V[]);
}

/** The timeline page: the user by name, the user, 20 posts (a 21-row slice) and their author. */
export async function timelinePage(services: Services): Promise<void> {
  const ctx = createRequestContext(services, null);
  const id = await ctx.loaders.userIdByUsername.load('bench');
  // As `userByUsername` with `posts` selected does: the user's row and the page in one wave.
  const [user, page] = await Promise.all([ctx.loaders.userById.load(id!), ctx.timeline.posts(id!, { first: 20 })]);
  if (!user) throw new Error('timeline page: no user row');
  const authors = await asResolvers(ctx.loaders.userById, page.edges.map((e) => e.node.authorId));
  if (page.edges.length !== 20 || authors.some((a) => !a)) throw new Error(`timeline page: ${page.edges.length} edges`);
}

/** A 50-edge `suspendedUsers` page with each suspension's user and that user's suspension. */
export async function suspendedPage(services: Services): Promise<void> {
  const ctx = createRequestContext(services, ADMIN);
  const page = await ctx.suspensions.page({ first: 50 });
  const ids = page.edges.map((e) => e.node.userId);
  const [users, suspensions] = await Promise.all([asResolvers(ctx.loaders.userById, ids), asResolvers(ctx.loaders.suspensionByUserId, ids)]);
  if (page.edges.length !== 50 || [...users, ...suspensions].some((x) => !x)) {
    throw new Error(`suspendedUsers page: ${page.edges.length} edges`);
  }
}

/**
 * What signing a page's cursors costs: a function that signs the keys of the page's
 * edges again, with the page's connection (the codec's work for that page and nothing
 * else), for the bound that signing puts on ours / the ceiling.
 */
export async function pageCursors(services: Services, page: 'timeline' | 'suspended'): Promise<() => number> {
  const ctx = createRequestContext(services, ADMIN);
  let connection: string;
  let cursors: string[];
  if (page === 'timeline') {
    const id = (await ctx.loaders.userIdByUsername.load('bench'))!;
    connection = `User.posts:${id}`;
    cursors = (await ctx.timeline.posts(id, { first: 20 })).edges.map((e) => e.cursor);
  } else {
    connection = 'Query.suspendedUsers';
    cursors = (await ctx.suspensions.page({ first: 50 })).edges.map((e) => e.cursor);
  }
  const { codec } = services;
  const keys = cursors.map((c) => codec.decodeCursor(connection, c) ?? fail(`a ${page} cursor is not of connection ${connection}`));
  return () => keys.reduce((n, key) => n + codec.encodeCursor(connection, key).length, 0);
}

function fail(message: string): never {
  throw new Error(message);
}

/** CPU ms per call of `op`, over `times` calls. */
export function cpuMsPerCall(op: () => unknown, times: number): number {
  for (let i = 0; i < Math.min(times, 200); i++) op();
  const before = process.cpuUsage();
  for (let i = 0; i < times; i++) op();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / times;
}

const SUSPENDED_QUERY = `{ suspendedUsers(first: 50) { edges { cursor node { reason suspendedAt
  user { username displayName suspension { reason } } } } pageInfo { hasNextPage endCursor } } }`;

/** The same page over HTTP, as an admin. */
export function suspendedWorkload(token: string): Workload {
  return {
    name: 'suspendedUsers (50 edges)',
    body: JSON.stringify({ query: SUSPENDED_QUERY }),
    headers: { authorization: `Bearer ${token}` },
    check(response) {
      const edges = (response as { data?: { suspendedUsers?: { edges: Array<{ node: { user: { suspension: unknown } } }> } } }).data?.suspendedUsers?.edges;
      return edges?.length === 50 && edges.every((e) => e.node.user.suspension) ? null : `expected 50 edges, got ${JSON.stringify(response).slice(0, 200)}`;
    },
  };
}

// ---- a closed loop -------------------------------------------------------------------

/** What `concurrency` loops of `op` for a while gave. */
export interface LoopFigures {
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** This process's CPU (user + system) per operation. */
  readonly cpuMsPerOp: number;
  /** Local Cassandra processes' CPU per operation (null when none is visible). */
  readonly cassandraCpuMsPerOp: number | null;
  readonly errors: number;
  readonly firstError?: string;
}

/** `concurrency` loops of `op` for `seconds`; `pids` are the Cassandra processes whose CPU to read. */
export async function closedLoop(op: () => Promise<unknown>, seconds: number, concurrency: number, pids: readonly number[]): Promise<LoopFigures> {
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const cpu = process.cpuUsage();
  const dbBefore = cassandraCpuMs(pids);
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const s = performance.now();
        try {
          await op();
          latencies.push(performance.now() - s);
        } catch (err) {
          errors++;
          firstError ??= oneLine(err);
        }
      }
    }),
  );
  const wall = (performance.now() - t0) / 1000;
  const used = process.cpuUsage(cpu);
  const dbAfter = cassandraCpuMs(pids);
  latencies.sort((a, b) => a - b);
  const n = Math.max(latencies.length, 1);
  return {
    perSecond: Math.round(latencies.length / wall),
    p50Ms: +quantile(latencies, 0.5).toFixed(2),
    p99Ms: +quantile(latencies, 0.99).toFixed(2),
    cpuMsPerOp: +((used.user + used.system) / 1000 / n).toFixed(3),
    cassandraCpuMsPerOp: dbBefore === null || dbAfter === null ? null : +((dbAfter - dbBefore) / n).toFixed(3),
    errors,
    ...(firstError ? { firstError } : {}),
  };
}
