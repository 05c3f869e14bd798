/**
 * Start-up on Cassandra without a Cassandra: the schema plan (what `npm run schema`
 * sends, what a server refuses to start without), and an unreachable cluster retried
 * for CASSANDRA_CONNECT_TIMEOUT_S and then refused with one line, by the store and by
 * the real server process. The real driver talks to a closed port.
 */
import cassandra from 'cassandra-driver';
import { describe, expect, it } from 'vitest';
import { schemaChanges, schemaDifferences, type ExistingSchema } from '../../src/store/cassandra/cassandra-schema.js';
import { CassandraStore } from '../../src/store/cassandra/cassandra-store.js';
import { StoreStartupError } from '../../src/store/port.js';
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
