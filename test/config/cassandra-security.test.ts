/**
 * A secured cluster's settings: credentials (inline or from a mounted file, trimmed),
 * TLS with its CA, client certificate and server name (verified unless told otherwise,
 * and never unverified in production), a DataStax Astra secure connect bundle (exclusive
 * with contact points and TLS settings), and replication chosen explicitly in
 * production. Each refusal names the variable and the rule; none quotes a password.
 * Then the driver options the store is built with: verification on, the name checked.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PeerCertificate } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import cassandra from 'cassandra-driver';
import { describe, expect, it } from 'vitest';
import { cassandraConfig, ConfigError, loadConfig } from '../../src/config.js';
import { cassandraClientOptions } from '../../src/store/cassandra/cassandra-connect.js';

const TLS = new URL('../support/tls/', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'cassandra-security-'));

/** A file in the test's folder holding `content`. */
function file(name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

const SECRET = 'pw-that-must-never-be-printed-7f3a';
const SECRET_FILE = file('password', `\n  ${SECRET}\t\n`);

/** The message `loadConfig(env)` refuses with (the test fails when it accepts). */
function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
}

describe('Cassandra credentials', () => {
  it('are absent by default, and read from CASSANDRA_USERNAME with CASSANDRA_PASSWORD', () => {
    expect(loadConfig({}).cassandra.credentials).toBeNull();
    expect(loadConfig({ CASSANDRA_USERNAME: 'relay', CASSANDRA_PASSWORD: SECRET }).cassandra.credentials).toEqual({ username: 'relay', password: SECRET });
  });

  it('read the password from CASSANDRA_PASSWORD_FILE with surrounding whitespace trimmed, inner spaces kept', () => {
    expect(loadConfig({ CASSANDRA_USERNAME: 'relay', CASSANDRA_PASSWORD_FILE: SECRET_FILE }).cassandra.credentials).toEqual({ username: 'relay', password: SECRET });
    const spaced = file('spaced', 'two words\n');
    expect(loadConfig({ CASSANDRA_USERNAME: 'relay', CASSANDRA_PASSWORD_FILE: spaced }).cassandra.credentials?.password).toBe('two words');
  });

  it('refuse both password variables, a password without a user, a user without a password, and an empty or missing file', () => {
    expect(refusal({ CASSANDRA_USERNAME: 'relay', CASSANDRA_PASSWORD: SECRET, CASSANDRA_PASSWORD_FILE: SECRET_FILE })).toBe(
      'CASSANDRA_PASSWORD and CASSANDRA_PASSWORD_FILE must not both be set: set one (the file, where secrets are mounted as files)',
    );
    expect(refusal({ CASSANDRA_PASSWORD: SECRET })).toBe('CASSANDRA_USERNAME must be set with CASSANDRA_PASSWORD');
    expect(refusal({ CASSANDRA_PASSWORD_FILE: SECRET_FILE })).toBe('CASSANDRA_USERNAME must be set with CASSANDRA_PASSWORD_FILE');
    expect(refusal({ CASSANDRA_USERNAME: 'relay' })).toBe('CASSANDRA_USERNAME needs a password: set CASSANDRA_PASSWORD or CASSANDRA_PASSWORD_FILE');
    const blank = file('blank', ' \n\t\n');
    expect(refusal({ CASSANDRA_USERNAME: 'relay', CASSANDRA_PASSWORD_FILE: blank })).toBe(
      `CASSANDRA_PASSWORD_FILE must name a file holding the password, got "${blank}", which is empty`,
    );
    expect(refusal({ CASSANDRA_USERNAME: 'relay', CASSANDRA_PASSWORD_FILE: join(dir, 'absent') })).toBe(
      `CASSANDRA_PASSWORD_FILE must name a readable file, got "${join(dir, 'absent')}" (ENOENT)`,
    );
  });
});

