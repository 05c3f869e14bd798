/**
 * What an idempotency key costs: `createPost` through its resolver (the layer that keys
 * it included), each request with a fresh request context as the server makes one, 32
 * at a time, without a key, with a new key each, and retried with a key already used
 * (the recorded payload answered). Rounds alternate the variants; the medians are
 * reported, with the store round trips of one request of each. On the embedded store,
 * and on Cassandra too when CASSANDRA_CONTACT_POINTS is set (a keyspace of its own,
 * dropped at the end).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import cassandra from 'cassandra-driver';
import type { GraphQLResolveInfo } from 'graphql';
import pino from 'pino';
import { ALL_TABLES, createRequestContext, createServices, type Services } from '../src/composition-root.js';
import { resolvers } from '../src/graphql/resolvers/index.js';
import type { RequestContext } from '../src/graphql/context.js';
import type { Store } from '../src/store/port.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { loadConfig } from '../src/config.js';
import { cassandraStoreFrom } from '../src/store/cassandra/cassandra-connect.js';
import { quantile } from './unique-counter.js';

const REQUESTS = 3_000;
/** Fewer on Cassandra: each request is a few milliseconds of Paxos and batchlog. */
const CASSANDRA_REQUESTS = 1_000;
const CONCURRENCY = 32;
const ROUNDS = 3;

type CreatePost = (root: unknown, args: { input: { content: string; clientMutationId?: string } }, ctx: RequestContext, info: GraphQLResolveInfo) => Promise<unknown>;

/** One variant's run: requests per second, latency quantiles, round trips per request. */
export interface KeyRun {
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly roundTrips: number;
  /** Requests that failed (a store timeout under load, say), by error name: counted, not hidden. */
  readonly failures: Record<string, number>;
}

/** `keys[i]` (or none) for request i, each by one of `authors`, `concurrency` at a time. */
async function measure(services: Services, authors: readonly string[], keys: ReadonlyArray<string | undefined>, concurrency: number): Promise<KeyRun> {
  const createPost = (resolvers.Mutation as { createPost: CreatePost }).createPost;
  const latencies: number[] = [];
  let roundTrips = 0;
  const failures: Record<string, number> = {};
  let next = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < keys.length; i = next++) {
        const ctx = createRequestContext(services, { username: authors[i % authors.length]!, isAdmin: false });
        const started = performance.now();
        const key = keys[i];
        try {
          await createPost(undefined, { input: { content: `post ${i}`, ...(key !== undefined && { clientMutationId: key }) } }, ctx, {} as GraphQLResolveInfo);
        } catch (err) {
          const name = (err as Error).name ?? 'Error';
          failures[name] = (failures[name] ?? 0) + 1;
        }
        latencies.push(performance.now() - started);
        roundTrips = ctx.storeRoundTrips();
      }
    }),
  );
  const seconds = (performance.now() - t) / 1000;
  latencies.sort((a, b) => a - b);
  return { perSecond: Math.round(keys.length / seconds), p50Ms: +quantile(latencies, 0.5).toFixed(2), p99Ms: +quantile(latencies, 0.99).toFixed(2), roundTrips, failures };
}

