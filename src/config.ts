/**
 * Configuration from the environment, validated once and frozen. Every variable, its
 * default and its meaning is listed in the configuration table of docs/operations.md
 * (test/docs/configuration-table.test.ts fails when one is missing).
 */
import {
  DEFAULT_CASSANDRA_DRIVER_SETTINGS,
  type CassandraCredentials,
  type CassandraDriverSettings,
  type CassandraSettings,
  type CassandraTlsSettings,
} from './store/cassandra/cassandra-settings.js';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { createSecureContext } from 'node:tls';

/**
 * Keyspace replication as CQL's replication map (the Cassandra adapter's own type has
 * the same shape; the composition root hands this value to it).
 */
export type ReplicationSetting =
  | { readonly class: 'SimpleStrategy'; readonly replication_factor: number }
  | { readonly class: 'NetworkTopologyStrategy'; readonly [dataCenter: string]: number | string };

/** How wide a suspension time bucket is (`SUSPENSION_BUCKET`). */
export type BucketSetting = 'year' | 'month' | 'day';

/** Development-only secrets; used (with a logged warning) when the real ones are unset. */
export const DEV_CURSOR_SECRET = 'dev-cursor-secret-do-not-use-in-production';
export const DEV_AUTH_SECRET = 'dev-auth-secret-do-not-use-in-production';

/**
 * Secrets published as examples (the development ones, and the defaults earlier
 * versions of docker-compose.yml printed): anyone can read them, so production refuses
 * them. test/config/production-secrets.test.ts fails if the docs or
 * docker-compose.yml prints one that is not listed here.
 */
export const EXAMPLE_SECRETS: readonly string[] = [
  DEV_CURSOR_SECRET,
  DEV_AUTH_SECRET,
  'change-me-cursor-secret-0000',
  'change-me-auth-secret-000000',
];

/** Shortest secret production accepts, in bytes (HS256 wants a key as long as its hash). */
export const MIN_PRODUCTION_SECRET_BYTES = 32;

/** Which origins may call the API from a browser: every origin, or an explicit list. */
export type CorsOrigins = '*' | readonly string[];

