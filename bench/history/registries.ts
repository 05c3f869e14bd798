/**
 * Registries that shrink, and reads that take what the page needs (issue 15, section
 * 3; issue 18, "bucketed connections"): store round trips of a first page of
 * `usersByLastName(prefix: "")` and of `suspendedUsers`, fresh and after the registry
 * has grown. Round trips are counted as a client waits for them: calls in flight
 * together are one (bench/waves.ts); they carry the 1.5x target. The calls and the
 * statements the adapter sent are printed beside them: those grow with the number of
 * partitions a page's rows lie in (20 rows in 20 buckets are 20 slices, read at once),
 * not with history.
 *
 * - usersByLastName: 10 distinct last names (fresh); 2,000 distinct last names; and 10
 *   names after 2,000 users took a junk last name and changed it (the emptied buckets
 *   are pruned; before, each was one more read).
 * - suspendedUsers: 50 suspensions in 1 month bucket (fresh), and in 50 buckets.
 */
import { makeExecutableSchema } from '@graphql-tools/schema';
import Database from 'better-sqlite3';
import { graphql } from 'graphql';
import pino from 'pino';
import { typeDefs } from '../../src/app.js';
import { ALL_TABLES, createRequestContext, createServices, type Services } from '../../src/composition-root.js';
import { resolvers } from '../../src/graphql/resolvers/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { BENCH_SECRETS } from '../fixture.js';
import { WaveCountingStore } from '../waves.js';
import type { HistoryBench, HistoryFigure } from './harness.js';

const ADMIN = { username: 'root', isAdmin: true };
const PAGE_INFO = 'pageInfo { hasNextPage hasPreviousPage startCursor endCursor }';
/** The directory's first page: 20 users with their names. */
export const LAST_NAME_QUERY = `{ usersByLastName(prefix: "", first: 20) { edges { cursor node { username lastName } } ${PAGE_INFO} } }`;
/** The admin view's first page: 20 suspensions. */
export const SUSPENDED_QUERY = `{ suspendedUsers(first: 20) { edges { cursor node { reason suspendedAt } } ${PAGE_INFO} } }`;

/** What one query cost. */
export interface QueryCost {
  readonly roundTrips: number;
  readonly calls: number;
  readonly statements: number;
  readonly edges: number;
}

/** A fresh in-memory product whose store counts waves. */
export async function benchWorld() {
  const store = new WaveCountingStore(new SqliteStore({ database: new Database(':memory:') }));
  await store.ensureTables(ALL_TABLES);
  const services = createServices(
    { cursorSecret: BENCH_SECRETS.CURSOR_SECRET, suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins' },
    { store, logger: pino({ level: 'silent' }) },
  );
  const schema = makeExecutableSchema({ typeDefs, resolvers: resolvers as never });
  const setup = createRequestContext(services, ADMIN, { cache: false });
  /** The cost of one query, as one admin request. */
  const cost = async (query: string): Promise<QueryCost> => {
    const ctx = createRequestContext(services, ADMIN);
    store.reset();
    const result = await graphql({ schema, source: query, contextValue: ctx });
    if (result.errors) throw new Error(JSON.stringify(result.errors));
    const connection = Object.values(result.data as Record<string, { edges: unknown[] }>)[0]!;
    return { roundTrips: store.waves, calls: store.calls, statements: ctx.storeStatements(), edges: connection.edges.length };
  };
  return { store, services: services as Services, setup, cost };
}

/** A distinct last name per index, spread over many two-letter buckets. */
export function lastNameOf(i: number): string {
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  let n = i * 7_919 + 13;
  let name = '';
  for (let k = 0; k < 6; k++) {
    name += letters[n % 26];
    n = Math.floor(n / 26) + k * 3;
  }
  return `${name[0]!.toUpperCase()}${name.slice(1)}${i}`;
}

/**
 * The cost of the directory's first page with `live` users of distinct last names,
 * after `junk` other users took a junk last name each and then changed it.
 */
export async function lastNamePageCost(live: number, junk = 0): Promise<QueryCost> {
  const w = await benchWorld();
  for (let i = 0; i < live; i++) await w.setup.users.create({ username: `live_${i}`, displayName: `Live ${i}`, lastName: lastNameOf(i) });
  for (let i = 0; i < junk; i++) {
    const u = await w.setup.users.create({ username: `junk_${i}`, displayName: `Junk ${i}`, lastName: lastNameOf(100_000 + i) });
    await w.setup.users.update(u.id, { lastName: '' });
  }
  return w.cost(LAST_NAME_QUERY);
}

/** The cost of the first page of suspendedUsers with 50 suspensions spread over `buckets` months. */
export async function suspendedPageCost(buckets: number): Promise<QueryCost> {
  const w = await benchWorld();
  for (let i = 0; i < 50; i++) {
    const u = await w.setup.users.create({ username: `suspended_${i}`, displayName: `User ${i}` });
    const suspendedAt = new Date(Date.UTC(2022, i % buckets, 1, 12, i));
    await w.setup.suspensions.suspend({ userId: u.id, reason: `r${i}`, suspendedAt });
  }
  return w.cost(SUSPENDED_QUERY);
}

/** The round-trip figure of one query, fresh and grown. */
function roundTripFigure(measure: string, fresh: { label: string; cost: QueryCost }, grown: Array<{ label: string; cost: QueryCost }>): HistoryFigure {
  return {
    measure: `store round trips of ${measure}`,
    unit: 'round trips',
    fresh: { label: fresh.label, value: fresh.cost.roundTrips },
    grown: grown.map((g) => ({ label: g.label, value: g.cost.roundTrips })),
  };
}

export const registriesBench: HistoryBench = {
  name: 'registries',
  async run(progress) {
    progress('usersByLastName: 10 last names');
    const ten = await lastNamePageCost(10);
    progress('usersByLastName: 2,000 last names');
    const many = await lastNamePageCost(2_000);
    progress('usersByLastName: 10 last names after 2,000 junk ones');
    const junk = await lastNamePageCost(10, 2_000);
    progress('suspendedUsers: 1 bucket');
    const one = await suspendedPageCost(1);
    progress('suspendedUsers: 50 buckets');
    const fifty = await suspendedPageCost(50);
    for (const [label, c] of [['10 names', ten], ['2,000 names', many], ['2,000 junk', junk], ['1 bucket', one], ['50 buckets', fifty]] as const) {
      progress(`${label}: ${c.edges} edges, ${c.roundTrips} round trips, ${c.calls} calls, ${c.statements} statements`);
    }
    return [
      roundTripFigure('usersByLastName(prefix: "", first: 20)', { label: '10 distinct last names', cost: ten }, [
        { label: '2,000 distinct last names', cost: many },
        { label: '10 last names after 2,000 junk ones (users renamed since)', cost: junk },
      ]),
      roundTripFigure('the first page of suspendedUsers(first: 20)', { label: '50 suspensions in 1 bucket', cost: one }, [
        { label: '50 suspensions in 50 buckets', cost: fifty },
      ]),
    ];
  },
};
