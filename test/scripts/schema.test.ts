/**
 * `npm run schema` in production on a real Cassandra: a new keyspace needs its
 * replication chosen (CASSANDRA_REPLICATION), and the command names the variable when it
 * is missing, creating nothing; with it set, the keyspace gets exactly that replication.
 * Runs wherever the Cassandra suites run (a secured cluster included: the command reads
 * the same CASSANDRA_* variables), skipped with the reason elsewhere.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { cassandraClient, cassandraTarget, DDL_TIMEOUT_MS, describeEachStore, uniqueKeyspace } from '../support/stores.js';

const run = promisify(execFile);

describeEachStore(
  'npm run schema in production',
  (target) => {
    it('refuses to create a keyspace without CASSANDRA_REPLICATION, naming it, and creates it with the replication given', async () => {
      const points = await target.contactPoints!();
      const keyspace = uniqueKeyspace('schema');
      const env = { ...process.env, NODE_ENV: 'production', STORE: 'cassandra', CASSANDRA_CONTACT_POINTS: points.join(','), CASSANDRA_KEYSPACE: keyspace };
      const args = ['--import', 'tsx', 'src/scripts/schema.ts'];
      const client = await cassandraClient(points);
      const keyspaceRow = async () =>
        (await client.execute('SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?', [keyspace])).rows[0]?.get('replication') as
          | Record<string, string>
          | undefined;
      try {
        const refused = await run(process.execPath, args, { env: { ...env, CASSANDRA_REPLICATION: '' } }).then(
          () => null,
          (err: { code: number; stderr: string }) => err,
        );
        expect(refused?.code).toBe(1);
        expect(refused?.stderr).toContain(`creating keyspace ${keyspace} needs its replication chosen: set CASSANDRA_REPLICATION`);
        expect(await keyspaceRow()).toBeUndefined();
        await run(process.execPath, args, { env: { ...env, CASSANDRA_REPLICATION: 'SimpleStrategy:1' } });
        expect(await keyspaceRow()).toMatchObject({ class: 'org.apache.cassandra.locator.SimpleStrategy', replication_factor: '1' });
      } finally {
        await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
        await client.shutdown();
      }
    }, DDL_TIMEOUT_MS.cassandra);
  },
  [await cassandraTarget()],
);
