/**
 * Start-up on Cassandra without a Cassandra: the schema plan (what `npm run schema`
 * sends, what a server refuses to start without), and an unreachable cluster retried
 * for CASSANDRA_CONNECT_TIMEOUT_S and then refused with one line, by the store and by
 * the real server process. The real driver talks to a closed port.
 */
import cassandra from 'cassandra-driver';
import { describe, expect, it } from 'vitest';
import { timelineTable } from '../../src/features/timeline/timeline-tables.js';
import { existingKeyOf, schemaChanges, schemaDifferences, type ExistingSchema } from '../../src/store/cassandra/cassandra-schema.js';
import { CassandraStore, type CassandraClientLike, type CassandraResultLike } from '../../src/store/cassandra/cassandra-store.js';
import { StoreStartupError } from '../../src/store/port.js';
import { STORE_BATCHLOG_TABLES } from '../../src/store/cassandra/cassandra-batchlog.js';
import { defineTable } from '../../src/store/table.js';
import { freePort, runUntilExit } from '../support/child-server.js';

const users = defineTable({ name: 'users', columns: { user_id: 'uuid', name: 'text', born: 'timestamp' }, partitionKey: ['user_id'] });
const posts = defineTable({
  name: 'posts',
  columns: { user_id: 'uuid', post_id: 'timeuuid', body: 'text' },
  partitionKey: ['user_id'],
  clustering: [{ column: 'post_id', order: 'DESC' }],
  gcGraceSeconds: 3_600,
});

function existing(tables: Record<string, Record<string, string>> | null): ExistingSchema {
  return {
    keyspace: tables !== null,
    tables: new Map(Object.entries(tables ?? {}).map(([t, cols]) => [t, new Map(Object.entries(cols))])),
  };
}

