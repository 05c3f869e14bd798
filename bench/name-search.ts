/**
 * Search by name and counts, through the GraphQL schema and the request context (as a
 * request runs them, without HTTP):
 * - a page of 20 of `usersByName` over 100,000 users against the same page of
 *   `usersByLastName`: store round trips, statements and time. The users are made once
 *   through the features (names drawn Zipf-like, as real names are) into a SQLite file
 *   kept in the system's temporary folder (BENCH_NAMES_FILE), reused by later runs;
 *   the sweeper is then run once, as any server runs it, so the entries are current.
 * - `totalCount`: what asking for it costs a request, on one connection and on 20.
 */
import { existsSync, renameSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { makeExecutableSchema } from '@graphql-tools/schema';
import Database from 'better-sqlite3';
import { graphql, type GraphQLSchema } from 'graphql';
import pino from 'pino';
import { typeDefs } from '../src/app.js';
import { ALL_TABLES, createRequestContext, createServices, type Services } from '../src/composition-root.js';
import { loadConfig } from '../src/config.js';
import { resolvers } from '../src/graphql/resolvers/index.js';
import { mulberry32 } from '../src/seed/random.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { BENCH_SECRETS } from './fixture.js';

/** How many users (BENCH_NAME_USERS, for a quick try; the recorded figures use 100,000). */
const USERS = Number(process.env.BENCH_NAME_USERS ?? 100_000);
/** Bump when the fixture's content or the index layout changes: a new file is made. */
const FIXTURE_VERSION = 1;

const prng = mulberry32;

const SYLLABLES = ['an', 'ber', 'co', 'da', 'el', 'fis', 'gar', 'ha', 'in', 'jo', 'ka', 'li', 'mar', 'no', 'or', 'pe', 'qui', 'ro', 'sa', 'ti', 'ul', 'va', 'wil', 'ya', 'zé', 'mü', 'ller', 'son', 'sen', 'ski'];

/** `n` distinct names of two or three syllables, capitalised, in a fixed order. */
function names(n: number, random: () => number, fixed: readonly string[]): string[] {
  const out = new Set(fixed);
  while (out.size < n) {
    const k = 2 + Math.floor(random() * 2);
    const w = Array.from({ length: k }, () => SYLLABLES[Math.floor(random() * SYLLABLES.length)]).join('');
    out.add(w[0]!.toUpperCase() + w.slice(1));
  }
  return [...out];
}

/** A Zipf-like draw over `n` ranks (rank r with weight 1/r). */
function zipf(n: number, random: () => number): () => number {
  const cumulative: number[] = [];
  let total = 0;
  for (let r = 1; r <= n; r++) cumulative.push((total += 1 / r));
  return () => {
    const x = random() * total;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

const LAST = names(2_000, prng(4), ['Smith', 'Müller', 'Martin', 'Garcia', 'Nguyen']);
const FIRST = names(300, prng(5), ['John', 'Zoë', 'Ana', 'Maria', 'Jo']);
const CITIES = ['Paris', 'Lyon', 'Berlin', 'Lisbon', 'Tokyo', 'Oslo', 'Lagos', 'Austin'];

function settings() {
  return loadConfig({ ...BENCH_SECRETS, SQLITE_PATH: ':memory:' });
}

async function open(file: string) {
  const store = new SqliteStore({ database: new Database(file) });
  await store.ensureTables(ALL_TABLES);
  return { store, services: createServices(settings(), { store, logger: pino({ level: 'silent' }) }) };
}

/** The 100,000 users, made once through the features into `file`. */
async function ensureFixture(file: string, progress: (m: string) => void): Promise<void> {
  if (existsSync(file)) return;
  const making = `${file}.making`;
  const { store, services } = await open(making);
  // One long job: the loaders batch but keep nothing.
  const { users } = createRequestContext(services, { username: 'bench', isAdmin: true }, { cache: false });
  const random = prng(24);
  const last = zipf(LAST.length, random);
  const first = zipf(FIRST.length, random);
  const started = performance.now();
  for (let i = 0; i < USERS; i++) {
    await users.create({
      username: `person_${i}`,
      displayName: `Person ${i}`,
      firstName: FIRST[first()]!,
      lastName: LAST[last()]!,
      location: CITIES[i % CITIES.length]!,
    });
    if (i % 10_000 === 9_999) progress(`name search: made ${(i + 1).toLocaleString()} of ${USERS.toLocaleString()} users (${((performance.now() - started) / 1000).toFixed(0)} s)`);
  }
  await store.close();
  renameSync(making, file);
}

function stats(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { medianMs: +at(0.5).toFixed(3), p99Ms: +at(0.99).toFixed(3), runs: s.length };
}

/** Run `query` as an admin's request: its data, round trips and statements. */
async function request(schema: GraphQLSchema, services: Services, query: string, variables: Record<string, unknown> = {}) {
  const contextValue = createRequestContext(services, { username: 'bench', isAdmin: true });
  const result = await graphql({ schema, source: query, variableValues: variables, contextValue });
  if (result.errors) throw new Error(JSON.stringify(result.errors));
  return { data: result.data as Record<string, any>, roundTrips: contextValue.storeRoundTrips(), statements: contextValue.storeStatements() };
}

/** Round trips, statements and time of a request, over `runs` runs. */
async function measure(schema: GraphQLSchema, services: Services, query: string, variables: Record<string, unknown>, runs: number) {
  const first = await request(schema, services, query, variables);
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await request(schema, services, query, variables);
    samples.push(performance.now() - t);
  }
  return { roundTrips: first.roundTrips, statements: first.statements, ...stats(samples), data: first.data };
}

const NODE = 'id username displayName location';
const BY_LAST = `query ($p: String!, $after: String) { usersByLastName(prefix: $p, first: 20, after: $after) { edges { node { ${NODE} } } pageInfo { hasNextPage endCursor } } }`;
const BY_NAME = `query ($q: String!, $after: String) { usersByName(query: $q, first: 20, after: $after) { edges { node { ${NODE} } } pageInfo { hasNextPage endCursor } } }`;

export async function runNameSearch(
  progress: (m: string) => void,
  row: (figure: string, value: string, target?: string, met?: boolean | null) => void,
) {
  const file = process.env.BENCH_NAMES_FILE ?? join(tmpdir(), `bench-names-${USERS}-v${FIXTURE_VERSION}.db`);
  await ensureFixture(file, progress);
  // Entries are current without reading their users once the sweeper's progress is
  // past them by the skew bound and the write timeout: a fixture made just now waits.
  const { clockSkewMs, writeTimeoutMs } = settings().cluster;
  const wait = statSync(file).mtimeMs + 2 * (clockSkewMs + writeTimeoutMs) + 2 * 5_000 - Date.now();
  if (wait > 0) {
    progress(`name search: waiting ${(wait / 1000).toFixed(0)} s for the newest entries' windows to close`);
    await sleep(wait);
  }
  const { store, services } = await open(file);
  // As a server's sweeper does on its timer: clean what is due (little, if anything), and
  // so know which entries are current without reading their users.
  const swept = await services.nameSweeper.runOnce();
  progress(`name search: ${USERS.toLocaleString()} users in ${file}; the sweeper cleaned ${swept} user(s)`);
  const schema = makeExecutableSchema({ typeDefs, resolvers: resolvers as never });
  const out: Record<string, unknown> = { users: USERS, file };
  const cases: Array<[string, string, Record<string, unknown>]> = [
    ['usersByLastName(prefix: "smith")', BY_LAST, { p: 'smith' }],
    ['usersByName(query: "smith")', BY_NAME, { q: 'smith' }],
    ['usersByName(query: "smi jo")', BY_NAME, { q: 'smi jo' }],
  ];
  for (const [name, query, variables] of cases) {
    const field = query.includes('usersByName') ? 'usersByName' : 'usersByLastName';
    const firstPage = await measure(schema, services, query, variables, 200);
    // A page further on: the fifth, from the fourth's end cursor.
    let after: string | null = null;
    for (let p = 0; p < 4; p++) after = (await request(schema, services, query, { ...variables, after })).data[field].pageInfo.endCursor;
    const fifthPage = await measure(schema, services, query, { ...variables, after }, 200);
    const edges = firstPage.data[field].edges.length;
    out[name] = { firstPage: { ...firstPage, data: undefined, edges }, fifthPage: { ...fifthPage, data: undefined } };
    row(`name search: ${name}, page 1 of 20 (${edges} edges): round trips / statements / median ms`, `${firstPage.roundTrips} / ${firstPage.statements} / ${firstPage.medianMs}`);
    row(`name search: ${name}, page 5: round trips / statements / median ms`, `${fifthPage.roundTrips} / ${fifthPage.statements} / ${fifthPage.medianMs}`);
  }
  const byName = out['usersByName(query: "smith")'] as { firstPage: { roundTrips: number } };
  row('name search: usersByName page of 20 over 100,000 users is one slice, no lookups', String(byName.firstPage.roundTrips), '1', byName.firstPage.roundTrips === 1);
  await store.close();
  out.totalCount = await runTotalCount(schema, progress, row);
  return out;
}

/** What asking for `totalCount` costs a request: one connection, and 20 at once. */
async function runTotalCount(schema: GraphQLSchema, progress: (m: string) => void, row: (figure: string, value: string, target?: string, met?: boolean | null) => void) {
  const { store, services } = await open(':memory:');
  const ctx = createRequestContext(services, { username: 'bench', isAdmin: true });
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) {
    const user = await ctx.users.create({ username: `count_${i}`, displayName: `Count ${i}` });
    for (let k = 0; k < 10; k++) await ctx.timeline.createPost(user.id, `post ${k}`);
    ids.push(Buffer.from(`User:${user.id}`).toString('base64'));
  }
  // As a server's verifier does on its timer: so this process knows which windows are settled.
  await services.countVerifier.runOnce();
  progress('totalCount: 20 users with 10 posts each');
  const one = `query ($id: ID!) { node(id: $id) { ... on User { posts(first: 5) { COUNT edges { node { id } } } } } }`;
  const many = `query ($ids: [ID!]!) { nodes(ids: $ids) { ... on User { posts(first: 5) { COUNT edges { node { id } } } } } }`;
  const out: Record<string, unknown> = {};
  for (const [name, query, variables] of [
    ['one connection', one, { id: ids[0] }],
    ['20 connections', many, { ids }],
  ] as const) {
    const without = await measure(schema, services, query.replace('COUNT', ''), variables, 300);
    const withCount = await measure(schema, services, query.replace('COUNT', 'totalCount'), variables, 300);
    out[name] = { without: { ...without, data: undefined }, withTotalCount: { ...withCount, data: undefined } };
    const extra = withCount.roundTrips - without.roundTrips;
    row(
      `totalCount, ${name}: round trips / median ms without -> with`,
      `${without.roundTrips} -> ${withCount.roundTrips} / ${without.medianMs} -> ${withCount.medianMs}`,
      '+1 round trip',
      extra === 1,
    );
  }
  await store.close();
  return out;
}
