/**
 * The real server against a real secured Cassandra (PasswordAuthenticator, client TLS):
 * it starts and serves with a password and with a password file, TLS verified against
 * the node's CA; the wrong password, no password, an untrusted certificate (the system's
 * CAs, another CA) and a wrong server name are each refused at once with their own
 * line, and no output ever holds the password.
 *
 * Runs when the product's own variables describe a secured cluster:
 * CASSANDRA_CONTACT_POINTS, CASSANDRA_USERNAME with CASSANDRA_PASSWORD (or _FILE), and
 * CASSANDRA_TLS=true with CASSANDRA_TLS_CA_FILE (plus CASSANDRA_TLS_CERT_FILE /
 * CASSANDRA_TLS_KEY_FILE and CASSANDRA_TLS_SERVER_NAME as the node requires); otherwise
 * skipped, with the reason printed (docs/testing.md, "The test suites on Cassandra").
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_TABLES } from '../../src/composition-root.js';
import { cassandraConfig } from '../../src/config.js';
import { cassandraStoreFrom } from '../../src/store/cassandra/cassandra-connect.js';
import { runUntilExit, startChildServer, type ChildServer } from '../support/child-server.js';
import { cassandraClient, DDL_TIMEOUT_MS, testConnectionSettings, uniqueKeyspace } from '../support/stores.js';

/** The test run's `CASSANDRA_*` variables, or why they do not describe a secured cluster. */
function securedCluster(): { env: Record<string, string> } | { reason: string } {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name, value]) => name.startsWith('CASSANDRA_') && value)) as Record<string, string>;
  const { credentials, tls } = testConnectionSettings();
  if (!env.CASSANDRA_CONTACT_POINTS || !credentials || !tls?.ca) {
    return {
      reason:
        'no secured Cassandra configured: set CASSANDRA_CONTACT_POINTS, CASSANDRA_USERNAME with CASSANDRA_PASSWORD (or CASSANDRA_PASSWORD_FILE), CASSANDRA_TLS=true and CASSANDRA_TLS_CA_FILE',
    };
  }
  return { env };
}

const secured = securedCluster();
if ('reason' in secured) console.warn(`[secured Cassandra] SKIPPED: ${secured.reason}`);
const OTHER_CA = new URL('../support/tls/other-ca.pem', import.meta.url).pathname;

describe.skipIf('reason' in secured)(`a secured Cassandra${'reason' in secured ? ` (skipped: ${secured.reason})` : ''}`, () => {
  const base = 'env' in secured ? secured.env : {};
  const password = testConnectionSettings().credentials?.password ?? '';
  const keyspace = uniqueKeyspace('secured');
  const dir = mkdtempSync(join(tmpdir(), 'secured-'));
  const running: ChildServer[] = [];

  beforeAll(async () => {
    // The schema, created over TLS with the credentials as `npm run schema` would.
    const store = cassandraStoreFrom({ ...cassandraConfig({ ...base, CASSANDRA_KEYSPACE: keyspace }, false), autoSchema: true }, { log: () => undefined });
    try {
      await store.ensureTables(ALL_TABLES);
    } finally {
      await store.close();
    }
  }, DDL_TIMEOUT_MS.cassandra);

  afterAll(async () => {
    for (const server of running) server.process.kill('SIGKILL');
    const admin = await cassandraClient(base.CASSANDRA_CONTACT_POINTS!.split(','));
    try {
      await admin.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
    } finally {
      await admin.shutdown();
    }
  }, 120_000);

  /** Start the real server on the secured keyspace with `env` over the run's variables; it answers a read of the store. */
  async function serves(env: Record<string, string>): Promise<void> {
    const server = await startChildServer(':memory:', { ...base, STORE: 'cassandra', CASSANDRA_KEYSPACE: keyspace, ...env });
    running.push(server);
    const res = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ userByUsername(username: "nobody-here") { id } }' }),
    });
    const body = (await res.json()) as { data?: unknown; errors?: unknown };
    expect(body.errors).toBeUndefined();
    expect(body.data).toEqual({ userByUsername: null });
    expect(server.output()).not.toContain(password);
    server.process.kill('SIGTERM');
    await server.exited;
  }

  /** Start the server with `env` over the run's variables (empty: unset); it must exit at once with one line. */
  async function refused(env: Record<string, string>): Promise<string> {
    const { code, stdout, stderr, ms } = await runUntilExit({ ...base, CASSANDRA_KEYSPACE: keyspace, CASSANDRA_CONNECT_TIMEOUT_S: '60', ...env });
    expect(code).toBe(1);
    // Refused, not retried for the 60 s of the timeout.
    expect(ms).toBeLessThan(30_000);
    expect(stdout + stderr).not.toContain(password);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    return lines[0]!;
  }

  it('starts and serves with the password, TLS verified against the node’s CA', () => serves({}), 90_000);

  it('starts and serves with the password read from a file, surrounded by whitespace', async () => {
    const file = join(dir, 'password');
    writeFileSync(file, `${password}\n`);
    await serves({ CASSANDRA_PASSWORD: '', CASSANDRA_PASSWORD_FILE: file });
  }, 90_000);

  it('refuses the wrong password, naming CASSANDRA_USERNAME and CASSANDRA_PASSWORD, without printing either password', async () => {
    const wrong = `${password}-wrong`;
    const line = await refused({ CASSANDRA_PASSWORD: wrong, CASSANDRA_PASSWORD_FILE: '' });
    expect(line).toMatch(/^cannot start: Cassandra refused the connection: (\S+: )?authentication refused \(.*\): check CASSANDRA_USERNAME and CASSANDRA_PASSWORD \(or CASSANDRA_PASSWORD_FILE\)$/);
    expect(line).not.toContain(wrong);
  }, 60_000);

  it('refuses no password at all, saying the cluster requires one', async () => {
    const line = await refused({ CASSANDRA_USERNAME: '', CASSANDRA_PASSWORD: '', CASSANDRA_PASSWORD_FILE: '' });
    expect(line).toMatch(/the cluster requires authentication and no credentials are set: set CASSANDRA_USERNAME and CASSANDRA_PASSWORD/);
  }, 60_000);

  it('refuses the node’s certificate with the system’s CAs and with another CA, naming CASSANDRA_TLS_CA_FILE', async () => {
    for (const ca of ['', OTHER_CA]) {
      const line = await refused({ CASSANDRA_TLS_CA_FILE: ca });
      expect(line).toMatch(/^cannot start: Cassandra refused the connection: (\S+: )?the node's TLS certificate is not trusted \(\w+\): set CASSANDRA_TLS_CA_FILE/);
    }
  }, 90_000);

  it('refuses a server name the node’s certificate does not carry, naming CASSANDRA_TLS_SERVER_NAME', async () => {
    const line = await refused({ CASSANDRA_TLS_SERVER_NAME: 'not-this-node.invalid' });
    expect(line).toMatch(/^cannot start: Cassandra refused the connection: (\S+: )?the node's TLS certificate does not carry the name verified \(.*not-this-node\.invalid.*\): set CASSANDRA_TLS_SERVER_NAME/);
  }, 60_000);
});