describe('the Cassandra schema plan', () => {
  const replication = { class: 'SimpleStrategy', replication_factor: 1 } as const;

  it('creates the keyspace and every table on an empty cluster, and nothing once all exists', () => {
    expect(schemaChanges('relay', replication, existing(null), [users, posts])).toEqual([
      "CREATE KEYSPACE IF NOT EXISTS relay WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
      'CREATE TABLE IF NOT EXISTS relay.users (user_id uuid, name text, born timestamp, PRIMARY KEY ((user_id))) WITH gc_grace_seconds = 864000',
      'CREATE TABLE IF NOT EXISTS relay.posts (user_id uuid, post_id timeuuid, body text, PRIMARY KEY ((user_id), post_id)) WITH CLUSTERING ORDER BY (post_id DESC) AND gc_grace_seconds = 3600',
    ]);
    const complete = existing({
      users: { user_id: 'uuid', name: 'text', born: 'timestamp' },
      posts: { user_id: 'uuid', post_id: 'timeuuid', body: 'text' },
    });
    expect(schemaChanges('relay', replication, complete, [users, posts])).toEqual([]);
    expect(schemaDifferences('relay', complete, [users, posts])).toEqual([]);
  });

  it('adds a missing column and table, and names exactly what a server would miss', () => {
    const partial = existing({ users: { user_id: 'uuid', name: 'int' } });
    expect(schemaChanges('relay', replication, partial, [users, posts])).toEqual([
      'ALTER TABLE relay.users ADD born timestamp',
      'CREATE TABLE IF NOT EXISTS relay.posts (user_id uuid, post_id timeuuid, body text, PRIMARY KEY ((user_id), post_id)) WITH CLUSTERING ORDER BY (post_id DESC) AND gc_grace_seconds = 3600',
    ]);
    expect(schemaDifferences('relay', partial, [users, posts])).toEqual([
      'column users.name of type text (found int)',
      'column users.born',
      'table relay.posts',
    ]);
    expect(schemaDifferences('relay', existing(null), [users, posts])).toEqual(['keyspace relay']);
  });

  it("brings an existing table's gc_grace_seconds to its declaration, and sends nothing once it matches", () => {
    const columns = {
      users: { user_id: 'uuid', name: 'text', born: 'timestamp' },
      posts: { user_id: 'uuid', post_id: 'timeuuid', body: 'text' },
    };
    const stale = { ...existing(columns), gcGraceSeconds: new Map([['users', 864_000], ['posts', 864_000]]) };
    expect(schemaChanges('relay', replication, stale, [users, posts])).toEqual(['ALTER TABLE relay.posts WITH gc_grace_seconds = 3600']);
    const current = { ...existing(columns), gcGraceSeconds: new Map([['users', 864_000], ['posts', 3_600]]) };
    expect(schemaChanges('relay', replication, current, [users, posts])).toEqual([]);
  });

  it('creates a table declared leveled with LeveledCompactionStrategy, and moves an existing one to it once, keeping the options it does not declare', () => {
    const lists = defineTable({ name: 'lists', columns: { k: 'text', level: 'int', counts: 'text' }, partitionKey: ['k'], clustering: ['level'], leveledCompaction: true });
    expect(schemaChanges('relay', replication, existing({}), [lists])).toEqual([
      "CREATE TABLE IF NOT EXISTS relay.lists (k text, level int, counts text, PRIMARY KEY ((k), level)) WITH CLUSTERING ORDER BY (level ASC) AND gc_grace_seconds = 864000 AND compaction = {'class': 'LeveledCompactionStrategy'}",
    ]);
    const columns = { lists: { k: 'text', level: 'int', counts: 'text' }, users: { user_id: 'uuid', name: 'text', born: 'timestamp' } };
    const sizeTiered = { class: 'org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy', max_threshold: '32', min_threshold: '4' };
    const stale = { ...existing(columns), compaction: new Map<string, Record<string, string>>([['lists', sizeTiered], ['users', sizeTiered]]) };
    // A table that declares no strategy keeps the cluster's (an operator's choice).
    expect(schemaChanges('relay', replication, stale, [lists, users])).toEqual(["ALTER TABLE relay.lists WITH compaction = {'class': 'LeveledCompactionStrategy'}"]);
    const leveled = { class: 'org.apache.cassandra.db.compaction.LeveledCompactionStrategy', sstable_size_in_mb: '320' };
    const current = { ...existing(columns), compaction: new Map<string, Record<string, string>>([['lists', leveled], ['users', sizeTiered]]) };
    expect(schemaChanges('relay', replication, current, [lists, users])).toEqual([]);
  });

  it("brings a time-window table's window to its declaration, and refuses a table declaring two strategies", () => {
    const changes = defineTable({ name: 'changes', columns: { feed: 'text', at: 'timeuuid' }, partitionKey: ['feed'], clustering: ['at'], timeWindowMinutes: 60 });
    const twcs = (size: string) => ({ class: 'org.apache.cassandra.db.compaction.TimeWindowCompactionStrategy', compaction_window_unit: 'MINUTES', compaction_window_size: size });
    const columns = { changes: { feed: 'text', at: 'timeuuid' } };
    expect(schemaChanges('relay', replication, { ...existing(columns), compaction: new Map([['changes', twcs('30')]]) }, [changes])).toEqual([
      "ALTER TABLE relay.changes WITH compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'MINUTES', 'compaction_window_size': 60}",
    ]);
    expect(schemaChanges('relay', replication, { ...existing(columns), compaction: new Map([['changes', twcs('60')]]) }, [changes])).toEqual([]);
    expect(() => defineTable({ name: 'both', columns: { k: 'text' }, partitionKey: ['k'], timeWindowMinutes: 60, leveledCompaction: true })).toThrow(
      'table both: one compaction strategy a table, got both timeWindowMinutes and leveledCompaction',
    );
  });
});

/** One `system_schema.columns` row as the store reads it. */
interface ColumnRow {
  readonly table_name: string;
  readonly column_name: string;
  readonly type: string;
  readonly kind: 'partition_key' | 'clustering' | 'regular';
  readonly position: number;
  readonly clustering_order: 'asc' | 'desc' | 'none';
}

/** The timeline table as `system_schema.columns` describes it, clustered `order`. */
function timelineColumns(order: 'asc' | 'desc'): ColumnRow[] {
  return [
    { table_name: 'timeline', column_name: 'user_id', type: 'uuid', kind: 'partition_key', position: 0, clustering_order: 'none' },
    { table_name: 'timeline', column_name: 'post_id', type: 'timeuuid', kind: 'clustering', position: 0, clustering_order: order },
    { table_name: 'timeline', column_name: 'content', type: 'text', kind: 'regular', position: -1, clustering_order: 'none' },
  ];
}

