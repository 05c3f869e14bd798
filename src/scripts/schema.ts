/**
 * `npm run schema` (or, in the image, `node dist/scripts/schema.js`): create or update
 * the keyspace and every table the product declares, one statement at a time, each
 * followed by a wait for schema agreement. Safe to run again: it sends only what is
 * missing. Servers then only check the schema at start (unless CASSANDRA_AUTO_SCHEMA=true),
 * so several servers starting together never race DDL.
 */
import { ALL_TABLES, createStore } from '../composition-root.js';
import { loadConfig } from '../config.js';
import { parseCli, runScript } from './cli.js';

const USAGE = `usage: npm run schema
       node dist/scripts/schema.js

Creates the Cassandra keyspace (CASSANDRA_KEYSPACE, with CASSANDRA_REPLICATION) and every
table and column the product declares that does not exist yet, waiting for schema
agreement after each statement. With STORE=sqlite it creates the embedded store's tables.`;

parseCli(USAGE, {});

runScript('schema', async () => {
  // Creating tables needs no secrets: do not insist on them as a production server does.
  const config = loadConfig({ ...process.env, NODE_ENV: 'development' });
  const log = (message: string) => console.log(message);
  // This command is what creates the schema (the embedded store creates its own anyway).
  const store = createStore({ ...config, cassandra: { ...config.cassandra, autoSchema: true } }, { log });
  try {
    await store.ensureTables(ALL_TABLES);
  } finally {
    await store.close();
  }
  const where = config.store === 'cassandra' ? `keyspace ${config.cassandra.keyspace}` : config.sqlitePath;
  console.log(`schema ready: ${ALL_TABLES.length} tables in ${where}`);
});
