import { describe, expect, it } from 'vitest';
import { ConfigError, DEV_AUTH_SECRET, loadConfig, parseReplication } from '../../src/config.js';

describe('configuration', () => {
  it('defaults to the embedded store with development secrets, and says so', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ store: 'sqlite', port: 4000, sqlitePath: './data/app.db', authSecret: DEV_AUTH_SECRET });
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
