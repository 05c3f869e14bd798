/**
 * A benchmark section's own Cassandra keyspace: when CASSANDRA_CONTACT_POINTS names a
 * cluster (with the server's other CASSANDRA_* settings), a store on a fresh keyspace
 * holding every table, handed to `body` and dropped after it, whatever `body` does.
 * Null when no cluster is named.
 */
import { randomBytes } from 'node:crypto';
import { ALL_TABLES } from '../src/composition-root.js';
import { loadConfig } from '../src/config.js';
import { cassandraClientFrom, cassandraStoreFrom } from '../src/store/cassandra/cassandra-connect.js';
import type { Store } from '../src/store/port.js';
import { BENCH_SECRETS } from './fixture.js';

export async function onCassandraKeyspace<T>(prefix: string, progress: (m: string) => void, body: (store: Store) => Promise<T>): Promise<T | null> {
  if (!process.env.CASSANDRA_CONTACT_POINTS) return null;
  const keyspace = `${prefix}_${randomBytes(6).toString('hex')}`;
  const config = loadConfig({ ...process.env, ...BENCH_SECRETS, NODE_ENV: 'development', STORE: 'cassandra', SEED_DEMO: 'false' });
  const settings = { ...config.cassandra, keyspace, autoSchema: true };
  const base = cassandraStoreFrom(settings, { log: () => undefined });
  const driver = cassandraClientFrom(settings);
  try {
    await base.ensureTables(ALL_TABLES);
    return await body(base);
  } finally {
    await driver.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`).catch((err: unknown) => progress(`could not drop ${keyspace}: ${String(err)}`));
    await driver.shutdown();
    await base.close();
  }
}
