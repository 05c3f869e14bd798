/**
 * Each way a connection to a secured cluster fails is named with what to fix, and what
 * retrying cannot fix is refused at once instead of retried for
 * CASSANDRA_CONNECT_TIMEOUT_S. Without a Cassandra: the real driver against a local TLS
 * endpoint holding a test node certificate (test/support/tls/), the driver's own
 * authentication errors, and secure connect bundles that are missing or not bundles.
 * The real secured node is test/store/cassandra-secured.test.ts.
 */
import { readFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type TLSSocket, type TlsOptions } from 'node:tls';
import cassandra from 'cassandra-driver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cassandraStoreFrom } from '../../src/store/cassandra/cassandra-connect.js';
import { connectFailureOf } from '../../src/store/cassandra/cassandra-errors.js';
import type { CassandraSettings, CassandraTlsSettings } from '../../src/store/cassandra/cassandra-settings.js';
import { CassandraStore, type CassandraClientLike } from '../../src/store/cassandra/cassandra-store.js';
import { StoreStartupError } from '../../src/store/port.js';
import { defineTable } from '../../src/store/table.js';
import { runUntilExit } from '../support/child-server.js';

const { errors } = cassandra;
const TLS = new URL('../support/tls/', import.meta.url).pathname;
const pem = (name: string) => readFileSync(`${TLS}${name}`, 'utf8');
const users = defineTable({ name: 'users', columns: { user_id: 'uuid', name: 'text' }, partitionKey: ['user_id'] });
const SECRET = 'never-printed-password-5b1c';

/** The settings of a store on `contactPoint`, retrying for `connectTimeoutS`. */
function settings(contactPoint: string, extra: Partial<CassandraSettings> = {}): CassandraSettings {
  return {
    contactPoints: [contactPoint],
    localDataCenter: 'datacenter1',
    keyspace: 'relay',
    replication: { class: 'SimpleStrategy', replication_factor: 1 },
    consistency: 'LOCAL_QUORUM',
    serialConsistency: 'LOCAL_SERIAL',
    autoSchema: false,
    connectTimeoutS: 20,
    ...extra,
  };
}

/** How `ensureTables` fails on `settings`, and how long it took. */
async function startupFailure(s: CassandraSettings): Promise<{ message: string; ms: number }> {
  const lines: string[] = [];
  const store = cassandraStoreFrom(s, { log: (m) => lines.push(m) });
  const started = Date.now();
  const error = await store.ensureTables([users]).catch((e: unknown) => e);
  const ms = Date.now() - started;
  await store.close();
  expect(error).toBeInstanceOf(StoreStartupError);
  return { message: (error as Error).message, ms };
}

/** A local TLS endpoint that completes handshakes and then never answers, as a node would that hangs. */
interface TlsEndpoint {
  readonly contactPoint: string;
  /** The connections whose handshake completed. */
  readonly handshakes: TLSSocket[];
  close(): Promise<void>;
}

