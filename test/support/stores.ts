/**
 * STORES: every store the contract suite (and the feature and HTTP suites that run on
 * more than one store) runs against. SQLite is always available. Cassandra is
 * available when CASSANDRA_CONTACT_POINTS is set, or when a Docker engine answers
 * (testcontainers then starts Cassandra 5); otherwise it carries the reason it is
 * skipped. Every `create()` on Cassandra gets a keyspace of its own, dropped on
 * dispose, so test files (and stores within one file) never see each other's rows.
 */
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import cassandra from 'cassandra-driver';
import { describe, it } from 'vitest';
import { cassandraClientOptions, consistencyOf } from '../../src/store/cassandra/cassandra-connect.js';
import type { CassandraSettings } from '../../src/store/cassandra/cassandra-settings.js';
import { CassandraStore, type CassandraClientLike } from '../../src/store/cassandra/cassandra-store.js';
import { cassandraConfig, parseReplication, type ReplicationSetting } from '../../src/config.js';
import type { Clock } from '../../src/store/clock.js';
import type { Store, StoreWarning } from '../../src/store/port.js';
import type { Row } from '../../src/store/table.js';
import { SqliteStore, type SqliteStoreOptions } from '../../src/store/sqlite/sqlite-store.js';

/** A store under test, how to look inside it, and how to dispose of it. */
export interface StoreUnderTest {
  readonly store: Store;
  readonly dispose: () => Promise<void>;
  /** Every stored row of every table (the store's own layout): "nothing changed" compares two. */
  readonly snapshot: () => Promise<Record<string, unknown[]>>;
  /** How many rows a declared table holds (those whose key columns equal `where`). */
  readonly countRows: (table: string, where?: Row) => Promise<number>;
}

/** What a suite may ask of the store it gets. */
export interface StoreOptions {
  /** The client's clock (default write timestamps); the coordinator keeps its own. */
  readonly clock?: Clock;
  /** Where the store's log lines go (a compaction's notes, a connection attempt). */
  readonly log?: (message: string) => void;
  /** Where the store's warnings go (a read over too many tombstones). */
  readonly warn?: (warning: StoreWarning) => void;
  /** Cassandra only: wrap the driver client (fault injection). */
  readonly wrapClient?: (client: CassandraClientLike) => CassandraClientLike;
  /**
   * Cassandra only: the consistency of every read and write, a CQL name (`ALL`);
   * LOCAL_QUORUM, the product's default, unless set. The embedded store has one copy.
   */
  readonly consistency?: string;
}

/** A store to run a suite against, or the reason it cannot run here. */
export interface StoreTarget {
  readonly name: string;
  readonly available: boolean;
  readonly reason: string;
  readonly create: (options?: StoreOptions) => Promise<StoreUnderTest>;
  /** Cassandra only: where it listens, for tests that open their own client. */
  readonly contactPoints?: () => Promise<readonly string[]>;
  /** How long a test that creates tables on this store may take (DDL_TIMEOUT_MS). */
  readonly ddlTimeoutMs: number;
}

/**
 * How long a test that creates tables may take, by store: vitest's 30 s on the embedded
 * store; on Cassandra each table is a schema change every node must agree on before
 * the next (`npm run schema` took 3.4 s for 31 tables on one node, 40 s on a three-node
 * ring), so four minutes.
 */
export const DDL_TIMEOUT_MS = { sqlite: 30_000, cassandra: 240_000 } as const;

/**
 * The replication of the keyspaces tests create on Cassandra: CASSANDRA_REPLICATION, as
 * the product reads it (a ring runs its suites at its own replication factor).
 */
export function testReplication(): ReplicationSetting {
  return parseReplication(process.env.CASSANDRA_REPLICATION ?? 'SimpleStrategy:1');
}

/** The embedded store's own options a suite may set besides `StoreOptions` (its clocks). */
type SqliteOptions = StoreOptions & Omit<SqliteStoreOptions, 'database'>;

/** A fresh in-memory SQLite store. */
export function memorySqliteStore(options: SqliteOptions = {}): SqliteStore {
  return sqliteStoreUnderTest(options).store as SqliteStore;
}

