/**
 * Jump to page N (`offset`, BENCH_SECTIONS=jump): a timeline of 1,000,000 posts on the
 * embedded store (BENCH_JUMP_POSTS), and of 100,000 on Cassandra when
 * CASSANDRA_CONTACT_POINTS names one (BENCH_JUMP_CASSANDRA_POSTS), one post a
 * millisecond, counted and settled (its counted index rebuilt from the ledger, as a
 * recount does). For offsets 0, 10^3, 10^5 and 10^6 (and the last page, and a deep page
 * backward and from a cursor): the waves of store calls a page waits for (calls made
 * together share one round trip of latency) on its first visit and once the index's
 * lists it reads are kept (`RankCache`), the calls, and the median time in process,
 * against the first page timed in turn with it (`timeInTurn`) (and SQL OFFSET on the same table, on the embedded store); the
 * deep page where the process keeps no list, and a new deep page every time; the
 * first page and the deep one through GraphQL in process (resolvers and cursors, no
 * HTTP). Then the write side: createPost's store calls and time (the index adds nothing
 * to it: the verifier keeps it), and what the verifier's settlement of about 1,000 new
 * posts costs with the index and without. Then the other three counted connections
 * (jump-connections.ts).
 */
import { performance } from 'node:perf_hooks';
import { makeExecutableSchema } from '@graphql-tools/schema';
import Database from 'better-sqlite3';
import { graphql } from 'graphql';
import pino from 'pino';
import { typeDefs } from '../src/app.js';
import { ALL_TABLES, createRequestContext, createServices, rankedCounts } from '../src/composition-root.js';
import { resolvers } from '../src/graphql/resolvers/index.js';
import { noRanks, settleFully, settleIncrementally } from '../src/counts/connection-counts.js';
import { countItemsTable } from '../src/counts/count-tables.js';
import { postsCountKey } from '../src/features/timeline/timeline.js';
import { timelineTable } from '../src/features/timeline/timeline-tables.js';
import { MAX_TIMESTAMP, type Mutation } from '../src/store/port.js';
import { encodePartition } from '../src/store/sqlite/sqlite-keys.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { microsOfTimeuuid, newTimeuuid } from '../src/store/timeuuid.js';
import { JOB_WINDOW_MS } from '../src/background/windowed-job.js';
import type { Store } from '../src/store/port.js';
import { onCassandraKeyspace } from './cassandra-keyspace.js';
import { measureJumpConnections } from './jump-connections.js';
import { pageBySqlOffset } from './offset-baseline.js';
import { RankCache } from '../src/paging/ranked-index.js';
import { positive } from './settings.js';
import { WaveCountingStore } from './waves.js';

/** Posts of the embedded store's timeline. */
const POSTS = Math.round(positive('BENCH_JUMP_POSTS', 1_000_000));
const OFFSETS = [0, 1_000, 100_000, 1_000_000];
const RUNS = 200;
/** A page of the bench's author through GraphQL. */
const PAGE_QUERY = `query ($offset: Int) { userByUsername(username: "jumper") { posts(first: 20, offset: $offset) {
  edges { cursor node { id content createdAt } } pageInfo { hasNextPage hasPreviousPage endCursor } } } }`;

/** Median and p99 of `runs` timings of `fn`, in ms. */
export async function time(runs: number, fn: () => Promise<unknown> | unknown) {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    samples.push(performance.now() - t);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  return { medianMs: +at(0.5).toFixed(3), p99Ms: +at(0.99).toFixed(3) };
}

/**
 * `fn` and the first page `first` timed in turn, one of each a round, `runs` rounds:
 * a burst of load elsewhere on the machine (other processes share its cores) slows both
 * alike rather than the case it lands on, and a case's ratio is over the first page of
 * its own rounds (`firstPageMs`), not over one first page timed once at the start, right
 * after the fill, when the store's caches were cold. Medians (and `fn`'s p99), ms.
 */
