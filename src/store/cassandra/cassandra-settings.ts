/**
 * The settings the Cassandra adapter takes, declared by the adapter: what a server or a
 * command needs to reach its cluster, and the cassandra-driver tuning an operator sets.
 * The configuration (src/config.ts) produces values of these types from the environment;
 * nothing in src/store/ reads the configuration. This module imports no driver code, so
 * the configuration may import it.
 */
import type { Replication } from './cassandra-schema.js';

/** What a server or a command needs to reach its cluster. */
export interface CassandraSettings {
  /** Where the driver first connects; empty with a secure connect bundle, which names them. */
  readonly contactPoints: readonly string[];
  readonly localDataCenter: string;
  readonly keyspace: string;
  /**
   * The replication a keyspace is created with; null: none was set explicitly, so the
   * keyspace is not created (production refuses to guess one).
   */
  readonly replication: Replication | null;
  /** A CQL consistency name: LOCAL_QUORUM, QUORUM, ONE, … */
  readonly consistency: string;
  /** SERIAL or LOCAL_SERIAL. */
  readonly serialConsistency: string;
  /** Create what is missing at start instead of refusing to start. */
  readonly autoSchema: boolean;
  readonly connectTimeoutS: number;
  /** The driver's tuning; the driver's own defaults when absent. */
  readonly driver?: CassandraDriverSettings;
  /** The user the cluster authenticates; none when absent or null. */
  readonly credentials?: CassandraCredentials | null;
  /** TLS to every node; plain TCP when absent or null. */
  readonly tls?: CassandraTlsSettings | null;
  /**
   * A DataStax Astra secure connect bundle (a zip file's path): it names the contact
   * points, the data centre and the TLS certificates itself.
   */
  readonly secureConnectBundle?: string | null;
}

/** A user name and password (PasswordAuthenticator, or Astra's client id and secret). */
export interface CassandraCredentials {
  readonly username: string;
  readonly password: string;
}

/**
 * TLS to the nodes. Certificates and host names are verified unless `verify` is false
 * (cassandra-driver's own default verifies nothing).
 */
export interface CassandraTlsSettings {
  /** PEM of the CA or node certificates to trust; null: the system's CAs. */
  readonly ca: string | null;
  /** PEM of the client certificate and its key, for nodes with `require_client_auth`. */
  readonly clientCertificate: { readonly cert: string; readonly key: string } | null;
  /** The name node certificates must carry; null: each contact point's own address. */
  readonly serverName: string | null;
  /** Verify the certificate chain and the name; false only outside production. */
  readonly verify: boolean;
}

/**
 * The cassandra-driver settings an operator tunes (README, "Configuration"): each one a
 * `CASSANDRA_*` variable with the default below.
 */
export interface CassandraDriverSettings {
  /** Connections to each host of the local data centre (`CASSANDRA_CONNECTIONS_PER_HOST`). */
  readonly connectionsPerHost: number;
  /** Connections to each host of remote data centres (`CASSANDRA_CONNECTIONS_PER_REMOTE_HOST`). */
  readonly connectionsPerRemoteHost: number;
  /** How long the driver waits for a node's answer to a read before trying the next (`CASSANDRA_REQUEST_TIMEOUT_MS`). */
  readonly requestTimeoutMs: number;
  /**
   * How long the driver waits for a write's answer (`STORE_WRITE_TIMEOUT_MS`, the time the
   * late-write window assumes): past it the write's outcome is unknown and it is never
   * sent again; the cluster's `write_request_timeout` must not exceed it (checked at start).
   */
  readonly writeTimeoutMs: number;
  /** Extra executions of a read sent to other replicas while the first is slow, never of a write; 0: off (`CASSANDRA_SPECULATIVE_EXECUTIONS`). */
  readonly speculativeExecutions: number;
  /** How long to wait before each speculative execution (`CASSANDRA_SPECULATIVE_DELAY_MS`). */
  readonly speculativeDelayMs: number;
  /**
   * `default`: the driver's retry policy for reads, and for writes only what cannot apply
   * a write twice or late (an unavailable coordinator, a request never sent); `never`: no
   * retries (`CASSANDRA_RETRY_POLICY`).
   */
  readonly retryPolicy: 'default' | 'never';
  /**
   * Which node coordinates a statement (`CASSANDRA_LOAD_BALANCING`): `default`, the driver's
   * (token-aware, local data centre, the less busy of two replicas); `token-aware`, the
   * replicas in turn (TokenAwarePolicy over DCAwareRoundRobinPolicy); `round-robin`, every
   * local node in turn, not token-aware.
   */
  readonly loadBalancing: 'default' | 'token-aware' | 'round-robin';
}

/**
 * The driver settings' defaults: the driver's own (one connection per host, 12 s, no
 * speculation), and writes bounded by Cassandra's default write timeout (2 s, also
 * `STORE_WRITE_TIMEOUT_MS`'s default).
 */
export const DEFAULT_CASSANDRA_DRIVER_SETTINGS: CassandraDriverSettings = Object.freeze({
  connectionsPerHost: 1,
  connectionsPerRemoteHost: 1,
  requestTimeoutMs: 12_000,
  writeTimeoutMs: 2_000,
  speculativeExecutions: 0,
  speculativeDelayMs: 100,
  retryPolicy: 'default',
  loadBalancing: 'default',
});