/** An in-memory SQLite store, looked into through its database. */
function sqliteStoreUnderTest(options: SqliteOptions): StoreUnderTest {
  const db = new Database(':memory:');
  const { wrapClient: _cassandraOnly, consistency: _oneCopy, ...sqliteOptions } = options;
  const store = new SqliteStore({ ...sqliteOptions, database: db });
  return {
    store,
    dispose: () => store.close(),
    async snapshot() {
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>;
      const out: Record<string, unknown[]> = {};
      for (const { name } of tables) out[name] = db.prepare(`SELECT * FROM "${name}" ORDER BY 1, 2`).all();
      return out;
    },
    async countRows(table, where = {}) {
      const columns = Object.keys(where);
      const filter = columns.map((c) => ` AND "k_${c}" = @${c}`).join('');
      const row = db.prepare(`SELECT COUNT(*) AS n FROM "t_${table}" WHERE 1 = 1${filter}`).get(where) as { n: bigint };
      return Number(row.n);
    },
  };
}

async function dockerAvailable(): Promise<string | null> {
  const { existsSync } = await import('node:fs');
  if (!process.env.DOCKER_HOST && !existsSync('/var/run/docker.sock')) {
    return 'no Docker engine (DOCKER_HOST unset, no /var/run/docker.sock) and CASSANDRA_CONTACT_POINTS is unset';
  }
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timed out')), 10_000));
    await Promise.race([getContainerRuntimeClient(), timeout]);
    return null;
  } catch (err) {
    return `no Docker engine reachable (${String((err as Error).message).split('\n')[0]}) and CASSANDRA_CONTACT_POINTS is unset`;
  }
}

/** A keyspace name no other test uses. */
export function uniqueKeyspace(prefix = 'test'): string {
  return `${prefix}_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
}

/**
 * How the suites authenticate and encrypt: the product's own variables
 * (`CASSANDRA_USERNAME`, `CASSANDRA_PASSWORD` or `CASSANDRA_PASSWORD_FILE`,
 * `CASSANDRA_TLS` and its files), read as the server reads them.
 */
export function testConnectionSettings(env: NodeJS.ProcessEnv = process.env): Pick<CassandraSettings, 'credentials' | 'tls'> {
  const { credentials, tls } = cassandraConfig(env, false);
  return { credentials, tls };
}

/** A connected driver client, as the product configures it; `policies` adds the driver's policies a test needs (an address translator, say). */
export async function cassandraClient(contactPoints: readonly string[], policies?: cassandra.ClientOptions['policies']): Promise<cassandra.Client> {
  const client = new cassandra.Client({
    ...cassandraClientOptions({ contactPoints, localDataCenter: process.env.CASSANDRA_LOCAL_DC ?? 'datacenter1', ...testConnectionSettings() }),
    ...(policies ? { policies } : {}),
  });
  await client.connect();
  return client;
}

/** Drop `keyspace` (if it exists) through a client of its own, waiting as long as a schema change may take on a busy node. */
export async function dropKeyspace(contactPoints: readonly string[], keyspace: string): Promise<void> {
  const admin = await cassandraClient(contactPoints);
  try {
    await admin.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`, [], { readTimeout: 60_000 });
  } finally {
    await admin.shutdown();
  }
}

