/**
 * A `CassandraStore` from plain settings (the configuration's `cassandra` block): the
 * driver client with the operator's pool, timeout, retry, speculation and balancing
 * settings, consistency names turned into the driver's values, and the start-up
 * behaviour `ensureTables` then shows (retry an unreachable cluster for
 * `connectTimeoutS`, then check the schema, or create it when `autoSchema`).
 */
import cassandra from 'cassandra-driver';
import type { Clock } from '../clock.js';
import type { StoreWarning } from '../port.js';
import { CassandraStore, type CassandraClientLike } from './cassandra-store.js';
import type { CassandraDriverSettings, CassandraSettings } from './cassandra-settings.js';

const { policies, types } = cassandra;

/**
 * The driver's client options for `settings`. Speculative executions and retries after a
 * timeout apply only to statements the adapter marks idempotent (reads, and writes that
 * carry their own timestamp); counter increments and lightweight transactions are not.
 */
export function cassandraClientOptions(settings: Omit<CassandraSettings, 'keyspace' | 'replication' | 'consistency' | 'serialConsistency' | 'autoSchema' | 'connectTimeoutS'>): cassandra.ClientOptions {
  const options: cassandra.ClientOptions = {
    contactPoints: [...settings.contactPoints],
    localDataCenter: settings.localDataCenter,
    encoding: { useBigIntAsLong: true, useBigIntAsVarint: true },
  };
  const driver = settings.driver;
  if (!driver) return options;
  return {
    ...options,
    pooling: {
      coreConnectionsPerHost: {
        [types.distance.local]: driver.connectionsPerHost,
        [types.distance.remote]: driver.connectionsPerRemoteHost,
        [types.distance.ignored]: 0,
      },
    },
    socketOptions: { readTimeout: driver.requestTimeoutMs },
    policies: {
      loadBalancing: loadBalancingOf(driver.loadBalancing, settings.localDataCenter),
      retry: driver.retryPolicy === 'never' ? new policies.retry.FallthroughRetryPolicy() : new policies.retry.RetryPolicy(),
      speculativeExecution:
        driver.speculativeExecutions > 0
          ? new policies.speculativeExecution.ConstantSpeculativeExecutionPolicy(driver.speculativeDelayMs, driver.speculativeExecutions)
          : new policies.speculativeExecution.NoSpeculativeExecutionPolicy(),
    },
  };
}

function loadBalancingOf(name: CassandraDriverSettings['loadBalancing'], localDataCenter: string): cassandra.policies.loadBalancing.LoadBalancingPolicy {
  switch (name) {
    case 'default':
      return new policies.loadBalancing.DefaultLoadBalancingPolicy({ localDc: localDataCenter });
    case 'token-aware':
      return new policies.loadBalancing.TokenAwarePolicy(new policies.loadBalancing.DCAwareRoundRobinPolicy(localDataCenter));
    case 'round-robin':
      return new policies.loadBalancing.DCAwareRoundRobinPolicy(localDataCenter);
  }
}

/** A driver client for `settings` (nothing is sent before its `connect`). */
export function cassandraClientFrom(settings: Parameters<typeof cassandraClientOptions>[0]): cassandra.Client {
  return new cassandra.Client(cassandraClientOptions(settings));
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
  options: {
    log: (message: string) => void;
    /** The server's warnings (see `StoreWarning`); `log`, without key values, when absent. */
    warn?: (warning: StoreWarning) => void;
    clock?: Clock;
    /** Wrap the driver client (a benchmark recording what is sent, a test injecting faults). */
    wrapClient?: (client: CassandraClientLike) => CassandraClientLike;
  },
): CassandraStore {
  const client = cassandraClientFrom(settings);
  return new CassandraStore({
    client: options.wrapClient ? options.wrapClient(client) : client,
    keyspace: settings.keyspace,
    replication: settings.replication,
    consistency: consistencyOf(settings.consistency),
    serialConsistency: consistencyOf(settings.serialConsistency),
    schema: settings.autoSchema ? 'create' : 'check',
    connectTimeoutMs: settings.connectTimeoutS * 1000,
    log: options.log,
    warn: options.warn,
    clock: options.clock,
  });
}
