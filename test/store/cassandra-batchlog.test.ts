/**
 * The Cassandra adapter's own batchlog (cassandra-batchlog.ts): a batch's statements are
 * logged with their values as bound, and a batch whose writer died after logging it is
 * applied in the end by a replay pass, on real Cassandra (skipped, with the reason
 * printed, where none is reachable).
 */
import cassandra from 'cassandra-driver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientBatchlog, decodeStatements, encodeStatements, storeBatchlogMinutesTable, storeBatchlogTable, type LoggedStatement } from '../../src/store/cassandra/cassandra-batchlog.js';
import type { Store } from '../../src/store/port.js';
import { defineTable } from '../../src/store/table.js';
import { cassandraClient, cassandraTarget, type StoreUnderTest } from '../support/stores.js';

const { types } = cassandra;

describe("the adapter's batchlog rows", () => {
  it('give back every statement with its values as bound: uuids, timeuuids, bigints, dates, text, numbers, booleans, nulls', () => {
    const statements: LoggedStatement[] = [
      {
        query: 'INSERT INTO ks.t (a, b, c, d, e, f, g, h) VALUES (?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?',
        params: [
          types.Uuid.fromString('3f2c8b8e-9b1a-4c53-8c55-0a1b2c3d4e5f'),
          types.TimeUuid.fromString('e1a2b3c4-ea1c-11f1-9282-ef6602424e28'),
          9_007_199_254_740_993n,
          new Date('2026-11-27T04:55:00.123Z'),
          'text with "quotes" and ünïcode',
          42,
          false,
          null,
          1_795_754_877_528_000n,
          86_400,
        ],
      },
      { query: 'DELETE FROM ks.t USING TIMESTAMP ? WHERE a = ?', params: [5n, types.Uuid.fromString('00000000-0000-4000-8000-000000000001')] },
    ];
    const back = decodeStatements(encodeStatements(statements));
    expect(back).toEqual(statements);
    expect(back[0]!.params[0]).toBeInstanceOf(types.Uuid);
    expect(back[0]!.params[1]).toBeInstanceOf(types.TimeUuid);
  });

  it('refuse a value they could not give back', () => {
    expect(() => encodeStatements([{ query: 'x', params: [Buffer.from('ab')] }])).toThrow(/cannot be logged/);
  });
});

const target = await cassandraTarget();
if (!target.available) console.warn(`[cassandra batchlog] Cassandra run SKIPPED: ${target.reason}`);

describe.skipIf(!target.available)("the adapter's batchlog on Cassandra", () => {
  const kv = defineTable({ name: 'kv', columns: { id: 'uuid', name: 'text' }, partitionKey: ['id'] });
  let under: StoreUnderTest;
  let client: cassandra.Client;

  beforeAll(async () => {
    under = await target.create();
    await under.store.ensureTables([kv]);
    client = await cassandraClient(await target.contactPoints!());
  }, target.ddlTimeoutMs);
  afterAll(async () => {
    await client?.shutdown();
    await under?.dispose();
  });

  it('applies, in a replay pass, a batch whose writer died after logging it, then forgets it', async () => {
    const store = under.store as Store;
    const keyspace = ((store as unknown as { keyspace: string }).keyspace);
    const ids = ['00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-00000000000b'];
    const statements: LoggedStatement[] = ids.map((id, i) => ({
      query: `INSERT INTO ${keyspace}.kv (id, name) VALUES (?, ?) USING TIMESTAMP ?`,
      params: [types.Uuid.fromString(id), `name ${i}`, 1_000n + BigInt(i)],
    }));
    const unlogged = async (s: readonly LoggedStatement[]) => {
      await client.batch([...s], { prepare: true, logged: false });
    };
    // The writer logs the batch and dies before sending it.
    const writer = new ClientBatchlog({
      store,
      unlogged: async () => {
        throw new Error('the process died');
      },
      replayAfterMs: 10_000,
      log: () => undefined,
    });
    await expect(writer.apply(statements, Date.now() + 2_000)).rejects.toThrow('the process died');
    expect(await store.getMany(kv, ids.map((id) => ({ id })))).toEqual([null, null]);

    const lines: string[] = [];
    const replayer = new ClientBatchlog({ store, unlogged, replayAfterMs: 10_000, log: (m) => lines.push(m) });
    // Too young to replay: its writer may still be sending it.
    expect(await replayer.replay()).toBe(0);
    expect(await under.countRows('store_batchlog')).toBe(1);
    // Once older than the replay delay, and its minute over: applied, then the minute dropped.
    expect(await replayer.replay(Date.now() + 120_000)).toBe(1);
    expect(await store.getMany(kv, ids.map((id) => ({ id })))).toEqual([
      { id: ids[0], name: 'name 0' },
      { id: ids[1], name: 'name 1' },
    ]);
    expect(lines).toEqual(["replayed 1 batch(es) of the adapter's batchlog (store_batchlog) that their writer did not finish"]);
    expect(await under.countRows(storeBatchlogTable.name)).toBe(0);
    expect(await under.countRows(storeBatchlogMinutesTable.name)).toBe(0);
    // A second pass finds nothing.
    expect(await replayer.replay(Date.now() + 120_000)).toBe(0);
  }, 60_000);
});
