/**
 * The simulated cluster itself: timestamps are chosen when a call is made and survive
 * landing late, a batch lands partition by partition but completely, a crashed
 * instance answers nothing, and server clocks never tie.
 */
import { describe, expect, it } from 'vitest';
import { listItemIndexTable, listsTable } from '../../src/features/lists/lists-tables.js';
import { MonotonicClock, NODE_COUNT } from '../../src/store/clock.js';
import { SimCluster } from '../support/sim-cluster.js';

const LIST = '00000000-0000-4000-8000-000000000001';
const ITEM = '00000000-0000-4000-8000-000000000002';

describe('the simulated cluster', () => {
  it('keeps the write of the instance whose clock is ahead, whichever lands last', async () => {
    const cluster = await SimCluster.create({ seed: 1, offsetsMs: [500, -500], maxDelayMs: 20 });
    try {
      const row = (title: string) => ({ list_id: LIST, title, owner_id: LIST, created_at: new Date(0) });
      // The instance behind writes last in real time, and still loses.
      await cluster.at(0).store.upsert(listsTable, row('ahead'));
      await cluster.at(1).store.upsert(listsTable, row('behind'));
      expect((await cluster.base.get(listsTable, { list_id: LIST }))?.title).toBe('ahead');
    } finally {
      await cluster.close();
    }
  });

  it('lands every partition of a logged batch even when its instance dies meanwhile', async () => {
    const cluster = await SimCluster.create({ seed: 2, offsetsMs: [0, 0], maxDelayMs: 30 });
    try {
      const instance = cluster.at(0);
      let releaseSecond = () => undefined as void;
      const secondHeld = new Promise<void>((resolve) => (releaseSecond = resolve));
      let firstLanded = () => undefined as void;
      const first = new Promise<void>((resolve) => (firstLanded = resolve));
      instance.store.beforeBatchPart = async (n) => {
        if (n === 1) await secondHeld;
        else setImmediate(firstLanded);
      };
      const answer = instance.run(async () => {
        await instance.store.batch([
          { kind: 'upsert', table: listsTable, row: { list_id: LIST, title: 't', owner_id: LIST, created_at: new Date(0) } },
          { kind: 'upsert', table: listItemIndexTable, row: { item_id: ITEM, list_id: LIST, weight: 1n, seq: 1n, label: 'x' } },
        ]);
        return 'answered';
      });
      // One partition has landed, the other not yet: the instance dies.
      await first;
      expect(await cluster.base.get(listItemIndexTable, { item_id: ITEM })).toBeNull();
      instance.store.crash();
      releaseSecond();
      expect(await answer).toEqual({ kind: 'died' });
      await cluster.quiesce();
      expect(await cluster.base.get(listsTable, { list_id: LIST })).not.toBeNull();
      expect(await cluster.base.get(listItemIndexTable, { item_id: ITEM })).not.toBeNull();
      expect(await instance.run(async () => 'after death')).toEqual({ kind: 'died' });
    } finally {
      await cluster.close();
    }
  });

  it('gives two servers timestamps that never tie, each strictly increasing', () => {
    const frozen = () => 1_700_000_000_000;
    const a = new MonotonicClock({ now: frozen, node: 1 });
    const b = new MonotonicClock({ now: frozen, node: 2 });
    const fromA = Array.from({ length: 100 }, () => a.nowMicros());
    const fromB = Array.from({ length: 100 }, () => b.nowMicros());
    expect(new Set([...fromA, ...fromB]).size).toBe(200);
    for (let i = 1; i < 100; i++) expect(fromA[i]! > fromA[i - 1]!).toBe(true);
    expect(fromA.every((t) => t % BigInt(NODE_COUNT) === 1n)).toBe(true);
    expect(() => new MonotonicClock({ node: NODE_COUNT })).toThrow(/between 0 and 63, got 64/);
  });
});
