/**
 * The Cassandra adapter's write path, with the driver's real error classes and a fake
 * client (no cluster needed): which failures leave a write's outcome unknown
 * (OUTCOME_UNKNOWN) and which say nothing was written (UNAVAILABLE); a batch the
 * batchlog refused, or any batch while a node is down, goes through the adapter's own
 * batchlog within the write budget; writes wait the write
 * timeout, are never retried by the driver after they may have been sent, and never
 * speculatively; a cluster whose coordinators wait longer than that refuses to start.
 */
import cassandra from 'cassandra-driver';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { storeErrorFrom } from '../../src/store/cassandra/cassandra-errors.js';
import { cassandraClientFrom } from '../../src/store/cassandra/cassandra-connect.js';
import { BoundedWriteRetryPolicy, ReadOnlySpeculation } from '../../src/store/cassandra/cassandra-policies.js';
import { CassandraStore, millisecondsOf, type CassandraClientLike, type CassandraResultLike } from '../../src/store/cassandra/cassandra-store.js';
import { StoreOutcomeUnknownError, StoreStartupError, StoreUnavailableError } from '../../src/store/port.js';
import { withTally } from '../../src/store/statements.js';
import { defineTable } from '../../src/store/table.js';

const { errors, policies, types } = cassandra;
const codes = types.responseErrorCodes;

/** A write timeout as the driver decodes it from the coordinator's answer. */
function writeTimeout(writeType: string): Error {
  const err = new errors.ResponseError(codes.writeTimeout, `Server timeout during ${writeType} write query`);
  Object.assign(err, { writeType, received: 1, blockFor: 2, consistencies: types.consistencies.localQuorum });
  return err;
}

/** A socket error as the driver raises it, before or after the request was written. */
function socketError(written: boolean): Error {
  // The driver raises its DriverError itself; its typings declare the class abstract.
  const err = new (errors.DriverError as unknown as new (message: string) => Error)('Socket was closed');
  Object.assign(err, { isSocketError: true, ...(written ? {} : { requestNotWritten: true }) });
  return err;
}

const kv = defineTable({ name: 'kv', columns: { id: 'uuid', name: 'text' }, partitionKey: ['id'] });
const EMPTY: CassandraResultLike = { rows: [], wasApplied: () => true };

/** A client that answers batches and statements with what the test scripts, recording the options. */
class ScriptedClient implements CassandraClientLike {
  readonly metadata = {};
  readonly batches: cassandra.QueryOptions[] = [];
  readonly statements: Array<{ query: string; options?: cassandra.QueryOptions }> = [];
  /** The nodes as the driver sees them: up or down. */
  hosts?: { values(): Array<{ isUp(): boolean }> };
  constructor(
    private readonly batchAnswers: Array<Error | null>,
    private readonly executeAnswer: (query: string) => CassandraResultLike | Error = () => EMPTY,
    /** How long each batch takes to be answered. */
    private readonly batchDelayMs = 0,
  ) {}
  async connect(): Promise<void> {}
  async shutdown(): Promise<void> {}
  async execute(query: string, _params?: unknown[], options?: cassandra.QueryOptions): Promise<CassandraResultLike> {
    this.statements.push({ query, options });
    const answer = this.executeAnswer(query);
    if (answer instanceof Error) throw answer;
    return answer;
  }
  async batch(_queries: unknown[], options?: cassandra.QueryOptions): Promise<CassandraResultLike> {
    this.batches.push(options ?? {});
    if (this.batchDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.batchDelayMs));
    const answer = this.batchAnswers.length > 1 ? this.batchAnswers.shift()! : this.batchAnswers[0]!;
    if (answer) throw answer;
    return EMPTY;
  }
}

function storeOver(client: CassandraClientLike, writeTimeoutMs?: number): CassandraStore {
  return new CassandraStore({ client, keyspace: 'ks', writeTimeoutMs });
}

const twoRows = [
  { kind: 'upsert' as const, table: kv, row: { id: '00000000-0000-4000-8000-000000000001', name: 'a' } },
  { kind: 'upsert' as const, table: kv, row: { id: '00000000-0000-4000-8000-000000000002', name: 'b' } },
];

