/**
 * Shared bench fixture: a SQLite file with a user "bench" and 100 posts (the overhead
 * run's 20-edge timeline), and the wiring every server variant uses.
 */
import Database from 'better-sqlite3';
import pino from 'pino';
import { ALL_TABLES, createRequestContext, createServices } from '../src/composition-root.js';
import { loadConfig, type Config } from '../src/config.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';

export const BENCH_SECRETS = { AUTH_SECRET: 'bench-auth-secret-0123456789', CURSOR_SECRET: 'bench-cursor-secret-0123456789' };

/** The query of the overhead run: a 20-edge timeline with authors. */
export const TIMELINE_QUERY = `query Timeline { userByUsername(username: "bench") { posts(first: 20) {
  edges { cursor node { id content createdAt author { username displayName } } }
  pageInfo { hasNextPage hasPreviousPage endCursor } } } }`;

/** The configuration of a bench server over `file`. */
export function benchConfig(file: string): Config {
  return loadConfig({
    ...BENCH_SECRETS,
    SQLITE_PATH: file,
    SEED_DEMO: 'false',
    LIST_APPLIER: 'false',
    PLAYGROUND: 'false',
    LOG_LEVEL: 'silent',
  });
}

/** A store over `file` and the services features are built from. */
export async function benchServices(file: string) {
  const config = benchConfig(file);
  const store = new SqliteStore({ database: new Database(file) });
  await store.ensureTables(ALL_TABLES);
  const services = createServices(config, { store, logger: pino({ level: 'silent' }) });
  return { config, store, services };
}

/** Create the overhead fixture in `file` (idempotent). */
export async function prepareOverheadFixture(file: string): Promise<void> {
  const { store, services } = await benchServices(file);
  const { users, timeline } = createRequestContext(services, { username: 'bench', isAdmin: true });
  const [existing] = await users.idsByUsername(['bench']);
  if (!existing) {
    const user = await users.create({ username: 'bench', displayName: 'Bench Mark' });
    for (let i = 0; i < 100; i++) await timeline.createPost(user.id, `benchmark post number ${i}`, new Date(Date.now() - (100 - i) * 60_000));
  }
  await store.close();
}