const ORIGIN = /^https?:\/\/[^/\s?#]+\/?$/;

/**
 * Parse `CORS_ORIGINS`: `*`, or comma-separated origins (`https://app.example.com`,
 * `http://localhost:5173`); throws with the rule and the value it refused.
 */
export function parseCorsOrigins(raw: string): CorsOrigins {
  const entries = raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (entries.length === 1 && entries[0] === '*') return '*';
  for (const entry of entries) {
    if (!ORIGIN.test(entry)) {
      throw new Error(`CORS_ORIGINS must be "*" or comma-separated origins such as https://app.example.com (scheme and host, no path), got "${entry}"`);
    }
  }
  // Browsers send the origin in lower case, without a trailing slash.
  return Object.freeze(entries.map((e) => new URL(e).origin));
}

/** The validated configuration. */
export interface Config {
  readonly nodeEnv: string;
  readonly host: string;
  readonly port: number;
  readonly store: 'sqlite' | 'cassandra';
  readonly sqlitePath: string;
  /** The embedded store's own settings (Cassandra has its own, in cassandra.yaml). */
  readonly embeddedStore: EmbeddedStoreSettings;
  readonly cassandra: CassandraConfig;
  readonly cursorSecret: string;
  /** Earlier cursor secrets whose cursors still verify (`CURSOR_PREVIOUS_SECRETS`): rotation without breaking clients' cursors. */
  readonly cursorPreviousSecrets: readonly string[];
  /** How bearer tokens are verified: a shared secret, or an identity provider's keys. */
  readonly auth: AuthSettings;
  /** Which secrets fell back to their development values. */
  readonly devSecrets: readonly ('CURSOR_SECRET' | 'AUTH_SECRET')[];
  readonly logLevel: string;
  /** Load the demo data set into an empty store at start (production: only when asked). */
  readonly seedDemo: boolean;
  /** How far in the future a token's `exp` may lie, in seconds. */
  readonly maxTokenAgeSeconds: number;
  readonly bodyLimitBytes: number;
  readonly suspensionBucket: BucketSetting;
  readonly acceptanceStrategy: 'first-write-wins' | 'lwt';
  /** Serve the GraphiQL playground at GET /graphql (off in production unless set). */
  readonly playground: boolean;
  /** Origins browsers may call `/graphql` from (any in development, none in production unless set). */
  readonly corsOrigins: CorsOrigins;
  /** Answer introspection queries (off in production unless set). */
  readonly introspection: boolean;
  readonly production: boolean;
  /** The longest a request may take, headers, body and execution included. */
  readonly requestTimeoutMs: number;
  /** The largest GraphQL response the server sends. */
  readonly maxResponseBytes: number;
  /** How long a response may take to drain to its reader. */
  readonly writeTimeoutMs: number;
  readonly limits: {
    readonly depth: number;
    readonly aliases: number;
    readonly tokens: number;
    readonly directives: number;
    readonly cost: number;
  };
  /** Run the ordered-list applier in this process. */
  /**
   * Budgets per principal (`RATE_LIMIT_POINTS` per `RATE_LIMIT_WINDOW_S`; 0 points: off),
   * kept per process. See docs/operations.md, "Overload".
   */
  readonly rateLimit: { readonly points: number; readonly windowSeconds: number };
  /** Whether the last `X-Forwarded-For` address names an anonymous client (`TRUST_PROXY`). */
  readonly trustProxy: boolean;
  /** Requests executing at once, and the queue past them (`MAX_IN_FLIGHT` 0: no cap). */
  readonly inFlight: { readonly maxInFlight: number; readonly maxQueued: number; readonly queueTimeoutMs: number };
  readonly listApplier: boolean;
  readonly listApplierIntervalMs: number;
  readonly saga: {
    readonly recoveryIntervalMs: number;
    readonly recoveryGraceMs: number;
  };
  /** What the servers sharing one cluster assume of each other (docs/operations.md, "Many servers on one cluster"). */
  readonly cluster: ClusterSettings;
  /**
   * This server's stable name (`INSTANCE_ID`, default host:port): a restarted server
   * recovers at once the sagas its previous incarnation left open.
   */
  readonly instanceId: string;
  /** Live connections: subscriptions over WebSocket and the change log behind them. */
  readonly live: LiveSettings;
  /** Prometheus metrics at GET /metrics (README, "Metrics and probes"). */
  readonly metrics: MetricsSettings;
  /** Idempotency keys of mutations (`clientMutationId`; docs/api.md, "Retries and idempotency keys"). */
  readonly idempotency: IdempotencySettings;
  /**
   * Write the counted indexes' lists in their sparse spelling only (`COUNT_LISTS_SPARSE`;
   * both spellings are read): while servers of a build that reads only the sparse one still run.
   */
  readonly countListsSparse: boolean;
}

/** The Cassandra adapter's settings, as the `CASSANDRA_*` variables set them. */
export interface CassandraConfig extends CassandraSettings {
  /** Where the driver first connects (`CASSANDRA_CONTACT_POINTS`); empty with a secure connect bundle. */
  readonly contactPoints: readonly string[];
  /** Keyspace replication (`CASSANDRA_REPLICATION`); null in production when unset: no keyspace is created with a guess. */
  readonly replication: ReplicationSetting | null;
  /** Consistency of lightweight transactions' Paxos phase: LOCAL_SERIAL, or SERIAL across data centres. */
  readonly serialConsistency: 'LOCAL_SERIAL' | 'SERIAL';
  /** Create missing keyspace/tables at start (development); otherwise only check them. */
  readonly autoSchema: boolean;
  /** How long start-up keeps retrying an unreachable cluster. */
  readonly connectTimeoutS: number;
  /** How the driver reaches the cluster: pools, timeouts, retries, speculation, balancing. */
  readonly driver: CassandraDriverSettings;
  /** `CASSANDRA_USERNAME` with `CASSANDRA_PASSWORD` or `CASSANDRA_PASSWORD_FILE`'s content; null: none. */
  readonly credentials: CassandraCredentials | null;
  /** `CASSANDRA_TLS` and its files, read; null: plain TCP. */
  readonly tls: CassandraTlsSettings | null;
  /** `CASSANDRA_SECURE_CONNECT_BUNDLE`, a DataStax Astra bundle's path; null: none. */
  readonly secureConnectBundle: string | null;
}

/**
 * How tokens are verified (docs/operations.md, "Tokens from your identity provider"):
 * HS256 with `AUTH_SECRET` (and `AUTH_PREVIOUS_SECRETS`), or RS256/ES256/EdDSA against
 * the keys the provider publishes at `AUTH_JWKS_URL`; never both.
 */
export type AuthSettings = SharedSecretAuth | IdentityProviderAuth;

/** What both ways of verifying a token check. */
interface TokenClaimSettings {
  /** The `iss` a token must carry (`AUTH_ISSUER`); null: not checked. */
  readonly issuer: string | null;
  /** The audiences a token's `aud` must name one of (`AUTH_AUDIENCE`, comma-separated); empty: not checked. */
  readonly audiences: readonly string[];
  /** Where a token's roles are (`AUTH_ROLES_CLAIM`): a claim name, or a dotted path into one (`realm_access.roles`). */
  readonly rolesClaim: string;
}

/** Tokens signed with a shared secret (development and simple setups). */
export interface SharedSecretAuth extends TokenClaimSettings {
  readonly kind: 'shared-secret';
  /** Signs new tokens, and verifies (`AUTH_SECRET`). */
  readonly secret: string;
  /** Earlier secrets whose tokens still verify (`AUTH_PREVIOUS_SECRETS`). */
  readonly previousSecrets: readonly string[];
}

/** Tokens an identity provider signs, verified against its published keys. */
export interface IdentityProviderAuth extends TokenClaimSettings {
  readonly kind: 'identity-provider';
  /** The provider's JSON Web Key Set (`AUTH_JWKS_URL`). */
  readonly jwksUrl: string;
}
/** How long a mutation's idempotency key is kept. */
export interface IdempotencySettings {
  /** Seconds a key and its first result are kept (`IDEMPOTENCY_RETENTION_S`): a retry within them takes effect once. */
  readonly retentionSeconds: number;
}

/** The defaults: a day, longer than Cassandra's default hint window (3 h). */
export const DEFAULT_IDEMPOTENCY_SETTINGS: IdempotencySettings = Object.freeze({ retentionSeconds: 86_400 });

/** Whether `/metrics` is served, and the bearer token it requires. */
export interface MetricsSettings {
  /** Serve `GET /metrics` (`METRICS`, off by default). */
  readonly enabled: boolean;
  /** The bearer token a scrape must carry (`METRICS_TOKEN`); null: none required (refused in production). */
  readonly token: string | null;
}

/** How live connections run (docs/api.md and docs/how-it-works.md, "Live connections"). */
export interface LiveSettings {
  /** How often each server polls the change log of its live feeds (`LIVE_POLL_MS`). */
  readonly pollMs: number;
  /** How long the change log keeps a change, in seconds (`LIVE_RETENTION_S`): a cursor older is expired. */
  readonly retentionSeconds: number;
  /** Which layout the poller reads: per feed, the shards, or whichever costs less (`LIVE_FANOUT`). */
  readonly fanout: 'auto' | 'feeds' | 'shards';
  /** Subscriptions one socket may hold (`LIVE_MAX_PER_SOCKET`). */
  readonly maxPerSocket: number;
  /** Sockets one server accepts (`LIVE_MAX_SOCKETS`). */
  readonly maxSockets: number;
  /** How long a socket may take to send `connection_init`, in ms (`LIVE_INIT_TIMEOUT_MS`). */
  readonly initTimeoutMs: number;
  /** The largest message a client may send, in bytes (`LIVE_MAX_MESSAGE_BYTES`). */
  readonly maxMessageBytes: number;
  /** Bytes a socket may have waiting to be sent before it is closed as too slow (`LIVE_MAX_BUFFERED_BYTES`). */
  readonly maxBufferedBytes: number;
  /** Changes a subscription may have waiting before its socket is closed as too slow (`LIVE_MAX_QUEUED`). */
  readonly maxQueued: number;
  /**
   * Write a pointer for a counted feed's change too (`LIVE_COUNTED_POINTERS`): while
   * servers of a build before issue 39's marks-as-pointers, which read pointers only, still run.
   */
  readonly countedPointers: boolean;
}

/** The defaults of live connections (the composition root's, for processes without a configuration). */
export const DEFAULT_LIVE_SETTINGS: LiveSettings = Object.freeze({
  pollMs: 500,
  retentionSeconds: 86_400,
  fanout: 'auto',
  maxPerSocket: 100,
  maxSockets: 10_000,
  initTimeoutMs: 3_000,
  maxMessageBytes: 65_536,
  maxBufferedBytes: 1_048_576,
  maxQueued: 1_000,
  countedPointers: false,
});

/** The embedded store's tombstone limits and compaction, as Cassandra's cassandra.yaml sets them. */
export interface EmbeddedStoreSettings {
  /** A read passing over more tombstones logs a warning (`STORE_TOMBSTONE_WARN_THRESHOLD`). */
  readonly tombstoneWarnThreshold: number;
  /** A read passing over more tombstones fails (`STORE_TOMBSTONE_FAILURE_THRESHOLD`). */
  readonly tombstoneFailureThreshold: number;
  /** How often tombstones past their table's grace period are purged (`STORE_COMPACTION_INTERVAL_MS`, 0: never). */
  readonly compactionIntervalMs: number;
}

/**
 * The bounds several servers over one cluster rely on: how far apart their clocks may
 * be, and how long after its timestamp was chosen a write can still land.
 */
export interface ClusterSettings {
  /** Largest difference between two servers' clocks (`CLOCK_SKEW_MS`). */
  readonly clockSkewMs: number;
  /** Longest a store write can take to land after its timestamp was chosen (`STORE_WRITE_TIMEOUT_MS`). */
  readonly writeTimeoutMs: number;
  /**
   * A write time read this far (ms) ahead of the server's clock fails /readyz
   * (`CLOCK_SKEW_UNREADY_MS`; observability/clock-skew.ts). Absent: `unreadySkewMsOf`.
   */
  readonly unreadySkewMs?: number;
  /**
   * The trailing passes that pick up writes landing after the window above (batchlog
   * replay, hints, a coordinator cut off): each re-reads the last `horizonMs` every
   * `intervalMs` (`LATE_WRITE_PASSES`). Absent: `latePassesOf`'s defaults.
   */
  readonly latePasses?: readonly LatePass[];
}

/** One trailing pass over late writes: how far back it looks, and how often it runs (ms). */
export interface LatePass {
  readonly horizonMs: number;
  readonly intervalMs: number;
}

/**
 * The default trailing passes: the last hour every minute, and Cassandra's default
 * `max_hint_window` (3 h) every 15 minutes.
 */
export const DEFAULT_LATE_PASSES: readonly LatePass[] = Object.freeze([
  Object.freeze({ horizonMs: 3_600_000, intervalMs: 60_000 }),
  Object.freeze({ horizonMs: 10_800_000, intervalMs: 900_000 }),
]);

/** The trailing passes of `settings` (`LATE_WRITE_PASSES`, or the defaults). */
export function latePassesOf(settings: ClusterSettings): readonly LatePass[] {
  return settings.latePasses ?? DEFAULT_LATE_PASSES;
}

/**
 * `LATE_WRITE_PASSES`: comma-separated `horizon/interval` pairs in seconds, such as
 * `3600/60,10800/900`; each horizon longer than the write window, each interval shorter
 * than its horizon; `off` for none.
 */
function latePasses(env: NodeJS.ProcessEnv, windowMs: number): readonly LatePass[] {
  const raw = env.LATE_WRITE_PASSES?.trim();
  if (raw === undefined || raw === '') return DEFAULT_LATE_PASSES;
  if (raw === 'off') return Object.freeze([]);
  const passes = raw.split(',').map((part) => {
    const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(part);
    const horizonMs = m ? Number(m[1]) * 1000 : NaN;
    const intervalMs = m ? Number(m[2]) * 1000 : NaN;
    if (!m || !(horizonMs > windowMs) || !(intervalMs >= 1000) || !(intervalMs < horizonMs) || horizonMs > 30 * 86_400_000) {
      throw new ConfigError(
        `LATE_WRITE_PASSES must be comma-separated horizon/interval pairs in seconds (such as 3600/60,10800/900), each horizon above CLOCK_SKEW_MS + STORE_WRITE_TIMEOUT_MS (${windowMs} ms) and at most 30 days, each interval at least 1 and below its horizon, or "off"; got "${raw}"`,
      );
    }
    return Object.freeze({ horizonMs, intervalMs });
  });
  return Object.freeze(passes);
}

/** How many times `CLOCK_SKEW_MS` the readiness bound is by default. */
const UNREADY_SKEW_FACTOR = 5;

/** The readiness bound of `settings` (`CLOCK_SKEW_UNREADY_MS`, by default five times `CLOCK_SKEW_MS`). */
export function unreadySkewMsOf(settings: ClusterSettings): number {
  return settings.unreadySkewMs ?? UNREADY_SKEW_FACTOR * settings.clockSkewMs;
}

/** The defaults: NTP-synchronised servers, Cassandra's default write timeout. */
export const DEFAULT_CLUSTER_SETTINGS: ClusterSettings = Object.freeze({ clockSkewMs: 1_000, writeTimeoutMs: 2_000 });

/** The `CLOCK_SKEW_MS`, `STORE_WRITE_TIMEOUT_MS` and `CLOCK_SKEW_UNREADY_MS` settings; the last at least the first. */
function clusterSettings(env: NodeJS.ProcessEnv): ClusterSettings {
  const clockSkewMs = int(env, 'CLOCK_SKEW_MS', DEFAULT_CLUSTER_SETTINGS.clockSkewMs, 0, 600_000);
  const writeTimeoutMs = int(env, 'STORE_WRITE_TIMEOUT_MS', DEFAULT_CLUSTER_SETTINGS.writeTimeoutMs, 1, 600_000);
  const unreadySkewMs = int(env, 'CLOCK_SKEW_UNREADY_MS', UNREADY_SKEW_FACTOR * clockSkewMs, clockSkewMs, 6_000_000);
  const passes = latePasses(env, clockSkewMs + writeTimeoutMs);
  return Object.freeze({ clockSkewMs, writeTimeoutMs, unreadySkewMs, latePasses: passes });
}

/** A configuration error: names the variable, the rule, and what was received. */
/**
 * Points a principal may spend per window by default (`RATE_LIMIT_POINTS`): a hundred
 * of the costliest requests the cost limit allows (LIMIT_COST, 10,000) per minute, or
 * about 2,000 100-edge timeline pages with their authors; far above what a person
 * using an app, the demo or a test sends.
 */
export const DEFAULT_RATE_LIMIT_POINTS = 1_000_000;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return n;
}