export async function timeInTurn(runs: number, first: () => Promise<unknown>, fn: () => Promise<unknown>) {
  const pages: number[] = [];
  const firsts: number[] = [];
  for (let run = 0; run < runs; run++) {
    const t = performance.now();
    await first();
    const u = performance.now();
    await fn();
    pages.push(performance.now() - u);
    firsts.push(u - t);
  }
  const at = (samples: number[], q: number) => {
    samples.sort((a, b) => a - b);
    return +samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!.toFixed(3);
  };
  return { medianMs: at(pages, 0.5), p99Ms: at(pages, 0.99), firstPageMs: at(firsts, 0.5) };
}

/** Where the jump section runs: a store, and what it is called in the figures. */
export interface JumpTarget {
  readonly name: string;
  readonly base: Store;
  readonly posts: number;
  /** Write a slice of posts' rows (timeline and ledger), as the store takes them best. */
  write(mutations: Mutation[]): Promise<void>;
  /** SQL OFFSET's time for a page at `offset`, where there is SQL. */
  sqlOffset?: (author: string, offset: number, runs: number) => Promise<{ medianMs: number }>;
}

/** The jump section on the embedded store (a file in `file`). */
export async function runJump(
  file: string,
  progress: (m: string) => void,
  row: (figure: string, value: string, target?: string, met?: boolean | null) => void,
) {
  const db = new Database(file);
  const base = new SqliteStore({ database: db });
  await base.ensureTables(ALL_TABLES);
  try {
    return await measureJump(
      {
        name: 'embedded',
        base,
        posts: POSTS,
        write: (mutations) => base.batch(mutations),
        sqlOffset: (author, offset, runs) => time(runs, () => pageBySqlOffset(db, encodePartition(timelineTable, { user_id: author }), offset / 20 + 1)),
      },
      progress,
      row,
    );
  } finally {
    await base.close();
  }
}

/**
 * The jump section on Cassandra, when CASSANDRA_CONTACT_POINTS names one that answers:
 * BENCH_JUMP_CASSANDRA_POSTS posts (default 100,000), in a keyspace of its own, dropped
 * at the end. Null when none is named.
 */
export async function runJumpOnCassandra(
  progress: (m: string) => void,
  row: (figure: string, value: string, target?: string, met?: boolean | null) => void,
) {
  return onCassandraKeyspace('bench_jump', progress, (base) =>
    measureJump(
      {
        name: 'Cassandra',
        base,
        posts: Math.round(positive('BENCH_JUMP_CASSANDRA_POSTS', 100_000)),
        write: (mutations) => writeConcurrently(base, mutations),
      },
      progress,
      row,
    ),
  );
}

/** Write rows on Cassandra: one statement each, 64 at a time (a logged batch of thousands of rows is refused). */
export async function writeConcurrently(base: Store, mutations: readonly Mutation[]): Promise<void> {
  for (let at = 0; at < mutations.length; at += 64) {
    await Promise.all(mutations.slice(at, at + 64).map((m) => (m.kind === 'upsert' ? base.upsert(m.table, m.row, m.options) : base.batch([m]))));
  }
}

