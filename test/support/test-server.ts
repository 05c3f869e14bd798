/**
 * A real server on a loopback port over an in-memory SQLite store, and a small
 * GraphQL-over-HTTP client for tests.
 */
import Database from 'better-sqlite3';
import pino from 'pino';
import { createApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { authKey, signToken } from '../../src/graphql/auth.js';
import type { Clock } from '../../src/store/clock.js';
import type { Store } from '../../src/store/port.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

export const TEST_AUTH_SECRET = 'test-auth-secret-0123456789';
export const TEST_CURSOR_SECRET = 'test-cursor-secret-0123456789';

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
  readonly db: Database.Database;
  /** POST a GraphQL operation, optionally with a bearer token. */
  gql<D = Record<string, any>>(query: string, variables?: Record<string, unknown>, token?: string): Promise<GqlResponse<D>>;
  /** A valid token for a username. */
  token(username: string, options?: { admin?: boolean; expiresIn?: string }): Promise<string>;
  /** Every row of every SQLite table, to prove that nothing changed. */
  dump(): Record<string, unknown[]>;
  close(): Promise<void>;
}

/** Start a server; `wrap` may decorate the store (fault injection). */
export async function startTestServer(
  options: { wrap?: (store: Store) => Store; env?: Record<string, string>; clock?: Clock } = {},
): Promise<TestServer> {
  const db = new Database(':memory:');
  const base = new SqliteStore({ database: db });
  const store = options.wrap ? options.wrap(base) : base;
  const config = loadConfig({
    AUTH_SECRET: TEST_AUTH_SECRET,
    CURSOR_SECRET: TEST_CURSOR_SECRET,
    SQLITE_PATH: ':memory:',
    ...options.env,
  });
  const app = await createApp(config, { logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }), store, clock: options.clock });
  const port = await app.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${port}/graphql`;
  return {
    url,
    app,
    db,
    async gql(query, variables, token) {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ query, variables }),
      });
      return { status: res.status, ...((await res.json()) as object) };
    },
    token: (username, opts) => signToken(authKey(TEST_AUTH_SECRET), username, opts),
    dump() {
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>;
      const out: Record<string, unknown[]> = {};
      db.defaultSafeIntegers(true);
      for (const { name } of tables) out[name] = db.prepare(`SELECT * FROM "${name}" ORDER BY 1, 2`).all();
      return out;
    },
    close: () => app.close(),
  };
}
