import { describe, expect, it } from 'vitest';
import { ConfigError, DEV_AUTH_SECRET, loadConfig, parseReplication } from '../../src/config.js';

describe('configuration', () => {
  it('defaults to the embedded store with development secrets, and says so', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ store: 'sqlite', port: 4000, sqlitePath: './data/app.db', auth: { kind: 'shared-secret', secret: DEV_AUTH_SECRET, previousSecrets: [], issuer: null, audiences: [], rolesClaim: 'roles' } });
    expect(c.devSecrets).toEqual(['CURSOR_SECRET', 'AUTH_SECRET']);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('reads the Cassandra start-up settings, with LOCAL_SERIAL, no auto schema and 60 s by default', () => {
    expect(loadConfig({}).cassandra).toMatchObject({ serialConsistency: 'LOCAL_SERIAL', autoSchema: false, connectTimeoutS: 60 });
    const set = loadConfig({ CASSANDRA_SERIAL_CONSISTENCY: 'SERIAL', CASSANDRA_AUTO_SCHEMA: 'true', CASSANDRA_CONNECT_TIMEOUT_S: '5' });
    expect(set.cassandra).toMatchObject({ serialConsistency: 'SERIAL', autoSchema: true, connectTimeoutS: 5 });
    expect(() => loadConfig({ CASSANDRA_SERIAL_CONSISTENCY: 'QUORUM' })).toThrow(
      'CASSANDRA_SERIAL_CONSISTENCY must be one of LOCAL_SERIAL, SERIAL, got "QUORUM"',
    );
  });

  it('reads the cluster bounds apart from the HTTP write timeout, and the instance name', () => {
    const c = loadConfig({ PORT: '4100' });
    expect(c.cluster).toEqual({ clockSkewMs: 1_000, writeTimeoutMs: 2_000, unreadySkewMs: 5_000 });
    expect(c.writeTimeoutMs).toBe(10_000);
    expect(c.instanceId).toMatch(/:4100$/);
    // STORE_WRITE_TIMEOUT_MS bounds a store write's landing; WRITE_TIMEOUT_MS a response's drain.
    const set = loadConfig({ CLOCK_SKEW_MS: '300', STORE_WRITE_TIMEOUT_MS: '5000', WRITE_TIMEOUT_MS: '700', INSTANCE_ID: 'api-1' });
    expect(set.cluster).toEqual({ clockSkewMs: 300, writeTimeoutMs: 5_000, unreadySkewMs: 1_500 });
    // The readiness bound: five times the skew bound by default, never below it, refused with the rule.
    expect(loadConfig({ CLOCK_SKEW_MS: '300', CLOCK_SKEW_UNREADY_MS: '300' }).cluster.unreadySkewMs).toBe(300);
    expect(() => loadConfig({ CLOCK_SKEW_MS: '300', CLOCK_SKEW_UNREADY_MS: '299' })).toThrow('CLOCK_SKEW_UNREADY_MS must be an integer between 300 and 6000000, got "299"');
    expect(set.writeTimeoutMs).toBe(700);
    expect(set.instanceId).toBe('api-1');
  });

  it('parses both replication strategies', () => {
    expect(parseReplication('SimpleStrategy:3')).toEqual({ class: 'SimpleStrategy', replication_factor: 3 });
    expect(parseReplication('NetworkTopologyStrategy:dc1=3,dc2=2')).toEqual({ class: 'NetworkTopologyStrategy', dc1: 3, dc2: 2 });
  });

  it('names the variable, the rule and the value when refusing', () => {
    expect(() => loadConfig({ STORE: 'mysql' })).toThrow(new ConfigError('STORE must be "sqlite" or "cassandra", got "mysql"'));
    expect(() => loadConfig({ PORT: '70000' })).toThrow('PORT must be an integer between 0 and 65535, got "70000"');
    expect(() => loadConfig({ AUTH_SECRET: 'short' })).toThrow('AUTH_SECRET must be at least 16 bytes long, got 5');
    expect(() => loadConfig({ CASSANDRA_REPLICATION: 'Simple' })).toThrow(/CASSANDRA_REPLICATION must be/);
  });
});
