import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_LATE_PASSES, DEV_AUTH_SECRET, loadConfig, parseReplication } from '../../src/config.js';

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
    expect(c.cluster).toEqual({ clockSkewMs: 1_000, writeTimeoutMs: 2_000, unreadySkewMs: 5_000, latePasses: DEFAULT_LATE_PASSES });
    expect(c.writeTimeoutMs).toBe(10_000);
    expect(c.instanceId).toMatch(/:4100$/);
    // STORE_WRITE_TIMEOUT_MS bounds a store write's landing; WRITE_TIMEOUT_MS a response's drain.
    const set = loadConfig({ CLOCK_SKEW_MS: '300', STORE_WRITE_TIMEOUT_MS: '5000', WRITE_TIMEOUT_MS: '700', INSTANCE_ID: 'api-1' });
    expect(set.cluster).toEqual({ clockSkewMs: 300, writeTimeoutMs: 5_000, unreadySkewMs: 1_500, latePasses: DEFAULT_LATE_PASSES });
    // The readiness bound: five times the skew bound by default, never below it, refused with the rule.
    expect(loadConfig({ CLOCK_SKEW_MS: '300', CLOCK_SKEW_UNREADY_MS: '300' }).cluster.unreadySkewMs).toBe(300);
    expect(() => loadConfig({ CLOCK_SKEW_MS: '300', CLOCK_SKEW_UNREADY_MS: '299' })).toThrow('CLOCK_SKEW_UNREADY_MS must be an integer between 300 and 6000000, got "299"');
    expect(set.writeTimeoutMs).toBe(700);
    expect(set.instanceId).toBe('api-1');
  });

  it('reads the trailing passes over late writes, refusing a horizon inside the write window', () => {
    expect(DEFAULT_LATE_PASSES).toEqual([
      { horizonMs: 3_600_000, intervalMs: 60_000 },
      { horizonMs: 10_800_000, intervalMs: 900_000 },
    ]);
    expect(loadConfig({ LATE_WRITE_PASSES: '120/5, 600/30' }).cluster.latePasses).toEqual([
      { horizonMs: 120_000, intervalMs: 5_000 },
      { horizonMs: 600_000, intervalMs: 30_000 },
    ]);
    expect(loadConfig({ LATE_WRITE_PASSES: 'off' }).cluster.latePasses).toEqual([]);
    // 3 s is not beyond the 1 s + 2 s window; an interval as long as its horizon never catches up.
    for (const bad of ['3/1', '60/60', '60/0', '60', 'hourly', '60/5,'])
      expect(() => loadConfig({ LATE_WRITE_PASSES: bad })).toThrow(`LATE_WRITE_PASSES must be comma-separated horizon/interval pairs`);
    expect(() => loadConfig({ LATE_WRITE_PASSES: '3/1' })).toThrow('got "3/1"');
  });

  it("writes the counted indexes' lists dense where valid by default, sparse only with COUNT_LISTS_SPARSE (a rolling upgrade)", () => {
    expect(loadConfig({}).countListsSparse).toBe(false);
    expect(loadConfig({ COUNT_LISTS_SPARSE: 'true' }).countListsSparse).toBe(true);
    expect(loadConfig({ COUNT_LISTS_SPARSE: 'false' }).countListsSparse).toBe(false);
    expect(() => loadConfig({ COUNT_LISTS_SPARSE: 'sparse' })).toThrow('COUNT_LISTS_SPARSE must be true or false, got "sparse"');
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
