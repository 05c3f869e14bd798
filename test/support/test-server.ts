/**
 * A real server on a loopback port over a store under test (in-memory SQLite by
 * default, or any target of STORES: on Cassandra a keyspace of its own), and a small
 * GraphQL-over-HTTP client for tests.
 */
import pino, { type Logger } from 'pino';
import { createApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { jobProgressTable, windowSeenTable } from '../../src/background/windowed-job.js';
import { connectionCountsTable, countRankListsTable } from '../../src/counts/count-tables.js';
import { presenceTable } from '../../src/background/presence.js';
import { authKey, signToken, type RemoteKeyTiming } from '../../src/graphql/auth.js';
import type { Clock } from '../../src/store/clock.js';
import type { Store } from '../../src/store/port.js';
import type { Row } from '../../src/store/table.js';
import type { Tracing } from '../../src/observability/tracing/tracing.js';
import { SQLITE_TARGET, type StoreTarget } from './stores.js';

export const TEST_AUTH_SECRET = 'test-auth-secret-0123456789';
export const TEST_CURSOR_SECRET = 'test-cursor-secret-0123456789';

/**
 * Tables the server's background jobs write on their own (see `dump`), as SQLite and
 * Cassandra name them: presence, the jobs' progress, and the counts (and counted indexes) the verifier settles.
 */
const BACKGROUND_TABLES = new Set([presenceTable.name, jobProgressTable.name, windowSeenTable.name, connectionCountsTable.name, countRankListsTable.name].flatMap((name) => [name, `t_${name}`]));

/** A GraphQL response as tests read it. */
export interface GqlResponse<D = Record<string, any>> {
  status: number;
  data?: D | null;
  errors?: Array<{ message: string; path?: Array<string | number>; extensions?: Record<string, unknown> }>;
  extensions?: { storeRoundTrips?: number; storeStatements?: number };
}

/** A running test server. */
export interface TestServer {
  readonly url: string;
  readonly app: App;
  /** POST a GraphQL operation, optionally with a bearer token. */
  gql<D = Record<string, any>>(query: string, variables?: Record<string, unknown>, token?: string): Promise<GqlResponse<D>>;
  /** A valid token for a username. */
  token(username: string, options?: { admin?: boolean; expiresIn?: string }): Promise<string>;
  /**
   * Every row of every table, to prove that nothing changed; except the rows the
   * server's own timers rewrite (its presence, the background jobs' progress, the counts they settle).
   */
  dump(): Promise<Record<string, unknown[]>>;
  /** How many rows a table holds (those whose key columns equal `where`). */
  countRows(table: string, where?: Row): Promise<number>;
  close(): Promise<void>;
}

/**
 * Start a server on `target`'s store (SQLite by default); `wrap` may decorate it (fault
 * injection); `logger` replaces the silent one; `tracing` turns spans on; `env` adds to
 * (or, with "", unsets) the test secrets.
 */
export async function startTestServer(
  options: {
    target?: StoreTarget;
    wrap?: (store: Store) => Store;
    env?: Record<string, string>;
    clock?: Clock;
    logger?: Logger;
    tracing?: Tracing;
    /** How the identity provider's keys are cached (AUTH_JWKS_URL): shorter than jose's defaults in tests. */
    remoteKeys?: RemoteKeyTiming;
    /** The time the presence lease is measured by (tests move it past the lease). */
    now?: () => number;
  } = {},
): Promise<TestServer> {
  const subject = await (options.target ?? SQLITE_TARGET).create();
  const store = options.wrap ? options.wrap(subject.store) : subject.store;
  const config = loadConfig({
    AUTH_SECRET: TEST_AUTH_SECRET,
    CURSOR_SECRET: TEST_CURSOR_SECRET,
    SQLITE_PATH: ':memory:',
    ...options.env,
  });
  const logger = options.logger ?? pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const app = await createApp(config, { logger, store, clock: options.clock, tracing: options.tracing, remoteKeys: options.remoteKeys, now: options.now });
  const port = await app.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${port}/graphql`;
  return {
    url,
    app,
    async gql(query, variables, token) {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ query, variables }),
      });
      return { status: res.status, ...((await res.json()) as object) };
    },
    token: (username, opts) => signToken(authKey(TEST_AUTH_SECRET), username, opts),
    async dump() {
      const all = await subject.snapshot();
      return Object.fromEntries(Object.entries(all).filter(([name]) => !BACKGROUND_TABLES.has(name)));
    },
    countRows: (table, where) => subject.countRows(table, where),
    async close() {
      await app.close();
      await subject.dispose();
    },
  };
}
