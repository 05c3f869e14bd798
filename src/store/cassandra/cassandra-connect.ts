/**
 * A `CassandraStore` from plain settings (the configuration's `cassandra` block): the
 * driver client, consistency names turned into the driver's values, and the start-up
 * behaviour `ensureTables` then shows (retry an unreachable cluster for
 * `connectTimeoutS`, then check the schema, or create it when `autoSchema`).
 */
import cassandra from 'cassandra-driver';
import type { Clock } from '../clock.js';
import { CassandraStore } from './cassandra-store.js';
import type { Replication } from './cassandra-schema.js';

/** What a server or a command needs to reach its cluster. */
export interface CassandraSettings {
  readonly contactPoints: readonly string[];
  readonly localDataCenter: string;
  readonly keyspace: string;
  readonly replication: Replication;
  /** A CQL consistency name: LOCAL_QUORUM, QUORUM, ONE, … */
  readonly consistency: string;
  /** SERIAL or LOCAL_SERIAL. */
  readonly serialConsistency: string;
  /** Create what is missing at start instead of refusing to start. */
  readonly autoSchema: boolean;
  readonly connectTimeoutS: number;
}

/** The driver's value for a CQL consistency name (`LOCAL_QUORUM` → `localQuorum`). */
export function consistencyOf(name: string): cassandra.types.consistencies {
  const key = name.toLowerCase().replace(/_(\w)/g, (_, c: string) => c.toUpperCase());
  const value = cassandra.types.consistencies[key as keyof typeof cassandra.types.consistencies];
  if (value === undefined) throw new Error(`unknown consistency "${name}"`);
  return value;
}

/**
 * Build the store (nothing is sent before its `ensureTables`); `clock` gives its default
 * write timestamps (the process clock, whose low bits name this server).
 */
export function cassandraStoreFrom(
  settings: CassandraSettings,
  options: { log: (message: string) => void; clock?: Clock },
): CassandraStore {
  const client = new cassandra.Client({
    contactPoints: [...settings.contactPoints],
    localDataCenter: settings.localDataCenter,
    encoding: { useBigIntAsLong: true, useBigIntAsVarint: true },
  });
  return new CassandraStore({
    client,
    keyspace: settings.keyspace,
    replication: settings.replication,
    consistency: consistencyOf(settings.consistency),
    serialConsistency: consistencyOf(settings.serialConsistency),
    schema: settings.autoSchema ? 'create' : 'check',
    connectTimeoutMs: settings.connectTimeoutS * 1000,
    log: options.log,
    clock: options.clock,
  });
}