function median(runs: readonly KeyRun[]): KeyRun {
  const sorted = [...runs].sort((a, b) => a.perSecond - b.perSecond);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * createPost without a key, with a new key, and retried with a used key, over `store`
 * (its tables created); `rounds` alternating rounds of `requests` each.
 */
export async function measureKeys(store: Store, options: { requests: number; concurrency: number; rounds: number }) {
  const services = createServices({ cursorSecret: 'bench-cursor-secret-0123456789', suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins' }, {
    store,
    logger: pino({ level: 'silent' }),
  });
  const authors = Array.from({ length: options.concurrency }, (_, i) => `bench_author_${i}`);
  const admin = createRequestContext(services, { username: 'bench', isAdmin: true }, { cache: false });
  for (const username of authors) await admin.users.create({ username, displayName: username });
  const none: KeyRun[] = [];
  const keyed: KeyRun[] = [];
  const retried: KeyRun[] = [];
  for (let round = 0; round < options.rounds; round++) {
    none.push(await measure(services, authors, Array.from({ length: options.requests }, () => undefined), options.concurrency));
    const keys = Array.from({ length: options.requests }, () => randomUUID());
    keyed.push(await measure(services, authors, keys, options.concurrency));
    retried.push(await measure(services, authors, keys, options.concurrency));
  }
  return { requests: options.requests, concurrency: options.concurrency, rounds: options.rounds, withoutKey: median(none), withKey: median(keyed), retry: median(retried) };
}

/** The rows of one store's run. */
function report(row: (figure: string, value: string) => void, store: string, run: Awaited<ReturnType<typeof measureKeys>>): void {
  const { withoutKey, withKey, retry } = run;
  row(`createPost on ${store} without a key: requests/s (round trips)`, `${withoutKey.perSecond} (${withoutKey.roundTrips})`);
  row(`createPost on ${store} with a new key: requests/s (round trips)`, `${withKey.perSecond} (${withKey.roundTrips})`);
  row(`createPost on ${store} retried with its key: requests/s (round trips)`, `${retry.perSecond} (${retry.roundTrips})`);
  row(`createPost on ${store} with a key / without`, `${(withKey.perSecond / withoutKey.perSecond).toFixed(2)}x`);
}

/** The same on Cassandra, in a keyspace of its own that is dropped at the end. */
async function onCassandra(progress: (m: string) => void) {
  const keyspace = `bench_idem_${randomBytes(4).toString('hex')}`;
  const config = loadConfig({ ...process.env, STORE: 'cassandra', CASSANDRA_KEYSPACE: keyspace, CASSANDRA_AUTO_SCHEMA: 'true' });
  const store = cassandraStoreFrom(config.cassandra, { log: () => undefined });
  try {
    await store.ensureTables(ALL_TABLES);
    progress(`idempotency on Cassandra (${config.cassandra.contactPoints.join(',')}, keyspace ${keyspace}): ${ROUNDS} rounds of ${CASSANDRA_REQUESTS}`);
    return { store: `Cassandra at ${config.cassandra.contactPoints.join(',')}`, ...(await measureKeys(store, { requests: CASSANDRA_REQUESTS, concurrency: CONCURRENCY, rounds: ROUNDS })) };
  } finally {
    await store.close();
    const driver = new cassandra.Client({ contactPoints: [...config.cassandra.contactPoints], localDataCenter: config.cassandra.localDataCenter });
    await driver.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`).catch((err: unknown) => progress(`could not drop ${keyspace}: ${String(err)}`));
    await driver.shutdown();
  }
}

/** The `idempotency` section of `npm run bench`: on the embedded store (in memory), and on Cassandra when one is named. */
export async function runIdempotency(
  progress: (m: string) => void,
  row: (figure: string, value: string, target?: string, met?: boolean | null) => void,
) {
  const store = new SqliteStore({ database: new Database(':memory:') });
  await store.ensureTables(ALL_TABLES);
  progress(`idempotency: ${ROUNDS} rounds of ${REQUESTS} createPost requests without a key, with a new key, and retried`);
  const sqlite = { store: 'SQLite (embedded, in memory)', ...(await measureKeys(store, { requests: REQUESTS, concurrency: CONCURRENCY, rounds: ROUNDS })) };
  await store.close();
  report(row, 'SQLite', sqlite);
  if (!process.env.CASSANDRA_CONTACT_POINTS) return { sqlite, cassandra: 'not run: CASSANDRA_CONTACT_POINTS is unset' };
  const onCluster = await onCassandra(progress);
  report(row, 'Cassandra', onCluster);
  return { sqlite, cassandra: onCluster };
}