async function tlsEndpoint(options: TlsOptions, host = '127.0.0.1'): Promise<TlsEndpoint> {
  const handshakes: TLSSocket[] = [];
  const server = createServer({ cert: pem('node.pem'), key: pem('node-key.pem'), ...options }, (socket) => handshakes.push(socket));
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    contactPoint: `${host}:${(server.address() as { port: number }).port}`,
    handshakes,
    async close() {
      for (const socket of handshakes) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('a TLS endpoint the driver does not trust or that is not the name verified', () => {
  let endpoint: TlsEndpoint;
  let contactPoint: string;
  let handshakes: TLSSocket[];

  beforeAll(async () => {
    endpoint = await tlsEndpoint({});
    ({ contactPoint, handshakes } = endpoint);
  });
  afterAll(() => endpoint.close());

  const tls = (extra: Partial<CassandraTlsSettings>): CassandraTlsSettings => ({ ca: null, clientCertificate: null, serverName: null, verify: true, ...extra });

  it('refuses a certificate no trusted CA signed, at once, naming CASSANDRA_TLS_CA_FILE: with the system CAs and with another CA', async () => {
    for (const ca of [null, pem('other-ca.pem')]) {
      const { message, ms } = await startupFailure(settings(contactPoint, { tls: tls({ ca }) }));
      expect(message).toBe(
        "Cassandra refused the connection: the node's TLS certificate is not trusted (UNABLE_TO_VERIFY_LEAF_SIGNATURE): set CASSANDRA_TLS_CA_FILE to the PEM of the CA that signed the nodes' certificates",
      );
      // Not retried for the 20 s of connectTimeoutS.
      expect(ms).toBeLessThan(5_000);
    }
  });

  it('refuses a certificate that does not carry the name verified, naming CASSANDRA_TLS_SERVER_NAME', async () => {
    const { message, ms } = await startupFailure(settings(contactPoint, { tls: tls({ ca: pem('ca.pem'), serverName: 'other.cassandra.test' }) }));
    expect(message).toMatch(/^Cassandra refused the connection: the node's TLS certificate does not carry the name verified \(.*other\.cassandra\.test.*\): set CASSANDRA_TLS_SERVER_NAME to a name the certificate carries$/);
    expect(ms).toBeLessThan(5_000);
    // With no name set, the address connected to is verified: the certificate names 127.0.0.1, not 127.0.0.2.
    const elsewhere = await tlsEndpoint({}, '127.0.0.2');
    try {
      const byAddress = await startupFailure(settings(elsewhere.contactPoint, { tls: tls({ ca: pem('ca.pem') }) }));
      expect(byAddress.message).toMatch(/\(.*IP: 127\.0\.0\.2 is not in the cert's list.*\): set CASSANDRA_TLS_SERVER_NAME/);
    } finally {
      await elsewhere.close();
    }
  });

  it('completes the handshake with the CA and the name the certificate carries, then gives up on a node that never answers within the timeout', async () => {
    const before = handshakes.length;
    const { message, ms } = await startupFailure(settings(contactPoint, { connectTimeoutS: 2, tls: tls({ ca: pem('ca.pem'), serverName: 'node.cassandra.test' }) }));
    expect(handshakes.length).toBeGreaterThan(before);
    expect(message).toMatch(/^Cassandra unreachable/);
    // The driver alone would wait its 12 s read timeout per attempt.
    expect(ms).toBeLessThan(4_000);
  });

  it('makes the server exit non-zero with one line naming CASSANDRA_TLS_CA_FILE, never printing the password', async () => {
    const { code, stdout, stderr, ms } = await runUntilExit({
      CASSANDRA_CONTACT_POINTS: contactPoint,
      CASSANDRA_TLS: 'true',
      CASSANDRA_USERNAME: 'relay',
      CASSANDRA_PASSWORD: SECRET,
      CASSANDRA_CONNECT_TIMEOUT_S: '30',
    });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual([expect.stringMatching(/^cannot start: Cassandra refused the connection: .*set CASSANDRA_TLS_CA_FILE/)]);
    expect(ms).toBeLessThan(30_000);
    expect(stdout + stderr).not.toContain(SECRET);
  }, 60_000);
});

describe('a node that requires a client certificate', () => {
  it('names CASSANDRA_TLS_CERT_FILE and CASSANDRA_TLS_KEY_FILE when none is sent, and completes the handshake with one its CA signed', async () => {
    const { contactPoint, handshakes, close } = await tlsEndpoint({ ca: pem('ca.pem'), requestCert: true, rejectUnauthorized: true });
    try {
      const tls = { ca: pem('ca.pem'), serverName: null, verify: true };
      const { message } = await startupFailure(settings(contactPoint, { tls: { ...tls, clientCertificate: null } }));
      expect(message).toMatch(/^Cassandra refused the connection: the node refused the TLS handshake \(ERR_SSL_\w+\): it wants a client certificate it trusts; set CASSANDRA_TLS_CERT_FILE and CASSANDRA_TLS_KEY_FILE$/);
      expect(handshakes).toHaveLength(0);
      await startupFailure(settings(contactPoint, { connectTimeoutS: 1, tls: { ...tls, clientCertificate: { cert: pem('client.pem'), key: pem('client-key.pem') } } }));
      expect(handshakes.length).toBeGreaterThan(0);
      expect(handshakes[0]!.authorized).toBe(true);
    } finally {
      await close();
    }
  });
});

/** A driver client whose every connect fails with `error`, counting the attempts. */
function failingClient(error: Error): CassandraClientLike & { attempts: number } {
  const client = {
    attempts: 0,
    async connect() {
      client.attempts++;
      throw error;
    },
    execute: () => Promise.reject(new Error('not connected')),
    batch: () => Promise.reject(new Error('not connected')),
    metadata: {},
    shutdown: async () => undefined,
  };
  return client;
}

describe('authentication', () => {
  const refused = new errors.NoHostAvailableError({
    '10.0.0.1:9042': new errors.AuthenticationError('Provided username relay and/or password are incorrect'),
    '10.0.0.2:9042': new Error('connect ECONNREFUSED 10.0.0.2:9042'),
  });

  it('refused is not retried for the timeout, and names CASSANDRA_USERNAME and CASSANDRA_PASSWORD', async () => {
    const client = failingClient(refused);
    const store = new CassandraStore({ client, keyspace: 'relay', connectTimeoutMs: 30_000 });
    const started = Date.now();
    await expect(store.ensureTables([users])).rejects.toThrow(
      new StoreStartupError(
        'Cassandra refused the connection: 10.0.0.1:9042: authentication refused (Provided username relay and/or password are incorrect): check CASSANDRA_USERNAME and CASSANDRA_PASSWORD (or CASSANDRA_PASSWORD_FILE)',
      ),
    );
    expect(client.attempts).toBe(1);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('required by a cluster given no credentials says to set them, in either of the driver’s wordings', () => {
    for (const wording of ['Authentication provider not set', 'Host 10.0.0.1:9042 requires authentication, but no authenticator found in the options']) {
      const none = new errors.NoHostAvailableError({ '10.0.0.1:9042': new errors.AuthenticationError(wording) });
      expect(connectFailureOf(none)).toEqual({
        reason: 'the cluster requires authentication and no credentials are set: set CASSANDRA_USERNAME and CASSANDRA_PASSWORD (or CASSANDRA_PASSWORD_FILE)',
        retry: false,
      });
    }
  });

  it('is told apart from nodes that are only unreachable, which are retried', () => {
    const down = new errors.NoHostAvailableError({
      '10.0.0.1:9042': new Error('connect ECONNREFUSED 10.0.0.1:9042'),
      '10.0.0.2:9042': new errors.OperationTimedOutError('The host 10.0.0.2:9042 did not reply before timeout 12000 ms'),
    });
    expect(connectFailureOf(down)).toEqual({
      reason: '10.0.0.1:9042: connect ECONNREFUSED 10.0.0.1:9042; 10.0.0.2:9042: The host 10.0.0.2:9042 did not reply before timeout 12000 ms',
      retry: true,
    });
    // A plain connection to a node that requires TLS: reset, retried, with the likely cause.
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    expect(connectFailureOf(new errors.NoHostAvailableError({ '10.0.0.1:9042': reset }))).toEqual({
      reason: '10.0.0.1:9042: read ECONNRESET (a node that requires TLS resets plain connections: set CASSANDRA_TLS=true?)',
      retry: true,
    });
  });
});

describe('a DataStax Astra secure connect bundle', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bundle-'));

  it('that is a zip without a bundle inside is refused at once, naming CASSANDRA_SECURE_CONNECT_BUNDLE', async () => {
    // The end record of an empty zip archive.
    const empty = join(dir, 'empty.zip');
    writeFileSync(empty, Buffer.from([0x50, 0x4b, 0x05, 0x06, ...new Array<number>(18).fill(0)]));
    const { message, ms } = await startupFailure({ ...settings(''), contactPoints: [], localDataCenter: '', secureConnectBundle: empty });
    expect(message).toBe(
      `Cassandra refused the connection: the secure connect bundle ${empty} is not a usable secure connect bundle (Config file must be contained in secure bundle): set CASSANDRA_SECURE_CONNECT_BUNDLE to the zip file downloaded from the Astra console`,
    );
    expect(ms).toBeLessThan(5_000);
  });

  it('that is missing stops the server at its configuration, naming the variable and the path', async () => {
    const missing = join(dir, 'secure-connect-relay.zip');
    const { code, stderr } = await runUntilExit({ CASSANDRA_SECURE_CONNECT_BUNDLE: missing, CASSANDRA_USERNAME: 'client-id', CASSANDRA_PASSWORD: SECRET });
    expect(code).toBe(2);
    expect(stderr.trim()).toBe(`configuration error: CASSANDRA_SECURE_CONNECT_BUNDLE must name a readable file, got "${missing}" (ENOENT)`);
    expect(stderr).not.toContain(SECRET);
  }, 60_000);
});