function bool(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

/**
 * `CASSANDRA_REPLICATION`: "SimpleStrategy:<rf>" or
 * "NetworkTopologyStrategy:<dc>=<rf>[,<dc>=<rf>...]".
 */
export function parseReplication(raw: string): ReplicationSetting {
  const [strategy, spec = ''] = raw.split(':', 2) as [string, string?];
  if (strategy === 'SimpleStrategy' && /^\d+$/.test(spec)) {
    return { class: 'SimpleStrategy', replication_factor: Number(spec) };
  }
  if (strategy === 'NetworkTopologyStrategy' && /^[\w-]+=\d+(,[\w-]+=\d+)*$/.test(spec)) {
    const out: Record<string, number | string> = { class: 'NetworkTopologyStrategy' };
    for (const pair of spec.split(',')) {
      const [dc, rf] = pair.split('=') as [string, string];
      out[dc] = Number(rf);
    }
    return out as ReplicationSetting;
  }
  throw new ConfigError(
    `CASSANDRA_REPLICATION must be "SimpleStrategy:<rf>" or "NetworkTopologyStrategy:<dc>=<rf>,...", got "${raw}"`,
  );
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
}

function granularity(raw: string): BucketSetting {
  if (raw === 'year' || raw === 'month' || raw === 'day') return raw;
  throw new ConfigError(`SUSPENSION_BUCKET must be year, month or day, got "${raw}"`);
}

function corsOrigins(env: NodeJS.ProcessEnv, production: boolean): CorsOrigins {
  const raw = env.CORS_ORIGINS;
  if (raw === undefined) return production ? Object.freeze([]) : '*';
  try {
    return parseCorsOrigins(raw);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

/**
 * A production secret must be long, private and not trivially guessable: at least
 * MIN_PRODUCTION_SECRET_BYTES bytes, none of the published examples, and not one short
 * unit repeated ("aaaa…", "abab…").
 */
function checkProductionSecret(name: string, value: string): void {
  const bytes = Buffer.byteLength(value);
  if (bytes < MIN_PRODUCTION_SECRET_BYTES) {
    throw new ConfigError(`${name} must be at least ${MIN_PRODUCTION_SECRET_BYTES} bytes long when NODE_ENV=production, got ${bytes}`);
  }
  if (EXAMPLE_SECRETS.includes(value)) {
    throw new ConfigError(`${name} is an example secret printed in the docs or docker-compose.yml; generate one, e.g. \`openssl rand -base64 48\``);
  }
  if (/^(.{1,4})\1+$/su.test(value)) {
    throw new ConfigError(`${name} must not be one character or a short pattern repeated when NODE_ENV=production; generate one, e.g. \`openssl rand -base64 48\``);
  }
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3_600, d: 86_400 };

/** A duration in seconds: a number of seconds, or a number with a unit (`90s`, `15m`, `12h`, `30d`). */
function duration(env: NodeJS.ProcessEnv, name: string, fallback: string): number {
  const raw = env[name] === undefined || env[name] === '' ? fallback : env[name]!;
  const m = /^(\d{1,9})([smhd]?)$/.exec(raw);
  const seconds = m ? Number(m[1]) * UNITS[m[2] || 's']! : 0;
  if (seconds < 60 || seconds > 366 * 86_400) {
    throw new ConfigError(`${name} must be a duration between 60s and 366d, such as 3600, 12h or 30d, got "${raw}"`);
  }
  return seconds;
}

/**
 * `METRICS` and `METRICS_TOKEN`. In production the endpoint is never public: METRICS=true
 * without a token refuses to start.
 */
function metricsSettings(env: NodeJS.ProcessEnv, production: boolean): MetricsSettings {
  const enabled = bool(env, 'METRICS', false);
  const token = env.METRICS_TOKEN === undefined || env.METRICS_TOKEN === '' ? null : env.METRICS_TOKEN;
  if (token !== null && Buffer.byteLength(token) < 16) {
    throw new ConfigError(`METRICS_TOKEN must be at least 16 bytes long, got ${Buffer.byteLength(token)}`);
  }
  if (enabled && production && token === null) {
    throw new ConfigError(
      'METRICS=true needs METRICS_TOKEN when NODE_ENV=production (the metrics endpoint is never public in production); ' +
        'set METRICS_TOKEN to a secret, e.g. `openssl rand -base64 32`, and scrape with `Authorization: Bearer <token>`',
    );
  }
  return Object.freeze({ enabled, token });
}

/** `AUTH_ROLES_CLAIM`: a claim name (a namespaced URL included) or a dotted path into one. */
function rolesClaim(env: NodeJS.ProcessEnv): string {
  const raw = env.AUTH_ROLES_CLAIM;
  if (raw === undefined || raw === '') return 'roles';
  if (/\s/.test(raw) || (!raw.includes('://') && raw.split('.').some((part) => part === ''))) {
    throw new ConfigError(
      `AUTH_ROLES_CLAIM must be a claim name (roles, groups, https://example.com/roles) or a dotted path into one (realm_access.roles), got "${raw}"`,
    );
  }
  return raw;
}

/**
 * Earlier secrets still accepted (`CURSOR_PREVIOUS_SECRETS`, `AUTH_PREVIOUS_SECRETS`:
 * comma-separated), each under the rules of a secret, none the current one: a secret
 * rotates without invalidating what the old one signed.
 */
function previousSecrets(env: NodeJS.ProcessEnv, production: boolean, name: string, current: string): readonly string[] {
  const values = (env[name] ?? '').split(',').map((v) => v.trim()).filter(Boolean);
  values.forEach((value, i) => {
    const entry = `${name} (entry ${i + 1})`;
    if (Buffer.byteLength(value) < 16) throw new ConfigError(`${entry} must be at least 16 bytes long, got ${Buffer.byteLength(value)}`);
    if (value === current) throw new ConfigError(`${entry} is the current secret: list only the secrets it replaced`);
    if (production) checkProductionSecret(entry, value);
  });
  return Object.freeze(values);
}

/**
 * The `AUTH_*` settings. `AUTH_JWKS_URL` selects the identity provider's keys, and then
 * neither `AUTH_SECRET` nor `AUTH_PREVIOUS_SECRETS` may be set (a shared secret beside
 * the provider would be a second way in); in production it needs `AUTH_ISSUER` and
 * `AUTH_AUDIENCE` (a key set may sign tokens for other applications and tenants) and
 * https. Otherwise tokens are HS256 with `AUTH_SECRET`, and those signed with one of
 * `AUTH_PREVIOUS_SECRETS` still verify.
 */
function authSettings(env: NodeJS.ProcessEnv, production: boolean, secret: (name: 'AUTH_SECRET', dev: string) => string): AuthSettings {
  const claims: TokenClaimSettings = {
    issuer: env.AUTH_ISSUER === undefined || env.AUTH_ISSUER === '' ? null : env.AUTH_ISSUER,
    audiences: Object.freeze((env.AUTH_AUDIENCE ?? '').split(',').map((s) => s.trim()).filter(Boolean)),
    rolesClaim: rolesClaim(env),
  };
  const jwksUrl = env.AUTH_JWKS_URL;
  if (jwksUrl === undefined || jwksUrl === '') {
    const current = secret('AUTH_SECRET', DEV_AUTH_SECRET);
    return Object.freeze({ kind: 'shared-secret', secret: current, previousSecrets: previousSecrets(env, production, 'AUTH_PREVIOUS_SECRETS', current), ...claims });
  }
  for (const name of ['AUTH_SECRET', 'AUTH_PREVIOUS_SECRETS'] as const) {
    if (env[name] !== undefined && env[name] !== '') {
      throw new ConfigError(`${name} must not be set with AUTH_JWKS_URL: tokens are verified against the identity provider's keys only; unset one of them`);
    }
  }
  let url: URL;
  try {
    url = new URL(jwksUrl);
  } catch {
    throw new ConfigError(`AUTH_JWKS_URL must be the URL of the identity provider's JSON Web Key Set, such as https://example.auth0.com/.well-known/jwks.json, got "${jwksUrl}"`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && !production)) {
    throw new ConfigError(`AUTH_JWKS_URL must be an https URL${production ? ' when NODE_ENV=production' : ' (or http, outside production)'}, got "${jwksUrl}"`);
  }
  if (production) {
    const missing = [claims.issuer === null ? 'AUTH_ISSUER' : null, claims.audiences.length === 0 ? 'AUTH_AUDIENCE' : null].filter(Boolean);
    if (missing.length > 0) {
      throw new ConfigError(
        `AUTH_JWKS_URL needs ${missing.join(' and ')} when NODE_ENV=production: the provider's keys may sign tokens for other applications; ` +
          'set them to the issuer and audience of the tokens meant for this API',
      );
    }
  }
  return Object.freeze({ kind: 'identity-provider', jwksUrl: url.href, ...claims });
}

/**
 * The `CASSANDRA_*` driver settings, each within what the driver accepts; writes wait
 * `writeTimeoutMs` (STORE_WRITE_TIMEOUT_MS), the time the late-write window assumes.
 */
function cassandraDriver(env: NodeJS.ProcessEnv, writeTimeoutMs: number): CassandraDriverSettings {
  const d = DEFAULT_CASSANDRA_DRIVER_SETTINGS;
  const settings: CassandraDriverSettings = {
    connectionsPerHost: int(env, 'CASSANDRA_CONNECTIONS_PER_HOST', d.connectionsPerHost, 1, 64),
    connectionsPerRemoteHost: int(env, 'CASSANDRA_CONNECTIONS_PER_REMOTE_HOST', d.connectionsPerRemoteHost, 0, 64),
    requestTimeoutMs: int(env, 'CASSANDRA_REQUEST_TIMEOUT_MS', d.requestTimeoutMs, 100, 600_000),
    writeTimeoutMs,
    speculativeExecutions: int(env, 'CASSANDRA_SPECULATIVE_EXECUTIONS', d.speculativeExecutions, 0, 10),
    speculativeDelayMs: int(env, 'CASSANDRA_SPECULATIVE_DELAY_MS', d.speculativeDelayMs, 0, 60_000),
    retryPolicy: oneOf(env, 'CASSANDRA_RETRY_POLICY', ['default', 'never'] as const, d.retryPolicy),
    loadBalancing: oneOf(env, 'CASSANDRA_LOAD_BALANCING', ['default', 'token-aware', 'round-robin'] as const, d.loadBalancing),
  };
  // A speculative execution scheduled after the request has timed out would never be sent.
  if (settings.speculativeExecutions > 0 && settings.speculativeDelayMs >= settings.requestTimeoutMs) {
    throw new ConfigError(
      `CASSANDRA_SPECULATIVE_DELAY_MS must be below CASSANDRA_REQUEST_TIMEOUT_MS (${settings.requestTimeoutMs}) when CASSANDRA_SPECULATIVE_EXECUTIONS is set, got "${settings.speculativeDelayMs}"`,
    );
  }
  return Object.freeze(settings);
}

const CONSISTENCIES = ['ONE', 'TWO', 'THREE', 'QUORUM', 'ALL', 'LOCAL_QUORUM', 'EACH_QUORUM', 'LOCAL_ONE'];

/** Whether `env` runs the server in production (`NODE_ENV=production`). */
function isProduction(env: NodeJS.ProcessEnv): boolean {
  return (env.NODE_ENV ?? 'development') === 'production';
}

/** A variable's value, or null when it is unset or empty. */
function optional(env: NodeJS.ProcessEnv, name: string): string | null {
  const raw = env[name];
  return raw === undefined || raw === '' ? null : raw;
}

/**
 * The content of the file a `*_FILE` variable names (a mounted secret, a PEM). The error
 * names the variable and the path, never the content.
 */
function fileOf(name: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new ConfigError(`${name} must name a readable file, got "${path}" (${code})`);
  }
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----/;
const PEM_PRIVATE_KEY = /-----BEGIN [A-Z ]*PRIVATE KEY-----/;

/** A PEM file's content, refused unless it holds what `kind` says. */
function pemFileOf(env: NodeJS.ProcessEnv, name: string, kind: 'certificate' | 'private key'): string | null {
  const path = optional(env, name);
  if (path === null) return null;
  const pem = fileOf(name, path);
  if (!(kind === 'certificate' ? PEM_CERTIFICATE : PEM_PRIVATE_KEY).test(pem)) {
    throw new ConfigError(`${name} must name a PEM file holding a ${kind} ("-----BEGIN ${kind === 'certificate' ? 'CERTIFICATE' : 'PRIVATE KEY'}-----"), got "${path}", which holds none`);
  }
  return pem;
}

/**
 * `CASSANDRA_USERNAME` with `CASSANDRA_PASSWORD` or `CASSANDRA_PASSWORD_FILE` (a mounted
 * secret; surrounding whitespace trimmed): both or neither. No message quotes a password.
 */
function cassandraCredentials(env: NodeJS.ProcessEnv): CassandraCredentials | null {
  const username = optional(env, 'CASSANDRA_USERNAME');
  const inline = optional(env, 'CASSANDRA_PASSWORD');
  const file = optional(env, 'CASSANDRA_PASSWORD_FILE');
  if (inline !== null && file !== null) {
    throw new ConfigError('CASSANDRA_PASSWORD and CASSANDRA_PASSWORD_FILE must not both be set: set one (the file, where secrets are mounted as files)');
  }
  let password = inline;
  if (file !== null) {
    password = fileOf('CASSANDRA_PASSWORD_FILE', file).trim();
    if (password === '') throw new ConfigError(`CASSANDRA_PASSWORD_FILE must name a file holding the password, got "${file}", which is empty`);
  }
  if (username === null && password === null) return null;
  if (username === null) throw new ConfigError(`CASSANDRA_USERNAME must be set with ${inline !== null ? 'CASSANDRA_PASSWORD' : 'CASSANDRA_PASSWORD_FILE'}`);
  if (password === null) throw new ConfigError('CASSANDRA_USERNAME needs a password: set CASSANDRA_PASSWORD or CASSANDRA_PASSWORD_FILE');
  return Object.freeze({ username, password });
}

/** The variables that only mean something with CASSANDRA_TLS=true. */
const TLS_VARIABLES = ['CASSANDRA_TLS_CA_FILE', 'CASSANDRA_TLS_CERT_FILE', 'CASSANDRA_TLS_KEY_FILE', 'CASSANDRA_TLS_SERVER_NAME', 'CASSANDRA_TLS_VERIFY'];

/**
 * `CASSANDRA_TLS` and its files, read and checked now: a file that cannot be read, holds
 * no PEM, or a certificate and key that do not belong together refuse to start here
 * rather than at the first connection. Verification stays on in production.
 */
function cassandraTls(env: NodeJS.ProcessEnv, production: boolean): CassandraTlsSettings | null {
  if (!bool(env, 'CASSANDRA_TLS', false)) {
    const stray = TLS_VARIABLES.filter((name) => optional(env, name) !== null);
    if (stray.length > 0) throw new ConfigError(`${stray.join(', ')} only apply with CASSANDRA_TLS=true, which is not set`);
    return null;
  }
  const verify = bool(env, 'CASSANDRA_TLS_VERIFY', true);
  if (!verify && production) {
    throw new ConfigError(
      'CASSANDRA_TLS_VERIFY=false is refused when NODE_ENV=production (anyone on the path could pose as the cluster); set CASSANDRA_TLS_CA_FILE to the CA that signed the nodes\' certificates instead',
    );
  }
  const ca = pemFileOf(env, 'CASSANDRA_TLS_CA_FILE', 'certificate');
  const cert = pemFileOf(env, 'CASSANDRA_TLS_CERT_FILE', 'certificate');
  const key = pemFileOf(env, 'CASSANDRA_TLS_KEY_FILE', 'private key');
  if ((cert === null) !== (key === null)) {
    throw new ConfigError('CASSANDRA_TLS_CERT_FILE and CASSANDRA_TLS_KEY_FILE must be set together (a client certificate and its private key)');
  }
  try {
    createSecureContext({ ...(ca === null ? {} : { ca }), ...(cert === null ? {} : { cert, key: key! }) });
  } catch (err) {
    const files = cert === null ? 'CASSANDRA_TLS_CA_FILE' : 'CASSANDRA_TLS_CA_FILE, CASSANDRA_TLS_CERT_FILE and CASSANDRA_TLS_KEY_FILE';
    // OpenSSL's reason (a key that does not match, an encrypted key), never the files' content.
    throw new ConfigError(`${files} must hold a usable CA, certificate and unencrypted key, got: ${(err as Error).message.split('\n')[0]}`);
  }
  return Object.freeze({
    ca,
    clientCertificate: cert === null ? null : Object.freeze({ cert, key: key! }),
    serverName: optional(env, 'CASSANDRA_TLS_SERVER_NAME'),
    verify,
  });
}

/** The first bytes of a zip file: a file's header ("PK\x03\x04"), or the end record of an empty one ("PK\x05\x06"). */
const ZIP_MAGIC = [Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.from([0x50, 0x4b, 0x05, 0x06])];

/**
 * `CASSANDRA_SECURE_CONNECT_BUNDLE`: a readable zip file. The bundle names the contact
 * points, the data centre and the certificates, so the variables that would set them
 * are refused beside it rather than silently ignored.
 */
function secureConnectBundle(env: NodeJS.ProcessEnv): string | null {
  const path = optional(env, 'CASSANDRA_SECURE_CONNECT_BUNDLE');
  if (path === null) return null;
  const beside = ['CASSANDRA_CONTACT_POINTS', 'CASSANDRA_LOCAL_DC', 'CASSANDRA_TLS', ...TLS_VARIABLES].filter((name) => optional(env, name) !== null);
  if (beside.length > 0) {
    throw new ConfigError(
      `CASSANDRA_SECURE_CONNECT_BUNDLE names the nodes, the data centre and the TLS certificates itself: unset ${beside.join(', ')}`,
    );
  }
  let head: Buffer;
  try {
    head = readFileSync(path).subarray(0, 4);
  } catch (err) {
    throw new ConfigError(`CASSANDRA_SECURE_CONNECT_BUNDLE must name a readable file, got "${path}" (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!ZIP_MAGIC.some((magic) => head.equals(magic))) {
    throw new ConfigError(`CASSANDRA_SECURE_CONNECT_BUNDLE must name the secure connect bundle (a zip file) downloaded from the Astra console, got "${path}", which is not a zip file`);
  }
  return path;
}

/**
 * The Cassandra adapter's settings from the `CASSANDRA_*` variables: where the cluster
 * is, how to authenticate and encrypt, the keyspace and its replication, consistency,
 * start-up and the driver's tuning. `npm run schema` and the test stores read it too.
 */
export function cassandraConfig(
  env: NodeJS.ProcessEnv,
  production = isProduction(env),
  writeTimeoutMs = clusterSettings(env).writeTimeoutMs,
): CassandraConfig {
  const consistency = (env.CASSANDRA_CONSISTENCY ?? 'LOCAL_QUORUM').toUpperCase();
  if (!CONSISTENCIES.includes(consistency)) {
    throw new ConfigError(`CASSANDRA_CONSISTENCY must be one of ${CONSISTENCIES.join(', ')}, got "${consistency}"`);
  }
  const bundle = secureConnectBundle(env);
  const replication = optional(env, 'CASSANDRA_REPLICATION');
  return Object.freeze({
    contactPoints: Object.freeze(bundle !== null ? [] : (env.CASSANDRA_CONTACT_POINTS ?? '127.0.0.1').split(',').map((s) => s.trim()).filter(Boolean)),
    localDataCenter: bundle !== null ? '' : (env.CASSANDRA_LOCAL_DC ?? 'datacenter1'),
    keyspace: env.CASSANDRA_KEYSPACE ?? 'relay',
    // Production creates no keyspace with a guessed replication (ensureTables names the variable).
    replication: replication !== null ? parseReplication(replication) : production ? null : parseReplication('SimpleStrategy:1'),
    consistency,
    serialConsistency: oneOf(env, 'CASSANDRA_SERIAL_CONSISTENCY', ['LOCAL_SERIAL', 'SERIAL'] as const, 'LOCAL_SERIAL'),
    autoSchema: bool(env, 'CASSANDRA_AUTO_SCHEMA', false),
    connectTimeoutS: int(env, 'CASSANDRA_CONNECT_TIMEOUT_S', 60, 0, 3_600),
    driver: cassandraDriver(env, writeTimeoutMs),
    credentials: cassandraCredentials(env),
    tls: cassandraTls(env, production),
    secureConnectBundle: bundle,
  });
}

/** Read and validate the configuration. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const store = env.STORE ?? 'sqlite';
  if (store !== 'sqlite' && store !== 'cassandra') {
    throw new ConfigError(`STORE must be "sqlite" or "cassandra", got "${store}"`);
  }
  const production = isProduction(env);
  const cluster = clusterSettings(env);
  const devSecrets: Array<'CURSOR_SECRET' | 'AUTH_SECRET'> = [];
  const secret = <N extends 'CURSOR_SECRET' | 'AUTH_SECRET'>(name: N, dev: string) => {
    const value = env[name];
    if (production && (value === undefined || value === '' || value === dev)) {
      throw new ConfigError(
        `${name} must be set to a real secret (${MIN_PRODUCTION_SECRET_BYTES}+ bytes) when NODE_ENV=production; the development secret is refused`,
      );
    }
    if (value === undefined || value === '') {
      devSecrets.push(name);
      return dev;
    }
    if (Buffer.byteLength(value) < 16) throw new ConfigError(`${name} must be at least 16 bytes long, got ${Buffer.byteLength(value)}`);
    if (production) checkProductionSecret(name, value);
    return value;
  };
  const cursorSecret = secret('CURSOR_SECRET', DEV_CURSOR_SECRET);
  const config: Config = {
    metrics: metricsSettings(env, production),
    nodeEnv: env.NODE_ENV ?? 'development',
    host: env.HOST ?? '0.0.0.0',
    port: int(env, 'PORT', 4000, 0, 65535),
    store,
    sqlitePath: env.SQLITE_PATH ?? './data/app.db',
    embeddedStore: Object.freeze({
      tombstoneWarnThreshold: int(env, 'STORE_TOMBSTONE_WARN_THRESHOLD', 1_000, 0, 1_000_000_000),
      tombstoneFailureThreshold: int(env, 'STORE_TOMBSTONE_FAILURE_THRESHOLD', 100_000, 0, 1_000_000_000),
      compactionIntervalMs: int(env, 'STORE_COMPACTION_INTERVAL_MS', 600_000, 0, 86_400_000),
    }),
    cassandra: cassandraConfig(env, production, cluster.writeTimeoutMs),
    cursorSecret,
    cursorPreviousSecrets: previousSecrets(env, production, 'CURSOR_PREVIOUS_SECRETS', cursorSecret),
    auth: authSettings(env, production, secret),
    devSecrets: Object.freeze(devSecrets),
    logLevel: env.LOG_LEVEL ?? 'info',
    seedDemo: bool(env, 'SEED_DEMO', !production),
    maxTokenAgeSeconds: duration(env, 'MAX_TOKEN_AGE', '30d'),
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 1_000_000, 1_000, 100_000_000),
    suspensionBucket: granularity(env.SUSPENSION_BUCKET ?? 'month'),
    acceptanceStrategy: oneOf(env, 'ACCEPTANCE_STRATEGY', ['first-write-wins', 'lwt'] as const, 'first-write-wins'),
    listApplier: bool(env, 'LIST_APPLIER', true),
    playground: bool(env, 'PLAYGROUND', !production),
    introspection: bool(env, 'INTROSPECTION', !production),
    corsOrigins: corsOrigins(env, production),
    production,
    requestTimeoutMs: int(env, 'REQUEST_TIMEOUT_MS', 30_000, 1_000, 600_000),
    maxResponseBytes: int(env, 'MAX_RESPONSE_BYTES', 4_000_000, 1_000, 1_000_000_000),
    writeTimeoutMs: int(env, 'WRITE_TIMEOUT_MS', 10_000, 100, 600_000),
    limits: Object.freeze({
      depth: int(env, 'LIMIT_DEPTH', 10, 1, 100),
      aliases: int(env, 'LIMIT_ALIASES', 15, 0, 1_000),
      tokens: int(env, 'LIMIT_TOKENS', 3_000, 10, 1_000_000),
      directives: int(env, 'LIMIT_DIRECTIVES', 20, 0, 1_000),
      cost: int(env, 'LIMIT_COST', 10_000, 1, 100_000_000),
    }),
    rateLimit: Object.freeze({
      points: int(env, 'RATE_LIMIT_POINTS', DEFAULT_RATE_LIMIT_POINTS, 0, 1_000_000_000_000),
      windowSeconds: int(env, 'RATE_LIMIT_WINDOW_S', 60, 1, 86_400),
    }),
    trustProxy: bool(env, 'TRUST_PROXY', false),
    inFlight: Object.freeze({
      // The embedded store's requests run on the event loop: more at once only adds latency.
      // On Cassandra 16 cover the round trips of two cores' worth of requests; a principal
      // holds a quarter of them (in-flight-gate.ts).
      maxInFlight: int(env, 'MAX_IN_FLIGHT', store === 'cassandra' ? 16 : 8, 0, 1_000_000),
      maxQueued: int(env, 'MAX_QUEUED', 1_024, 0, 1_000_000),
      queueTimeoutMs: int(env, 'QUEUE_TIMEOUT_MS', 5_000, 1, 600_000),
    }),
    listApplierIntervalMs: int(env, 'LIST_APPLIER_INTERVAL_MS', 1_000, 10, 3_600_000),
    saga: Object.freeze({
      recoveryIntervalMs: int(env, 'SAGA_RECOVERY_INTERVAL_MS', 30_000, 100, 86_400_000),
      recoveryGraceMs: int(env, 'SAGA_RECOVERY_GRACE_MS', 10_000, 0, 86_400_000),
    }),
    instanceId: env.INSTANCE_ID || `${hostname()}:${env.PORT || 4000}`,
    live: Object.freeze({
      pollMs: int(env, 'LIVE_POLL_MS', DEFAULT_LIVE_SETTINGS.pollMs, 10, 60_000),
      retentionSeconds: int(env, 'LIVE_RETENTION_S', DEFAULT_LIVE_SETTINGS.retentionSeconds, 60, 2_592_000),
      fanout: oneOf(env, 'LIVE_FANOUT', ['auto', 'feeds', 'shards'] as const, DEFAULT_LIVE_SETTINGS.fanout),
      maxPerSocket: int(env, 'LIVE_MAX_PER_SOCKET', DEFAULT_LIVE_SETTINGS.maxPerSocket, 1, 100_000),
      maxSockets: int(env, 'LIVE_MAX_SOCKETS', DEFAULT_LIVE_SETTINGS.maxSockets, 0, 1_000_000),
      initTimeoutMs: int(env, 'LIVE_INIT_TIMEOUT_MS', DEFAULT_LIVE_SETTINGS.initTimeoutMs, 100, 600_000),
      maxMessageBytes: int(env, 'LIVE_MAX_MESSAGE_BYTES', DEFAULT_LIVE_SETTINGS.maxMessageBytes, 1_024, 100_000_000),
      maxBufferedBytes: int(env, 'LIVE_MAX_BUFFERED_BYTES', DEFAULT_LIVE_SETTINGS.maxBufferedBytes, 1_024, 1_000_000_000),
      maxQueued: int(env, 'LIVE_MAX_QUEUED', DEFAULT_LIVE_SETTINGS.maxQueued, 1, 1_000_000),
      countedPointers: bool(env, 'LIVE_COUNTED_POINTERS', DEFAULT_LIVE_SETTINGS.countedPointers),
    }),
    idempotency: Object.freeze({
      retentionSeconds: int(env, 'IDEMPOTENCY_RETENTION_S', DEFAULT_IDEMPOTENCY_SETTINGS.retentionSeconds, 60, 2_592_000),
    }),
    cluster,
    countListsSparse: bool(env, 'COUNT_LISTS_SPARSE', false),
  };
  return Object.freeze(config);
}