describe('what a failed write tells', () => {
  it.each(['SIMPLE', 'BATCH', 'UNLOGGED_BATCH', 'CAS', 'COUNTER'])('a write timeout of type %s leaves the outcome unknown', (writeType) => {
    const err = storeErrorFrom(writeTimeout(writeType), { write: true });
    expect(err).toBeInstanceOf(StoreOutcomeUnknownError);
    expect((err as StoreOutcomeUnknownError).timedOut).toBe(true);
  });

  it('a BATCH_LOG write timeout, an unavailable or overloaded coordinator and a request never sent wrote nothing', () => {
    for (const driverError of [
      writeTimeout('BATCH_LOG'),
      new errors.ResponseError(codes.unavailableException, 'Cannot achieve consistency level LOCAL_QUORUM'),
      new errors.ResponseError(codes.overloaded, 'overloaded'),
      socketError(false),
      new errors.NoHostAvailableError({ '127.0.0.1:9042': new errors.ResponseError(codes.unavailableException, 'unavailable') }),
    ]) {
      const err = storeErrorFrom(driverError, { write: true });
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect(err).not.toBeInstanceOf(StoreOutcomeUnknownError);
    }
  });

  it('a client timeout, a connection lost after sending and no host left after one of those leave a write unknown', () => {
    for (const driverError of [
      new errors.OperationTimedOutError('The host 127.0.0.1:9042 did not reply before timeout 2000 ms'),
      socketError(true),
      new errors.ResponseError(codes.writeFailure, 'Operation failed - received 1 responses and 1 failures'),
      new errors.NoHostAvailableError({
        '127.0.0.1:9042': new errors.OperationTimedOutError('timed out'),
        '127.0.0.2:9042': new errors.ResponseError(codes.unavailableException, 'unavailable'),
      }),
    ]) {
      expect(storeErrorFrom(driverError, { write: true })).toBeInstanceOf(StoreOutcomeUnknownError);
    }
  });

  it('a read that timed out is unavailable: a read changes nothing', () => {
    const err = storeErrorFrom(new errors.OperationTimedOutError('timed out'));
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(err).not.toBeInstanceOf(StoreOutcomeUnknownError);
  });
});

describe('a logged batch', () => {
  /** The statements of the adapter's own batchlog a client was sent, by kind. */
  const ownLog = (client: ScriptedClient) =>
    client.statements.map((s) => /^(INSERT INTO|DELETE FROM) ks\.(store_batchlog\w*)/.exec(s.query)?.slice(1).join(' ')).filter(Boolean);

  it("after a BATCH_LOG timeout goes at once through the adapter's batchlog: logged, sent unlogged within what is left of the write budget, then its log row deleted", async () => {
    const client = new ScriptedClient([writeTimeout('BATCH_LOG'), null]);
    await storeOver(client, 2_000).batch(twoRows);
    expect(client.batches.map((o) => o.logged)).toEqual([true, false]);
    for (const options of client.batches) {
      expect(options.readTimeout).toBeGreaterThan(0);
      expect(options.readTimeout).toBeLessThanOrEqual(2_000);
    }
    expect(ownLog(client)).toEqual(['INSERT INTO store_batchlog_minutes', 'INSERT INTO store_batchlog', 'DELETE FROM store_batchlog']);
  });

  it("goes through the adapter's batchlog, without trying Cassandra's, while the driver sees a node down, and through Cassandra's again once every node is up", async () => {
    const client = new ScriptedClient([null]);
    let down = true;
    client.hosts = { values: () => [{ isUp: () => true }, { isUp: () => !down }, { isUp: () => true }] };
    const store = storeOver(client, 2_000);
    // Each call's round trips count into the request's tally: the minute's mark (once), the log row, the batch, the row's deletion.
    const tallies = [{ statements: 0 }, { statements: 0 }, { statements: 0 }];
    await withTally(tallies[0], () => store.batch(twoRows));
    await withTally(tallies[1], () => store.batch(twoRows));
    down = false;
    await withTally(tallies[2], () => store.batch(twoRows));
    expect(tallies.map((t) => t.statements)).toEqual([4, 3, 1]);
    expect(client.batches.map((o) => o.logged)).toEqual([false, false, true]);
    // The minute is marked once; each batch's row is written, then deleted.
    expect(ownLog(client)).toEqual([
      'INSERT INTO store_batchlog_minutes',
      'INSERT INTO store_batchlog',
      'DELETE FROM store_batchlog',
      'INSERT INTO store_batchlog',
      'DELETE FROM store_batchlog',
    ]);
  });

  it('is answered unavailable, not unknown, when the batchlog refused it after the whole budget', async () => {
    const client = new ScriptedClient([writeTimeout('BATCH_LOG')], () => EMPTY, 40);
    const failed = storeOver(client, 30).batch(twoRows);
    await expect(failed).rejects.toBeInstanceOf(StoreUnavailableError);
    await failed.catch((err) => expect(err).not.toBeInstanceOf(StoreOutcomeUnknownError));
    expect(client.batches).toHaveLength(1);
    expect(ownLog(client)).toEqual([]);
  });

  it('is never sent again after a timeout whose outcome is unknown', async () => {
    const client = new ScriptedClient([writeTimeout('BATCH')]);
    await expect(storeOver(client, 2_000).batch(twoRows)).rejects.toBeInstanceOf(StoreOutcomeUnknownError);
    expect(client.batches).toHaveLength(1);
  });
});