describe('Cassandra TLS', () => {
  const ca = `${TLS}ca.pem`;
  const cert = `${TLS}client.pem`;
  const key = `${TLS}client-key.pem`;

  it('is off by default, and on with CASSANDRA_TLS=true: verified, the system CAs, no client certificate, no server name', () => {
    expect(loadConfig({}).cassandra.tls).toBeNull();
    expect(loadConfig({ CASSANDRA_TLS: 'true' }).cassandra.tls).toEqual({ ca: null, clientCertificate: null, serverName: null, verify: true });
  });

  it('reads the CA, the client certificate and key, and the server name', () => {
    const tls = loadConfig({
      CASSANDRA_TLS: 'true',
      CASSANDRA_TLS_CA_FILE: ca,
      CASSANDRA_TLS_CERT_FILE: cert,
      CASSANDRA_TLS_KEY_FILE: key,
      CASSANDRA_TLS_SERVER_NAME: 'node.cassandra.test',
    }).cassandra.tls;
    expect(tls).toEqual({
      ca: readFileSync(ca, 'utf8'),
      clientCertificate: { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') },
      serverName: 'node.cassandra.test',
      verify: true,
    });
  });

  it('turns verification off only outside production', () => {
    expect(loadConfig({ CASSANDRA_TLS: 'true', CASSANDRA_TLS_VERIFY: 'false' }).cassandra.tls?.verify).toBe(false);
    expect(() => cassandraConfig({ CASSANDRA_TLS: 'true', CASSANDRA_TLS_VERIFY: 'false' }, true)).toThrow(
      /^CASSANDRA_TLS_VERIFY=false is refused when NODE_ENV=production/,
    );
    expect(cassandraConfig({ NODE_ENV: 'production', CASSANDRA_TLS: 'true', CASSANDRA_TLS_VERIFY: 'true' }).tls?.verify).toBe(true);
    expect(() => cassandraConfig({ NODE_ENV: 'production', CASSANDRA_TLS: 'true', CASSANDRA_TLS_VERIFY: 'false' })).toThrow(ConfigError);
  });

  it('refuses TLS settings without CASSANDRA_TLS=true rather than ignoring them', () => {
    expect(refusal({ CASSANDRA_TLS_CA_FILE: ca, CASSANDRA_TLS_SERVER_NAME: 'x' })).toBe(
      'CASSANDRA_TLS_CA_FILE, CASSANDRA_TLS_SERVER_NAME only apply with CASSANDRA_TLS=true, which is not set',
    );
    expect(refusal({ CASSANDRA_TLS: 'false', CASSANDRA_TLS_VERIFY: 'false' })).toBe('CASSANDRA_TLS_VERIFY only apply with CASSANDRA_TLS=true, which is not set');
    expect(refusal({ CASSANDRA_TLS: 'maybe' })).toBe('CASSANDRA_TLS must be true or false, got "maybe"');
  });

  it('refuses an unreadable file, a file holding no PEM, half a client certificate, and a key that is not the certificate’s', () => {
    expect(refusal({ CASSANDRA_TLS: 'true', CASSANDRA_TLS_CA_FILE: join(dir, 'absent.pem') })).toBe(
      `CASSANDRA_TLS_CA_FILE must name a readable file, got "${join(dir, 'absent.pem')}" (ENOENT)`,
    );
    const text = file('not-pem.txt', 'hello');
    expect(refusal({ CASSANDRA_TLS: 'true', CASSANDRA_TLS_CA_FILE: text })).toBe(
      `CASSANDRA_TLS_CA_FILE must name a PEM file holding a certificate ("-----BEGIN CERTIFICATE-----"), got "${text}", which holds none`,
    );
    // A certificate where the key belongs: its content is not quoted back.
    expect(refusal({ CASSANDRA_TLS: 'true', CASSANDRA_TLS_CERT_FILE: cert, CASSANDRA_TLS_KEY_FILE: cert })).toBe(
      `CASSANDRA_TLS_KEY_FILE must name a PEM file holding a private key ("-----BEGIN PRIVATE KEY-----"), got "${cert}", which holds none`,
    );
    expect(refusal({ CASSANDRA_TLS: 'true', CASSANDRA_TLS_CERT_FILE: cert })).toBe(
      'CASSANDRA_TLS_CERT_FILE and CASSANDRA_TLS_KEY_FILE must be set together (a client certificate and its private key)',
    );
    const message = refusal({ CASSANDRA_TLS: 'true', CASSANDRA_TLS_CERT_FILE: cert, CASSANDRA_TLS_KEY_FILE: `${TLS}node-key.pem` });
    expect(message).toMatch(/^CASSANDRA_TLS_CA_FILE, CASSANDRA_TLS_CERT_FILE and CASSANDRA_TLS_KEY_FILE must hold a usable CA, certificate and unencrypted key, got: .*key values mismatch/);
    expect(message).not.toContain('PRIVATE KEY');
  });
});

describe('a DataStax Astra secure connect bundle', () => {
  // The end record of an empty zip archive: a zip, but no bundle.
  const emptyZip = file('empty.zip', Buffer.from([0x50, 0x4b, 0x05, 0x06, ...new Array<number>(18).fill(0)]));

  it('replaces contact points and the data centre, and is used with the credentials', () => {
    const c = loadConfig({ CASSANDRA_SECURE_CONNECT_BUNDLE: emptyZip, CASSANDRA_USERNAME: 'client-id', CASSANDRA_PASSWORD: SECRET }).cassandra;
    expect(c).toMatchObject({ secureConnectBundle: emptyZip, contactPoints: [], localDataCenter: '', tls: null, credentials: { username: 'client-id', password: SECRET } });
  });

  it('is refused beside contact points, a data centre or TLS settings, naming each', () => {
    expect(refusal({ CASSANDRA_SECURE_CONNECT_BUNDLE: emptyZip, CASSANDRA_CONTACT_POINTS: '10.0.0.1', CASSANDRA_TLS: 'true' })).toBe(
      'CASSANDRA_SECURE_CONNECT_BUNDLE names the nodes, the data centre and the TLS certificates itself: unset CASSANDRA_CONTACT_POINTS, CASSANDRA_TLS',
    );
    expect(refusal({ CASSANDRA_SECURE_CONNECT_BUNDLE: emptyZip, CASSANDRA_LOCAL_DC: 'dc1' })).toMatch(/: unset CASSANDRA_LOCAL_DC$/);
  });

  it('is refused when missing or not a zip file, with a clear error', () => {
    const missing = join(dir, 'secure-connect-missing.zip');
    expect(refusal({ CASSANDRA_SECURE_CONNECT_BUNDLE: missing })).toBe(`CASSANDRA_SECURE_CONNECT_BUNDLE must name a readable file, got "${missing}" (ENOENT)`);
    const text = file('bundle.txt', 'not a zip');
    expect(refusal({ CASSANDRA_SECURE_CONNECT_BUNDLE: text })).toBe(
      `CASSANDRA_SECURE_CONNECT_BUNDLE must name the secure connect bundle (a zip file) downloaded from the Astra console, got "${text}", which is not a zip file`,
    );
  });

  it('gives the driver the bundle, the credentials and no contact points, data centre or TLS options of ours', () => {
    const config = loadConfig({ STORE: 'cassandra', CASSANDRA_SECURE_CONNECT_BUNDLE: emptyZip, CASSANDRA_USERNAME: 'client-id', CASSANDRA_PASSWORD: SECRET }).cassandra;
    const options = cassandraClientOptions(config);
    expect(options.cloud).toEqual({ secureConnectBundle: emptyZip });
    expect(options.contactPoints).toBeUndefined();
    expect(options.localDataCenter).toBeUndefined();
    expect(options.sslOptions).toBeUndefined();
    expect(options.authProvider).toBeInstanceOf(cassandra.auth.PlainTextAuthProvider);
    // The driver accepts these options (it refuses contact points or TLS options beside a bundle).
    expect(() => new cassandra.Client(options)).not.toThrow();
  });
});

describe('replication in production', () => {
  it('defaults to one replica in development, and is left unchosen in production unless CASSANDRA_REPLICATION is set', () => {
    expect(loadConfig({}).cassandra.replication).toEqual({ class: 'SimpleStrategy', replication_factor: 1 });
    expect(cassandraConfig({ NODE_ENV: 'production' }).replication).toBeNull();
    expect(cassandraConfig({ NODE_ENV: 'production', CASSANDRA_REPLICATION: 'NetworkTopologyStrategy:dc1=3' }).replication).toEqual({
      class: 'NetworkTopologyStrategy',
      dc1: 3,
    });
  });
});

describe('no refusal quotes a secret', () => {
  it('holds for every refusal met with a password set', () => {
    const withPassword = (env: Record<string, string>) => ({ CASSANDRA_USERNAME: 'relay', CASSANDRA_PASSWORD: SECRET, ...env });
    const messages = [
      refusal({ CASSANDRA_PASSWORD: SECRET }),
      refusal(withPassword({ CASSANDRA_PASSWORD_FILE: SECRET_FILE })),
      refusal({ CASSANDRA_USERNAME: 'relay', CASSANDRA_PASSWORD: SECRET, CASSANDRA_TLS_CA_FILE: SECRET_FILE }),
      refusal(withPassword({ CASSANDRA_TLS: 'true', CASSANDRA_TLS_CA_FILE: SECRET_FILE })),
      refusal(withPassword({ CASSANDRA_TLS: 'true', CASSANDRA_TLS_CERT_FILE: `${TLS}client.pem`, CASSANDRA_TLS_KEY_FILE: SECRET_FILE })),
      refusal(withPassword({ CASSANDRA_SECURE_CONNECT_BUNDLE: SECRET_FILE })),
    ];
    expect(messages).toHaveLength(6);
    for (const message of messages) expect(message).not.toContain(SECRET);
  });
});

describe('the driver options of a TLS connection', () => {
  const tlsConfig = (env: Record<string, string>) =>
    loadConfig({ STORE: 'cassandra', CASSANDRA_TLS: 'true', CASSANDRA_TLS_CA_FILE: `${TLS}ca.pem`, ...env }).cassandra;
  const node = new X509Certificate(readFileSync(`${TLS}node.pem`));
  // What node:tls hands checkServerIdentity: the names the node's certificate carries.
  const peer = { subject: { CN: 'node.cassandra.test' }, subjectaltname: node.subjectAltName } as unknown as PeerCertificate;

  it('verify the chain against the CA (the driver’s own default verifies nothing)', () => {
    const ssl = cassandraClientOptions(tlsConfig({})).sslOptions!;
    expect(ssl.rejectUnauthorized).toBe(true);
    expect(ssl.ca).toBe(readFileSync(`${TLS}ca.pem`, 'utf8'));
  });

  it('check the certificate against CASSANDRA_TLS_SERVER_NAME when set, else the address connected to', () => {
    const named = cassandraClientOptions(tlsConfig({ CASSANDRA_TLS_SERVER_NAME: 'node.cassandra.test' })).sslOptions!;
    expect(named.servername).toBe('node.cassandra.test');
    expect(named.checkServerIdentity!('10.9.9.9', peer)).toBeUndefined();
    const other = cassandraClientOptions(tlsConfig({ CASSANDRA_TLS_SERVER_NAME: 'other.cassandra.test' })).sslOptions!;
    expect(other.checkServerIdentity!('127.0.0.1', peer)).toMatchObject({ code: 'ERR_TLS_CERT_ALTNAME_INVALID' });
    const byAddress = cassandraClientOptions(tlsConfig({})).sslOptions!;
    expect(byAddress.checkServerIdentity!('127.0.0.1', peer)).toBeUndefined();
    expect(byAddress.checkServerIdentity!('127.0.0.2', peer)).toMatchObject({ code: 'ERR_TLS_CERT_ALTNAME_INVALID' });
  });

  it('carry the client certificate, the credentials, and no verification only when CASSANDRA_TLS_VERIFY=false', () => {
    const options = cassandraClientOptions(
      tlsConfig({ CASSANDRA_TLS_CERT_FILE: `${TLS}client.pem`, CASSANDRA_TLS_KEY_FILE: `${TLS}client-key.pem`, CASSANDRA_USERNAME: 'relay', CASSANDRA_PASSWORD: SECRET }),
    );
    expect(options.sslOptions).toMatchObject({ cert: readFileSync(`${TLS}client.pem`, 'utf8'), key: readFileSync(`${TLS}client-key.pem`, 'utf8') });
    expect(options.authProvider).toBeInstanceOf(cassandra.auth.PlainTextAuthProvider);
    const unverified = cassandraClientOptions(tlsConfig({ CASSANDRA_TLS_VERIFY: 'false' })).sslOptions!;
    expect(unverified.rejectUnauthorized).toBe(false);
    expect(unverified.checkServerIdentity!('127.0.0.2', peer)).toBeUndefined();
    expect(cassandraClientOptions(loadConfig({ STORE: 'cassandra' }).cassandra).sslOptions).toBeUndefined();
  });
});
