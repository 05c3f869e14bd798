/**
 * Round trips: store calls for a 50-edge suspendedUsers page with each suspension's
 * user and that user's suspension, with the per-request DataLoaders and with naive
 * per-field resolvers (one store read per field per edge), and the statements the
 * store sent for them (a batched read of n keys is one round trip, n statements).
 */
import { makeExecutableSchema } from '@graphql-tools/schema';
import { graphql } from 'graphql';
import pino from 'pino';
import { typeDefs } from '../src/app.js';
import { ALL_TABLES, createRequestContext, createServices } from '../src/composition-root.js';
import { loadConfig } from '../src/config.js';
import { suspendedUsersTable } from '../src/features/suspensions/suspensions-tables.js';
import { usersTable } from '../src/features/users/users-tables.js';
import { userFromRow } from '../src/features/users/users.js';
import type { RequestContext } from '../src/graphql/context.js';
import { resolvers } from '../src/graphql/resolvers/index.js';
import Database from 'better-sqlite3';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { CountingStore } from '../src/store/store-decorator.js';
import { BENCH_SECRETS } from './fixture.js';

/** The request context, plus a store the naive resolvers read directly. */
type NaiveContext = RequestContext & { readonly naiveStore: CountingStore };

const QUERY = `{ suspendedUsers(first: 50) { edges { node { reason user { username suspension { reason } } } } } }`;

export async function runRoundTrips(
  progress: (m: string) => void,
  row: (figure: string, value: string, target?: string, met?: boolean | null) => void,
) {
  const store = new SqliteStore({ database: new Database(':memory:') });
  await store.ensureTables(ALL_TABLES);
  const config = loadConfig({ ...BENCH_SECRETS, SQLITE_PATH: ':memory:' });
  const services = createServices(config, { store, logger: pino({ level: 'silent' }) });
  const admin = { username: 'root', isAdmin: true };
  const setup = createRequestContext(services, admin);
  for (let i = 0; i < 50; i++) {
    const u = await setup.users.create({ username: `rt_user_${i}`, displayName: `User ${i}` });
    await setup.suspensions.suspend({ userId: u.id, reason: `r${i}`, suspendedAt: new Date(Date.UTC(2026, 3, 1) + i * 60_000) });
  }
  progress('round trips: 50 users suspended; counting');
  const schema = makeExecutableSchema({ typeDefs, resolvers: resolvers as never });
  const naive = makeExecutableSchema({
    typeDefs,
    resolvers: {
      ...(resolvers as Record<string, object>),
      Suspension: {
        user: async (s: { userId: string }, _a: unknown, ctx: NaiveContext) => userFromRow((await ctx.naiveStore.get(usersTable, { user_id: s.userId }))!),
      },
      User: {
        ...((resolvers as Record<string, object>).User as object),
        suspension: async (u: { id: string }, _a: unknown, ctx: NaiveContext) => {
          const r = await ctx.naiveStore.get(suspendedUsersTable, { user_id: u.id });
          return r && { userId: r.user_id, reason: r.reason, suspendedAt: r.occurred_on, bucket: r.bucket };
        },
      },
    } as never,
  });
  const count = async (s: typeof schema) => {
    const ctx = createRequestContext(services, admin);
    // The naive resolvers read the store directly; their calls are counted too.
    const naiveStore = new CountingStore(store);
    // The context keeps its prototype (its features are getters there): extended, not spread.
    const contextValue: NaiveContext = Object.assign(ctx, { naiveStore });
    const result = await graphql({ schema: s, source: QUERY, contextValue });
    if (result.errors) throw new Error(JSON.stringify(result.errors));
    const edges = (result.data as { suspendedUsers: { edges: unknown[] } }).suspendedUsers.edges.length;
    return {
      edges,
      roundTrips: ctx.storeRoundTrips() + naiveStore.roundTrips,
      statements: ctx.storeStatements() + naiveStore.statements,
    };
  };
  const withLoaders = await count(schema);
  const naiveResult = await count(naive);
  row('round trips: 50-edge suspendedUsers page, with DataLoader', String(withLoaders.roundTrips), '<= 4', withLoaders.roundTrips <= 4);
  row('statements sent for it (one per key read)', String(withLoaders.statements));
  row('round trips: the same page, naive per-field resolvers', String(naiveResult.roundTrips));
  row('statements sent for it', String(naiveResult.statements));
  await store.close();
  return { query: QUERY, withDataLoader: withLoaders, naive: naiveResult };
}