describe('writes on the driver', () => {
  it('wait the write timeout, while reads wait the request timeout', async () => {
    const client = new ScriptedClient([null]);
    const store = storeOver(client, 1_500);
    await store.upsert(kv, { id: '00000000-0000-4000-8000-000000000001', name: 'a' });
    await store.get(kv, { id: '00000000-0000-4000-8000-000000000001' });
    expect(client.statements[0]!.options?.readTimeout).toBe(1_500);
    expect(client.statements[1]!.options?.readTimeout).toBeUndefined();
  });

  it('are never retried by the driver after a client timeout or a lost connection, and are never speculated', () => {
    const options = (cassandraClientFrom(loadConfig({ STORE: 'cassandra', CASSANDRA_SPECULATIVE_EXECUTIONS: '2' }).cassandra) as unknown as {
      options: cassandra.ClientOptions;
    }).options;
    const retry = options.policies!.retry!;
    expect(retry).toBeInstanceOf(BoundedWriteRetryPolicy);
    const info = (query: unknown) => ({ query, nbRetry: 0, executionOptions: {} }) as unknown as cassandra.policies.retry.OperationInfo;
    const timeout = new errors.OperationTimedOutError('timed out');
    // The decisions are on the class at run time; the typings omit them.
    const decisions = (policies.retry.RetryPolicy as unknown as { retryDecision: { rethrow: number; retry: number } }).retryDecision;
    const [rethrow, retryDecision] = [decisions.rethrow, decisions.retry];
    expect(retry.onRequestError(info('INSERT INTO ks.kv (id) VALUES (?)'), types.consistencies.localQuorum, timeout).decision).toBe(rethrow);
    expect(retry.onRequestError(info(undefined), types.consistencies.localQuorum, timeout).decision).toBe(rethrow);
    expect(retry.onRequestError(info('SELECT id FROM ks.kv WHERE id = ?'), types.consistencies.localQuorum, timeout).decision).toBe(retryDecision);
    expect(retry.onWriteTimeout(info('UPDATE ks.kv SET name = ? WHERE id = ?'), types.consistencies.localQuorum, 1, 2, 'SIMPLE').decision).toBe(rethrow);

    const speculation = options.policies!.speculativeExecution!;
    expect(speculation).toBeInstanceOf(ReadOnlySpeculation);
    expect(Object.fromEntries(speculation.getOptions())).toEqual({ delay: 100, maxSpeculativeExecutions: 2 });
    expect(speculation.newPlan('ks', 'INSERT INTO ks.kv (id) VALUES (?)').nextExecution()).toBe(-1);
    expect(speculation.newPlan('ks', [{ query: 'INSERT INTO ks.kv (id) VALUES (?)' }]).nextExecution()).toBe(-1);
    expect(speculation.newPlan('ks', 'SELECT id FROM ks.kv WHERE id = ?').nextExecution()).toBe(100);
  });
});

describe('the write timeout at start', () => {
  const settings = (value: string) => (query: string) =>
    query.includes('system_views.settings')
      ? { rows: [{ get: (c: string) => (c === 'value' ? value : 'write_request_timeout') }], wasApplied: () => true }
      : EMPTY;

  it('refuses a cluster whose coordinators wait longer for a write, naming both settings', async () => {
    const start = storeOver(new ScriptedClient([null], settings('5000ms')), 2_000).ensureTables([kv]);
    await expect(start).rejects.toBeInstanceOf(StoreStartupError);
    await expect(start).rejects.toThrow(/write_request_timeout \(cassandra\.yaml\) is 5000 ms, above this server's write timeout of 2000 ms \(STORE_WRITE_TIMEOUT_MS\)/);
  });

  it('accepts one that waits no longer (and goes on to check the schema)', async () => {
    const start = storeOver(new ScriptedClient([null], settings('2000')), 2_000).ensureTables([kv]);
    await expect(start).rejects.toThrow(/the Cassandra schema/);
  });

  it('reads the durations the settings view shows', () => {
    expect([millisecondsOf('2000ms'), millisecondsOf('2s'), millisecondsOf('1500'), millisecondsOf('soon')]).toEqual([2_000, 2_000, 1_500, null]);
  });
});
