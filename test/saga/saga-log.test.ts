/**
 * The saga log partitioned by time bucket (src/saga/saga-log.ts): recovery reads the
 * buckets from each shard's low-water mark on, moves the mark past buckets it read
 * empty once they are closed, never past a bucket that still holds an open saga (so a
 * saga a server left open long ago is still found), and still finds the rows of the
 * log's previous layout, closing them there.
 */
import { describe, expect, it } from 'vitest';
import {
  legacySagaLogTable,
  SAGA_BUCKET_MS,
  SAGA_LOG_SHARDS,
  SagaLog,
  sagaLogMarksTable,
  sagaLogTable,
  sagaLogTables,
  shardOf,
} from '../../src/saga/saga-log.js';
import { CountingStore } from '../../src/store/store-decorator.js';
import { newTimeuuid } from '../../src/store/timeuuid.js';
import { memorySqliteStore } from '../support/stores.js';

const HOUR = 3_600_000;

async function aLog() {
  const store = memorySqliteStore();
  await store.ensureTables(sagaLogTables);
  return { store, log: new SagaLog(store) };
}

/** The low-water mark of every shard, as bucket start times. */
async function marks(store: ReturnType<typeof memorySqliteStore>): Promise<number[]> {
  const rows = await store.getMany(sagaLogMarksTable, Array.from({ length: SAGA_LOG_SHARDS }, (_, shard) => ({ shard })));
  return rows.map((r) => Number((r!.oldest_bucket ?? r!.first_bucket) as bigint));
}

describe('the saga log, partitioned by time bucket', () => {
  it('finds an open saga in its bucket, and forgets it once closed', async () => {
    const { log } = await aLog();
    const saga = { sagaId: newTimeuuid(), kind: 'k', payload: { n: 1 } };
    await log.record(saga, 0, 'forward');
    expect((await log.open()).map((r) => [r.sagaId, r.payload, r.legacy])).toEqual([[saga.sagaId, { n: 1 }, false]]);
    expect(await log.isOpen(saga.sagaId)).toBe(true);
    await log.close(saga);
    expect(await log.open()).toEqual([]);
    expect(await log.isOpen(saga.sagaId)).toBe(false);
  });

  it('moves each low-water mark past closed empty buckets, so a later pass reads a few buckets per shard', async () => {
    const { store, log } = await aLog();
    const now = Date.now();
    await log.open(new Date(now));
    // A fresh cluster's first pass starts an hour back and moves past what is closed.
    const first = await marks(store);
    for (const mark of first) expect(mark).toBeGreaterThan(now - 5 * 60_000 - SAGA_BUCKET_MS);
    const counting = new CountingStore(store);
    await new SagaLog(counting).open(new Date(now));
    // The marks, then per shard the buckets from its mark to now (at most 3 of 5 minutes), and the old layout's 8 shards.
    expect(counting.roundTrips).toBeLessThanOrEqual(1 + SAGA_LOG_SHARDS * 3 + SAGA_LOG_SHARDS);
  });

  it('never moves a mark past a saga left open long ago, and finds it however old it is', async () => {
    const { store, log } = await aLog();
    const now = Date.now();
    await log.open(new Date(now - 30 * HOUR));
    // A saga started 29 hours ago by a server that then crashed.
    const old = { sagaId: newTimeuuid(now - 29 * HOUR), kind: 'k', payload: 'old' };
    await log.record(old, 2, 'forward');
    await log.open(new Date(now - 2 * HOUR));
    await log.open(new Date(now));
    expect((await log.open(new Date(now))).map((r) => r.payload)).toEqual(['old']);
    const mark = (await marks(store))[shardOf(old.sagaId)]!;
    expect(mark).toBeLessThanOrEqual(now - 29 * HOUR);
    // Once it is closed, the next pass moves the mark on.
    await log.close(old);
    await log.open(new Date(now));
    expect((await marks(store))[shardOf(old.sagaId)]!).toBeGreaterThan(now - HOUR);
  });

  it('reads the previous layout too, and closes a saga found there in place', async () => {
    const { store, log } = await aLog();
    const sagaId = newTimeuuid(Date.now() - 50 * HOUR);
    await store.upsert(legacySagaLogTable, { shard: shardOf(sagaId), saga_id: sagaId, kind: 'k', payload: '"legacy"', step: 1, phase: 'forward', updated_at: new Date() });
    const [found] = await log.open();
    expect(found).toMatchObject({ sagaId, payload: 'legacy', legacy: true, step: 1 });
    expect(await log.isOpen(sagaId)).toBe(true);
    await log.record(found!, 0, 'compensating');
    expect(await store.slice(sagaLogTable, { partition: { shard: shardOf(sagaId), bucket: 0n }, limit: 10 })).toEqual([]);
    await log.close(found!);
    expect(await log.open()).toEqual([]);
  });
});