/** The adapter's own tables (its batchlog) as `system_schema.columns` describes them: every keyspace the adapter made holds them. */
function ownTableColumns(): ColumnRow[] {
  return STORE_BATCHLOG_TABLES.flatMap((t) =>
    Object.entries(t.columns).map(([column, type]) => {
      const partition = t.partitionKey.indexOf(column);
      const clustering = t.clustering.findIndex((c) => c.column === column);
      return {
        table_name: t.name,
        column_name: column,
        type,
        kind: partition >= 0 ? ('partition_key' as const) : clustering >= 0 ? ('clustering' as const) : ('regular' as const),
        position: partition >= 0 ? partition : clustering,
        clustering_order: clustering >= 0 ? ('asc' as const) : ('none' as const),
      };
    }),
  );
}

/** A connected driver client whose keyspace `relay` holds the tables `columns` describe (its system_schema, nothing else). */
function clusterHolding(columns: readonly ColumnRow[]): CassandraClientLike {
  const result = (rows: ReadonlyArray<Record<string, unknown>>): CassandraResultLike => ({
    rows: rows.map((r) => ({ get: (c: string) => r[c] })),
    wasApplied: () => true,
  });
  return {
    connect: async () => undefined,
    async execute(query) {
      if (query.includes('system_schema.keyspaces')) return result([{ keyspace_name: 'relay' }]);
      if (query.includes('system_schema.columns')) return result(columns as unknown as Array<Record<string, unknown>>);
      if (query.includes('system_schema.tables')) return result([...new Set(columns.map((c) => c.table_name))].map((t) => ({ table_name: t, gc_grace_seconds: 864_000 })));
      throw new Error(`unexpected statement: ${query}`);
    },
    batch: () => Promise.reject(new Error('no batches here')),
    metadata: {},
    shutdown: async () => undefined,
  };
}

