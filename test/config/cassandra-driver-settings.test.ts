/**
 * The cassandra-driver settings an operator tunes: parsed from `CASSANDRA_*` variables
 * with documented defaults, refused with the variable's name when out of range, and
 * carried into the options of the client the store is built with.
 */
import cassandra from 'cassandra-driver';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { cassandraClientFrom } from '../../src/store/cassandra/cassandra-connect.js';
import { BoundedWriteRetryPolicy, ReadOnlySpeculation } from '../../src/store/cassandra/cassandra-policies.js';

const { policies, types } = cassandra;

/** Every driver variable set to something other than its default. */
const EVERY_SETTING = {
  CASSANDRA_CONNECTIONS_PER_HOST: '4',
  CASSANDRA_CONNECTIONS_PER_REMOTE_HOST: '2',
  CASSANDRA_REQUEST_TIMEOUT_MS: '3000',
  CASSANDRA_SPECULATIVE_EXECUTIONS: '2',
  CASSANDRA_SPECULATIVE_DELAY_MS: '50',
  CASSANDRA_RETRY_POLICY: 'never',
  CASSANDRA_LOAD_BALANCING: 'token-aware',
};

/** The options of the client the store would use for `env` (nothing is sent: no connect). */
function clientOptionsFor(env: Record<string, string>): cassandra.ClientOptions {
  const client = cassandraClientFrom(loadConfig({ STORE: 'cassandra', ...env }).cassandra);
  return (client as unknown as { options: cassandra.ClientOptions }).options;
}

describe('Cassandra driver settings', () => {
  it('default to the driver’s own: one connection per host, 12 s, no speculation, default retries and balancing; writes wait 2 s', () => {
    expect(loadConfig({}).cassandra.driver).toEqual({
      connectionsPerHost: 1,
      connectionsPerRemoteHost: 1,
      requestTimeoutMs: 12_000,
      writeTimeoutMs: 2_000,
      speculativeExecutions: 0,
      speculativeDelayMs: 100,
      retryPolicy: 'default',
      loadBalancing: 'default',
    });
  });

  it('reads every variable', () => {
    const driver = loadConfig({ ...EVERY_SETTING, STORE_WRITE_TIMEOUT_MS: '2500' }).cassandra.driver;
    expect(driver).toEqual({
      connectionsPerHost: 4,
      connectionsPerRemoteHost: 2,
      requestTimeoutMs: 3_000,
      writeTimeoutMs: 2_500,
      speculativeExecutions: 2,
      speculativeDelayMs: 50,
      retryPolicy: 'never',
      loadBalancing: 'token-aware',
    });
  });

  it('refuses bad values with the variable, the rule and the value', () => {
    expect(() => loadConfig({ CASSANDRA_CONNECTIONS_PER_HOST: '0' })).toThrow(
      'CASSANDRA_CONNECTIONS_PER_HOST must be an integer between 1 and 64, got "0"',
    );
    expect(() => loadConfig({ CASSANDRA_REQUEST_TIMEOUT_MS: '12s' })).toThrow(
      'CASSANDRA_REQUEST_TIMEOUT_MS must be an integer between 100 and 600000, got "12s"',
    );
    expect(() => loadConfig({ CASSANDRA_SPECULATIVE_EXECUTIONS: '-1' })).toThrow(
      'CASSANDRA_SPECULATIVE_EXECUTIONS must be an integer between 0 and 10, got "-1"',
    );
    expect(() => loadConfig({ CASSANDRA_RETRY_POLICY: 'always' })).toThrow('CASSANDRA_RETRY_POLICY must be one of default, never, got "always"');
    expect(() => loadConfig({ CASSANDRA_LOAD_BALANCING: 'random' })).toThrow(
      'CASSANDRA_LOAD_BALANCING must be one of default, token-aware, round-robin, got "random"',
    );
    expect(() =>
      loadConfig({ CASSANDRA_SPECULATIVE_EXECUTIONS: '1', CASSANDRA_SPECULATIVE_DELAY_MS: '5000', CASSANDRA_REQUEST_TIMEOUT_MS: '2000' }),
    ).toThrow('CASSANDRA_SPECULATIVE_DELAY_MS must be below CASSANDRA_REQUEST_TIMEOUT_MS (2000) when CASSANDRA_SPECULATIVE_EXECUTIONS is set, got "5000"');
    // Without speculation the delay is not used, so it is not held against the timeout.
    expect(loadConfig({ CASSANDRA_SPECULATIVE_DELAY_MS: '5000', CASSANDRA_REQUEST_TIMEOUT_MS: '2000' }).cassandra.driver.speculativeExecutions).toBe(0);
  });

  it('builds the client with the driver’s default policies when nothing is set, but for writes (never re-sent once they may have reached a coordinator)', () => {
    const options = clientOptionsFor({});
    expect(options.contactPoints).toEqual(['127.0.0.1']);
    expect(options.localDataCenter).toBe('datacenter1');
    expect(options.pooling?.coreConnectionsPerHost).toEqual({ [types.distance.local]: 1, [types.distance.remote]: 1, [types.distance.ignored]: 0 });
    expect(options.socketOptions?.readTimeout).toBe(12_000);
    expect(options.policies?.loadBalancing).toBeInstanceOf(policies.loadBalancing.DefaultLoadBalancingPolicy);
    expect(options.policies?.retry?.constructor).toBe(BoundedWriteRetryPolicy);
    expect(options.policies?.speculativeExecution).toBeInstanceOf(policies.speculativeExecution.NoSpeculativeExecutionPolicy);
  });

  it('carries every setting into the client’s options', () => {
    const options = clientOptionsFor({ ...EVERY_SETTING, CASSANDRA_CONTACT_POINTS: '127.0.0.2,127.0.0.3', CASSANDRA_LOCAL_DC: 'dc-east' });
    expect(options.contactPoints).toEqual(['127.0.0.2', '127.0.0.3']);
    expect(options.pooling?.coreConnectionsPerHost).toEqual({ [types.distance.local]: 4, [types.distance.remote]: 2, [types.distance.ignored]: 0 });
    expect(options.socketOptions?.readTimeout).toBe(3_000);
    const speculation = options.policies!.speculativeExecution!;
    // Constant speculation, on reads only.
    expect(speculation).toBeInstanceOf(ReadOnlySpeculation);
    expect(Object.fromEntries(speculation.getOptions())).toEqual({ delay: 50, maxSpeculativeExecutions: 2 });
    expect(options.policies?.retry).toBeInstanceOf(policies.retry.FallthroughRetryPolicy);
    const balancing = options.policies!.loadBalancing!;
    expect(balancing).toBeInstanceOf(policies.loadBalancing.TokenAwarePolicy);
    // Token-aware over the local data centre's round robin.
    expect(Object.fromEntries(balancing.getOptions())).toMatchObject({ childPolicy: 'DCAwareRoundRobinPolicy' });
    expect(Object.fromEntries((balancing as unknown as { childPolicy: cassandra.policies.loadBalancing.LoadBalancingPolicy }).childPolicy.getOptions())).toMatchObject({ localDataCenter: 'dc-east' });
  });

  it('balances over the local data centre alone, not token-aware, when asked', () => {
    const balancing = clientOptionsFor({ CASSANDRA_LOAD_BALANCING: 'round-robin', CASSANDRA_LOCAL_DC: 'dc-west' }).policies!.loadBalancing!;
    expect(balancing).toBeInstanceOf(policies.loadBalancing.DCAwareRoundRobinPolicy);
    expect(Object.fromEntries(balancing.getOptions())).toMatchObject({ localDataCenter: 'dc-west' });
  });
});
