/**
 * A `CassandraStore` from plain settings (the configuration's `cassandra` block): the
 * driver client with the operator's credentials, TLS (always verified unless told
 * otherwise), secure connect bundle, pool, timeout, retry, speculation and balancing
 * settings, consistency names turned into the driver's values, and the start-up
 * behaviour `ensureTables` then shows (retry an unreachable cluster for
 * `connectTimeoutS`, refuse at once what retrying cannot fix, then check the schema, or
 * create it when `autoSchema`).
 */
import { isIP } from 'node:net';
import { checkServerIdentity, type ConnectionOptions } from 'node:tls';
import cassandra from 'cassandra-driver';
import type { Clock } from '../clock.js';
import type { StoreWarning } from '../port.js';
import { bundleFailureOf, connectFailureOf } from './cassandra-errors.js';
import { CassandraStore, type CassandraClientLike } from './cassandra-store.js';
import type { CassandraDriverSettings, CassandraSettings, CassandraTlsSettings } from './cassandra-settings.js';
import { BoundedWriteRetryPolicy, ReadOnlySpeculation } from './cassandra-policies.js';

const { auth, policies, types } = cassandra;

/**
 * The driver's client options for `settings`. Speculative executions and retries after a
 * timeout apply to reads only: a write is never sent again once it may have reached a
 * coordinator, nor twice at once (cassandra-policies.ts), so it lands within the time the
 * late-write window assumes, or is answered as unknown.
 */
export function cassandraClientOptions(settings: Omit<CassandraSettings, 'keyspace' | 'replication' | 'consistency' | 'serialConsistency' | 'autoSchema' | 'connectTimeoutS'>): cassandra.ClientOptions {
  const bundle = settings.secureConnectBundle ?? null;
  // A bundle names the contact points, the data centre and the certificates itself; the
  // driver refuses contact points or TLS options beside it.
  const options: cassandra.ClientOptions = {
    ...(bundle === null
      ? { contactPoints: [...settings.contactPoints], localDataCenter: settings.localDataCenter }
      : { cloud: { secureConnectBundle: bundle } }),
    encoding: { useBigIntAsLong: true, useBigIntAsVarint: true },
    ...(settings.credentials ? { authProvider: new auth.PlainTextAuthProvider(settings.credentials.username, settings.credentials.password) } : {}),
    ...(settings.tls && bundle === null ? { sslOptions: sslOptionsOf(settings.tls) } : {}),
    policies: { retry: new BoundedWriteRetryPolicy() },
  };
  const driver = settings.driver;
  if (!driver) return options;
  // With a bundle the local data centre is the one the bundle's metadata service names.
  const localDataCenter = bundle === null ? settings.localDataCenter : undefined;
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
      loadBalancing: loadBalancingOf(driver.loadBalancing, localDataCenter),
      retry: driver.retryPolicy === 'never' ? new policies.retry.FallthroughRetryPolicy() : new BoundedWriteRetryPolicy(),
      speculativeExecution:
        driver.speculativeExecutions > 0
          ? new ReadOnlySpeculation(new policies.speculativeExecution.ConstantSpeculativeExecutionPolicy(driver.speculativeDelayMs, driver.speculativeExecutions))
          : new policies.speculativeExecution.NoSpeculativeExecutionPolicy(),
    },
  };
}

/**
 * Node's TLS options for `tls`. cassandra-driver defaults `rejectUnauthorized` to false
 * (it verifies nothing); here the chain is verified against `ca` (the system's CAs when
 * null) and the certificate must name `serverName`, or the address connected to.
 */
export function sslOptionsOf(tls: CassandraTlsSettings): ConnectionOptions {
  const serverName = tls.serverName ?? undefined;
  return {
    rejectUnauthorized: tls.verify,
    ...(tls.ca === null ? {} : { ca: tls.ca }),
    ...(tls.clientCertificate === null ? {} : { cert: tls.clientCertificate.cert, key: tls.clientCertificate.key }),
    // SNI takes a host name only; an IP address as the name to verify is checked below.
    ...(serverName !== undefined && isIP(serverName) === 0 ? { servername: serverName } : {}),
    checkServerIdentity: tls.verify ? (host, cert) => checkServerIdentity(serverName ?? host, cert) : () => undefined,
  };
}

function loadBalancingOf(name: CassandraDriverSettings['loadBalancing'], localDataCenter: string | undefined): cassandra.policies.loadBalancing.LoadBalancingPolicy {
  switch (name) {
    case 'default':
      return new policies.loadBalancing.DefaultLoadBalancingPolicy({ localDc: localDataCenter });
    case 'token-aware':
      return new policies.loadBalancing.TokenAwarePolicy(dcAwareRoundRobin(localDataCenter));
    case 'round-robin':
      return dcAwareRoundRobin(localDataCenter);
  }
}

/** Round robin over the local data centre's nodes; without a name, the client's (a bundle's) local data centre. */
function dcAwareRoundRobin(localDataCenter: string | undefined): cassandra.policies.loadBalancing.DCAwareRoundRobinPolicy {
  // The driver takes the client's localDataCenter at init when none is given (its typings insist on one).
  return new policies.loadBalancing.DCAwareRoundRobinPolicy(localDataCenter as string);
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
    connectFailure: settings.secureConnectBundle
      ? (err) => bundleFailureOf(err, settings.secureConnectBundle!) ?? connectFailureOf(err)
      : connectFailureOf,
    writeTimeoutMs: settings.driver?.writeTimeoutMs,
    log: options.log,
    warn: options.warn,
    clock: options.clock,
  });
}
