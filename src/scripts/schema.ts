/**
 * `npm run schema` (or, in the image, `node dist/scripts/schema.js`): create or update
 * the keyspace and every table the product declares, one statement at a time, each
 * followed by a wait for schema agreement. Safe to run again: it sends only what is
 * missing. Servers then only check the schema at start (unless CASSANDRA_AUTO_SCHEMA=true),
 * so several servers starting together never race DDL.
 */
import { ALL_TABLES, createStore } from '../composition-root.js';
import { cassandraConfig, loadConfig } from '../config.js';
import { parseCli, runScript } from './cli.js';

const USAGE = `usage: npm run schema
       node dist/scripts/schema.js

Creates the Cassandra keyspace (CASSANDRA_KEYSPACE, with CASSANDRA_REPLICATION) and every
table and column the product declares that does not exist yet, waiting for schema
agreement after each statement, and prints each statement as it lands: its number, how
long it took and the time so far (about 0.1 s a table on one node, over 1 s on a
three-node ring). With NODE_ENV=production a new keyspace needs CASSANDRA_REPLICATION
(NetworkTopologyStrategy:<dc>=3 is the usual choice). With STORE=sqlite it creates the
embedded store's tables.`;

parseCli(USAGE, {});

runScript('schema', async () => {
  // Creating tables needs no server secrets: do not insist on them as a production server
  // does. The cluster's own settings keep production's rules (an explicit replication,
  // verified TLS).
  const config = loadConfig({ ...process.env, NODE_ENV: 'development' });
  const log = (message: string) => console.log(message);
  // This command is what creates the schema (the embedded store creates its own anyway).
  const store = createStore({ ...config, cassandra: { ...cassandraConfig(process.env), autoSchema: true } }, { log });
  const where = config.store === 'cassandra' ? `keyspace ${config.cassandra.keyspace} on ${config.cassandra.contactPoints.join(',')}` : config.sqlitePath;
  const started = Date.now();
  const how = config.store === 'cassandra' ? '; each missing one is created, and agreed on by every node, before the next' : '';
  console.log(`checking ${ALL_TABLES.length} tables in ${where}${how}`);
  try {
    await store.ensureTables(ALL_TABLES);
  } finally {
    await store.close();
  }
  console.log(`schema ready: ${ALL_TABLES.length} tables in ${where} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
});