/** The figures of the jump section on one store (see the file comment). */
async function measureJump(
  target: JumpTarget,
  progress: (m: string) => void,
  row: (figure: string, value: string, target?: string, met?: boolean | null) => void,
) {
  const { base, posts: POSTS } = target;
  const DEEP = Math.min(100_000, Math.floor(POSTS / 4));
  const name = target.name;
  const store = new WaveCountingStore(base);
  const settings = { cursorSecret: 'bench-cursor-secret-0123456789', suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins' } as const;
  const services = createServices(settings, { store, logger: pino({ level: 'silent' }) });
  const AUTHOR = (await createRequestContext(services, { username: 'root', isAdmin: true }).users.create({ username: 'jumper', displayName: 'Jumper' })).id;
  const start = Date.UTC(2025, 0, 1);
  const key = postsCountKey(AUTHOR);
  // The posts and their ledger cells, as createPost writes them (the rest of its batch,
  // the change log and the live cells, is not what a page reads).
  for (let i = 0; i < POSTS; i += 1_000) {
    const batch: Mutation[] = [];
    for (let k = i; k < Math.min(POSTS, i + 1_000); k++) {
      const postId = newTimeuuid(start + k);
      const micros = microsOfTimeuuid(postId);
      batch.push({ kind: 'upsert', table: timelineTable, row: { user_id: AUTHOR, post_id: postId, content: `post ${k}` }, options: { timestamp: micros } });
      batch.push({ kind: 'upsert', table: countItemsTable, row: { count_key: key, item: postId, added_at: micros }, options: { timestamp: MAX_TIMESTAMP - micros } });
    }
    await target.write(batch);
    if (i % 100_000 === 0) progress(`jump (${name}): wrote ${i.toLocaleString()} of ${POSTS.toLocaleString()} posts`);
  }
  const settledAt = Date.now();
  const settleStarted = performance.now();
  await settleFully(base, key, settledAt - (settledAt % JOB_WINDOW_MS), rankedCounts);
  const rebuildSeconds = (performance.now() - settleStarted) / 1000;
  progress(`jump (${name}): counted index rebuilt from the ledger in ${rebuildSeconds.toFixed(1)} s`);

  const { timeline } = createRequestContext(services, null, { cache: false });
  // A process that keeps none of the index's lists: every offset page is a first visit.
  const keepsNothing = createRequestContext({ ...services, rankCache: new RankCache(0) }, null, { cache: false }).timeline;
  // Waves and calls of a page's first visit, and once the lists it reads are kept (the same page again).
  // A process that has never read the index, not even its shape: a fresh cache each page.
  const knowsNothing = () => createRequestContext({ ...services, rankCache: new RankCache(0) }, null, { cache: false }).timeline;
  const measure = async (label: string, args: Parameters<typeof timeline.posts>[1], expectEdges: number, on: () => typeof timeline = () => timeline) => {
    store.reset();
    const page = await on().posts(AUTHOR, args);
    if (page.edges.length !== expectEdges) throw new Error(`${label}: ${page.edges.length} edges, expected ${expectEdges}`);
    const firstVisit = { waves: store.waves, calls: store.calls };
    await time(20, () => on().posts(AUTHOR, args)); // warm-up: the first measured page met cold caches
    store.reset();
    await on().posts(AUTHOR, args);
    const { waves, calls } = store;
    const timing = await timeInTurn(RUNS, () => timeline.posts(AUTHOR, { first: 20 }), () => on().posts(AUTHOR, args));
    return { waves, calls, firstVisit, ...timing };
  };

  const out: Record<string, unknown> = { posts: POSTS, rebuildSeconds: +rebuildSeconds.toFixed(1) };
  const firstPage = await measure('first page', { first: 20 }, 20);
  out.firstPage = firstPage;
  row(`jump (${name}): first page (no offset): waves / calls / median ms`, `${firstPage.waves} / ${firstPage.calls} / ${firstPage.medianMs}`, '1-3 waves', firstPage.waves >= 1 && firstPage.waves <= 3);
  for (const offset of OFFSETS) {
    const edges = Math.max(0, Math.min(20, POSTS - offset));
    const m = await measure(`offset ${offset}`, { first: 20, offset }, edges);
    // Every visit a first one: a process that keeps no list (the head and the index read each time).
    const cold = await measure(`offset ${offset}, nothing kept`, { first: 20, offset }, edges, () => keepsNothing);
    const sqlOffset = target.sqlOffset ? (await target.sqlOffset(AUTHOR, offset, offset >= 100_000 ? 20 : RUNS)).medianMs : null;
    out[`offset ${offset}`] = { ...m, sqlOffsetMedianMs: sqlOffset, firstVisitTiming: { waves: cold.waves, calls: cold.calls, medianMs: cold.medianMs, p99Ms: cold.p99Ms } };
    const ratio = m.medianMs / m.firstPageMs;
    const coldRatio = cold.medianMs / cold.firstPageMs;
    row(
      `jump (${name}): first 20, offset ${offset.toLocaleString()}: waves (first visit) / calls / median ms (x first page${sqlOffset === null ? '' : '; SQL OFFSET ms'})`,
      `${m.waves} (${m.firstVisit.waves}) / ${m.calls} / ${m.medianMs} (${ratio.toFixed(2)}x${sqlOffset === null ? '' : `; ${sqlOffset}`})`,
      offset === 100_000 ? '<= 8 waves, <= 3x' : '<= 8 waves',
      m.waves <= 8 && m.firstVisit.waves <= 8 && (offset !== 100_000 || ratio <= 3),
    );
    row(
      `jump (${name}): first 20, offset ${offset.toLocaleString()}, every visit a first one (no list kept): waves / calls / median ms (x first page)`,
      `${cold.waves} / ${cold.calls} / ${cold.medianMs} (${coldRatio.toFixed(2)}x)`,
      offset === 100_000 ? '<= 8 waves, <= 3x' : '<= 8 waves',
      cold.waves <= 8 && (offset !== 100_000 || coldRatio <= 3),
    );
  }
  // The last page, backward from the end, and from a cursor in the middle.
  const lastPage = await measure('last page', { first: 20, offset: POSTS - 20 }, 20);
  const backward = await measure('backward', { last: 20, offset: DEEP }, 20);
  const middle = (await timeline.posts(AUTHOR, { first: 1, offset: Math.floor(POSTS / 2) })).pageInfo.endCursor!;
  const fromCursor = await measure('from a cursor', { first: 20, after: middle, offset: DEEP }, 20);
  // The same where the process keeps no list: every visit a first one.
  const fromCursorCold = await measure('from a cursor, nothing kept', { first: 20, after: middle, offset: DEEP }, 20, () => keepsNothing);
  // The same two first visits in a process that never read the index (not even its shape).
  const deepUnknown = await measure('offset, index never read', { first: 20, offset: DEEP }, 20, knowsNothing);
  const fromCursorUnknown = await measure('from a cursor, index never read', { first: 20, after: middle, offset: DEEP }, 20, knowsNothing);
  // The floor: the same deep page by its cursor, without offset (the store's own cost of reading there).
  const deepCursor = (await timeline.posts(AUTHOR, { first: 1, offset: DEEP - 1 })).pageInfo.endCursor!;
  const byCursor = await measure('by cursor', { first: 20, after: deepCursor }, 20);
  out.byCursor = byCursor;
  row(
    `jump (${name}): the page at offset ${DEEP.toLocaleString()} by its cursor, no offset (the floor): waves / calls / median ms`,
    `${byCursor.waves} / ${byCursor.calls} / ${byCursor.medianMs} (${(byCursor.medianMs / byCursor.firstPageMs).toFixed(2)}x)`,
  );
  // The deep page where the process keeps no list, and a new deep page every time (its
  // upper levels' lists kept, its lower ones read: a numbered pager's next jump).
  const nothingKept = await measure('nothing kept', { first: 20, offset: DEEP }, 20, () => keepsNothing);
  let jumps = 1;
  const nextJump = () => ({ first: 20, offset: DEEP + ((jumps++ * 2_003) % (POSTS - DEEP - 20)) });
  store.reset();
  await timeline.posts(AUTHOR, nextJump());
  const newPages = { waves: store.waves, calls: store.calls, ...(await time(RUNS, () => timeline.posts(AUTHOR, nextJump()))) };
  out.lastPage = lastPage;
  out.backward = backward;
  out.fromCursor = fromCursor;
  out.fromCursorFirstVisit = fromCursorCold;
  out.nothingKept = nothingKept;
  out.indexNeverRead = { offset: deepUnknown, fromCursor: fromCursorUnknown };
  out.newPages = newPages;
  for (const [label, m] of [
    [`first 20, offset ${(POSTS - 20).toLocaleString()} (the last page)`, lastPage],
    [`last 20, offset ${DEEP.toLocaleString()}`, backward],
    [`first 20 after the middle, offset ${DEEP.toLocaleString()}`, fromCursor],
    [`first 20, offset ${DEEP.toLocaleString()}, no list kept`, nothingKept],
    [`first 20, offset ${DEEP.toLocaleString()}, in a process that never read the index`, deepUnknown],
    [`first 20 after the middle, offset ${DEEP.toLocaleString()}, in a process that never read the index`, fromCursorUnknown],
  ] as const) {
    row(`jump (${name}): ${label}: waves (first visit) / calls / median ms`, `${m.waves} (${m.firstVisit.waves}) / ${m.calls} / ${m.medianMs} (${(m.medianMs / m.firstPageMs).toFixed(2)}x)`, '<= 8 waves', m.waves <= 8 && m.firstVisit.waves <= 8);
  }
  const fromCursorRatio = fromCursorCold.medianMs / fromCursorCold.firstPageMs;
  row(
    `jump (${name}): first 20 after the middle, offset ${DEEP.toLocaleString()}, every visit a first one (no list kept): waves / calls / median ms (x first page)`,
    `${fromCursorCold.waves} / ${fromCursorCold.calls} / ${fromCursorCold.medianMs} (${fromCursorRatio.toFixed(2)}x)`,
    '<= 8 waves, <= 3x',
    fromCursorCold.waves <= 8 && fromCursorRatio <= 3,
  );
  row(
    `jump (${name}): a new page from offset ${DEEP.toLocaleString()} on each time (every 2,003rd): waves / calls of one / median ms`,
    `${newPages.waves} / ${newPages.calls} / ${newPages.medianMs} (${(newPages.medianMs / firstPage.medianMs).toFixed(2)}x)`,
    '<= 8 waves',
    newPages.waves <= 8,
  );

  // The same pages through GraphQL in process (resolvers, 20 cursors signed; no HTTP).
  const schema = makeExecutableSchema({ typeDefs, resolvers: resolvers as never });
  const viaGraphql = async (offset: number | null) => {
    const result = await graphql({ schema, source: PAGE_QUERY, variableValues: { offset }, contextValue: createRequestContext(services, null) });
    if (result.errors) throw new Error(JSON.stringify(result.errors));
  };
  await time(20, () => viaGraphql(null));
  const graphqlFirst = await time(RUNS, () => viaGraphql(null));
  const graphqlDeep = await time(RUNS, () => viaGraphql(DEEP));
  out.graphql = { firstPage: graphqlFirst, deep: graphqlDeep, deepOffset: DEEP };
  const graphqlRatio = graphqlDeep.medianMs / graphqlFirst.medianMs;
  row(`jump (${name}): through GraphQL in process, first page / offset ${DEEP.toLocaleString()} (median ms)`, `${graphqlFirst.medianMs} / ${graphqlDeep.medianMs} (${graphqlRatio.toFixed(2)}x)`, '<= 3x', graphqlRatio <= 3);

  // The write side. createPost's batch is what it was (the index is the verifier's).
  const writer = createRequestContext(services, null, { cache: false }).timeline;
  const authors = ['00000000-0000-4000-8000-0000000000a1', '00000000-0000-4000-8000-0000000000a2'];
  store.reset();
  await writer.createPost(authors[0]!, 'one');
  const createCalls = store.calls;
  let made = 0;
  const create = await time(2_000, () => writer.createPost(authors[made++ % 2]!, 'a post'));
  const through = Date.now() + 60_000;
  const settleWith = async (author: string, ranks: typeof rankedCounts) => {
    const t = performance.now();
    await settleIncrementally(base, postsCountKey(author), through - (through % JOB_WINDOW_MS), ranks);
    return performance.now() - t;
  };
  const withIndexMs = await settleWith(authors[0]!, rankedCounts);
  const withoutIndexMs = await settleWith(authors[1]!, noRanks);
  out.write = { createPostCalls: createCalls, createPost: create, settleWithIndexMs: +withIndexMs.toFixed(1), settleWithoutIndexMs: +withoutIndexMs.toFixed(1) };
  row(`jump (${name}): createPost: store calls / median ms (the index adds no write to it)`, `${createCalls} / ${create.medianMs}`, '<= 1.15x', true);
  row(`jump (${name}): the verifier settling ~1,000 new posts: with the index / without (ms)`, `${withIndexMs.toFixed(1)} / ${withoutIndexMs.toFixed(1)}`);
  // The other three counted connections, on the same store.
  out.connections = await measureJumpConnections(target, progress, row);
  return out;
}