/** A Cassandra store on a keyspace of its own, dropped on dispose. */
async function cassandraStoreUnderTest(contactPoints: readonly string[], options: StoreOptions): Promise<StoreUnderTest> {
  const client = await cassandraClient(contactPoints);
  const keyspace = uniqueKeyspace();
  const store = new CassandraStore({
    client: options.wrapClient ? options.wrapClient(client) : client,
    keyspace,
    replication: testReplication(),
    consistency: options.consistency === undefined ? undefined : consistencyOf(options.consistency),
    clock: options.clock,
    log: options.log,
    warn: options.warn,
  });
  // Looking inside, and dropping the keyspace, uses a client of its own: the store's may
  // already be closed (an app closes its store when it stops).
  const inspect = async <T>(use: (admin: cassandra.Client) => Promise<T>): Promise<T> => {
    const admin = await cassandraClient(contactPoints);
    try {
      return await use(admin);
    } finally {
      await admin.shutdown();
    }
  };
  return {
    store,
    dispose: async () => {
      await store.close();
      await inspect((admin) => admin.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`));
    },
    snapshot: () =>
      inspect(async (admin) => {
        const tables = await admin.execute('SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?', [keyspace]);
        const out: Record<string, unknown[]> = {};
        for (const t of tables.rows) {
          const name = String(t.get('table_name'));
          const rows = await admin.execute(`SELECT JSON * FROM ${keyspace}.${name}`, [], { fetchSize: 100_000 });
          out[name] = rows.rows.map((r) => String(r.get('[json]'))).sort();
        }
        return out;
      }),
    countRows: (table, where = {}) =>
      inspect(async (admin) => {
        const columns = Object.keys(where);
        const filter = columns.length ? ` WHERE ${columns.map((c) => `${c} = ?`).join(' AND ')} ALLOW FILTERING` : '';
        const result = await admin.execute(`SELECT COUNT(*) AS n FROM ${keyspace}.${table}${filter}`, Object.values(where), { prepare: true });
        return Number(result.rows[0]!.get('n'));
      }),
  };
}

let container: Promise<{ contactPoint: string }> | null = null;

/** One Cassandra container per test process, started on first use. */
function sharedContainer(): Promise<{ contactPoint: string }> {
  container ??= (async () => {
    const { CassandraContainer } = await import('@testcontainers/cassandra');
    const started = await new CassandraContainer('cassandra:5.0').start();
    return { contactPoint: started.getContactPoint() };
  })();
  return container;
}

/** The Cassandra target: contact points, else testcontainers, else skipped with the reason. */
export async function cassandraTarget(): Promise<StoreTarget> {
  const contactPoints = process.env.CASSANDRA_CONTACT_POINTS;
  if (contactPoints) {
    const points = contactPoints.split(',').map((s) => s.trim());
    return {
      name: 'Cassandra',
      available: true,
      reason: '',
      create: (options = {}) => cassandraStoreUnderTest(points, options),
      contactPoints: async () => points,
      ddlTimeoutMs: DDL_TIMEOUT_MS.cassandra,
    };
  }
  const reason = await dockerAvailable();
  if (reason) return { name: 'Cassandra', available: false, reason, create: () => Promise.reject(new Error(reason)), ddlTimeoutMs: DDL_TIMEOUT_MS.cassandra };
  return {
    name: 'Cassandra',
    available: true,
    reason: '',
    create: async (options = {}) => cassandraStoreUnderTest([(await sharedContainer()).contactPoint], options),
    contactPoints: async () => [(await sharedContainer()).contactPoint],
    ddlTimeoutMs: DDL_TIMEOUT_MS.cassandra,
  };
}

/** The embedded store, always available. */
export const SQLITE_TARGET: StoreTarget = {
  name: 'SQLite',
  available: true,
  reason: '',
  create: async (options = {}) => sqliteStoreUnderTest(options),
  ddlTimeoutMs: DDL_TIMEOUT_MS.sqlite,
};

/** Every store the contract runs against, in order. */
export const STORES: readonly StoreTarget[] = [SQLITE_TARGET, await cassandraTarget()];

/**
 * Define a suite once per store in STORES, titled with the store's name; the suite
 * creates its own store from the target (on Cassandra, a keyspace of its own). A store
 * that is not reachable here is reported as a skipped suite whose title, and a printed
 * line, carry the reason; it never passes silently.
 */
export function describeEachStore(
  title: string,
  define: (target: StoreTarget) => void,
  targets: readonly StoreTarget[] = STORES,
): void {
  for (const target of targets) {
    if (target.available) {
      describe(`${title} (${target.name})`, () => define(target));
    } else {
      console.warn(`[${title}] ${target.name} run SKIPPED: ${target.reason}`);
      describe.skipIf(true)(`${title} on ${target.name} (skipped: ${target.reason})`, () => {
        it('runs only where a Cassandra is reachable', () => {});
      });
    }
  }
}

/**
 * The stores one suite creates from a target, disposed together: a suite calls
 * `disposeAll` after each test (or each property run), so a Cassandra node never holds
 * more than one test's keyspaces.
 */
export class StorePool {
  private readonly made: StoreUnderTest[] = [];

  constructor(private readonly target: StoreTarget) {}

  /** A fresh store (on Cassandra, a keyspace of its own). */
  async create(options?: StoreOptions): Promise<StoreUnderTest> {
    const subject = await this.target.create(options);
    this.made.push(subject);
    return subject;
  }

  /** Dispose of every store created so far. */
  async disposeAll(): Promise<void> {
    await Promise.all(this.made.splice(0).map((s) => s.dispose()));
  }
}