describe('the key structure check at start-up', () => {
  it("reads an existing table's key from system_schema: partition key and clustering columns in position order, with their order", () => {
    expect(
      existingKeyOf([
        { column: 'b', kind: 'partition_key', position: 1, clusteringOrder: 'none' },
        { column: 'd', kind: 'clustering', position: 1, clusteringOrder: 'asc' },
        { column: 'a', kind: 'partition_key', position: 0, clusteringOrder: 'none' },
        { column: 'c', kind: 'clustering', position: 0, clusteringOrder: 'desc' },
        { column: 'v', kind: 'regular', position: -1, clusteringOrder: 'none' },
      ]),
    ).toEqual({ partitionKey: ['a', 'b'], clustering: [{ column: 'c', order: 'DESC' }, { column: 'd', order: 'ASC' }] });
  });

  it('names each table whose partition key, clustering columns, their order or clustering order differ', () => {
    const columns = { user_id: 'uuid', post_id: 'timeuuid', body: 'text' };
    const keyed = (key: ExistingSchema['keys']) => ({ ...existing({ posts: columns }), keys: key });
    const declared = { partitionKey: ['user_id'], clustering: [{ column: 'post_id', order: 'DESC' as const }] };
    expect(schemaDifferences('relay', keyed(new Map([['posts', declared]])), [posts])).toEqual([]);
    expect(schemaDifferences('relay', keyed(new Map([['posts', { ...declared, clustering: [{ column: 'post_id', order: 'ASC' }] }]])), [posts])).toEqual([
      'table relay.posts clustered by (post_id ASC), declared (post_id DESC)',
    ]);
    expect(schemaDifferences('relay', keyed(new Map([['posts', { partitionKey: ['user_id', 'post_id'], clustering: [] }]])), [posts])).toEqual([
      'table relay.posts partitioned by (user_id, post_id), declared (user_id)',
      'table relay.posts clustered by (), declared (post_id DESC)',
    ]);
    const twoColumns = defineTable({
      name: 'pairs',
      columns: { k: 'text', a: 'int', b: 'int' },
      partitionKey: ['k'],
      clustering: [{ column: 'a', order: 'ASC' }, { column: 'b', order: 'ASC' }],
    });
    const swapped = { ...existing({ pairs: { k: 'text', a: 'int', b: 'int' } }), keys: new Map([['pairs', { partitionKey: ['k'], clustering: [{ column: 'b', order: 'ASC' as const }, { column: 'a', order: 'ASC' as const }] }]]) };
    expect(schemaDifferences('relay', swapped, [twoColumns])).toEqual(['table relay.pairs clustered by (b ASC, a ASC), declared (a ASC, b ASC)']);
  });

  it('refuses to start on a timeline table recreated clustered ASC, naming the table and the difference, and reports it as /readyz does', async () => {
    for (const schema of ['check', 'create'] as const) {
      const store = new CassandraStore({ client: clusterHolding([...timelineColumns('asc'), ...ownTableColumns()]), keyspace: 'relay', schema });
      await expect(store.ensureTables([timelineTable])).rejects.toThrow(
        new StoreStartupError(
          'the Cassandra schema keys tables otherwise than declared: table relay.timeline clustered by (post_id ASC), declared (post_id DESC); a primary key cannot be altered: copy the rows into a table created as declared (or drop it, when its rows may go, and run `npm run schema`)',
        ),
      );
      expect(await store.checkSchema([timelineTable])).toEqual(['table relay.timeline clustered by (post_id ASC), declared (post_id DESC)']);
    }
    const fine = new CassandraStore({ client: clusterHolding([...timelineColumns('desc'), ...ownTableColumns()]), keyspace: 'relay', schema: 'check' });
    await fine.ensureTables([timelineTable]);
    expect(await fine.checkSchema([timelineTable])).toEqual([]);
  });

  it('refuses to create a keyspace whose replication was not chosen, naming CASSANDRA_REPLICATION', async () => {
    const empty = clusterHolding([]);
    const noKeyspace: CassandraClientLike = {
      ...empty,
      execute: (query, params, options) =>
        query.includes('system_schema.keyspaces') ? Promise.resolve({ rows: [], wasApplied: () => true }) : empty.execute(query, params, options),
    };
    const store = new CassandraStore({ client: noKeyspace, keyspace: 'relay', schema: 'create', replication: null });
    await expect(store.ensureTables([users])).rejects.toThrow(
      new StoreStartupError(
        'creating keyspace relay needs its replication chosen: set CASSANDRA_REPLICATION, e.g. NetworkTopologyStrategy:<data centre>=3 (three replicas in each data centre)',
      ),
    );
  });
});

describe('an unreachable Cassandra at start-up', () => {
  it('is retried with one log line per attempt, then refused with a one-line reason', async () => {
    const port = await freePort();
    const client = new cassandra.Client({ contactPoints: [`127.0.0.1:${port}`], localDataCenter: 'datacenter1' });
    const lines: string[] = [];
    const store = new CassandraStore({ client, keyspace: 'relay', connectTimeoutMs: 1_600, log: (m) => lines.push(m) });
    const started = Date.now();
    const error = await store.ensureTables([users]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreStartupError);
    expect((error as Error).message).toMatch(/^Cassandra unreachable after \d+ attempt\(s\) in \d+ s: /);
    expect((error as Error).message).not.toContain('\n');
    // 0.5 s, 1 s, then the time left: three retries announced, each on one line.
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of lines) expect(line).toMatch(/^Cassandra not reachable \(attempt \d+: .*\); retrying in \d+\.\d s$/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    await store.close();
  });

  it('makes the server exit with one line naming the reason, and no stack trace', async () => {
    const port = await freePort();
    const { code, stdout, stderr } = await runUntilExit({ CASSANDRA_CONTACT_POINTS: `127.0.0.1:${port}`, CASSANDRA_CONNECT_TIMEOUT_S: '1' });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual([expect.stringMatching(/^cannot start: Cassandra unreachable after \d+ attempt\(s\) in \d+ s: /)]);
    // The attempts were logged, one line each.
    expect(stdout).toContain('Cassandra not reachable (attempt 1:');
  }, 30_000);
});
