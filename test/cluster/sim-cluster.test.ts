/**
 * The simulated cluster itself: timestamps are chosen when a call is made and survive
 * landing late, a batch lands partition by partition but completely, a crashed
 * instance answers nothing, server clocks never tie, and lightweight transactions
 * carry the coordinator's ballot time, not an instance's clock.
 */
import { describe, expect, it } from 'vitest';
import { listItemIndexTable, listsTable } from '../../src/features/lists/lists-tables.js';
import { usersByUsernameTable } from '../../src/features/users/users-tables.js';
import { MonotonicClock, NODE_COUNT } from '../../src/store/clock.js';
import { SimCluster } from '../support/sim-cluster.js';

const LIST = '00000000-0000-4000-8000-000000000001';
const ITEM = '00000000-0000-4000-8000-000000000002';
const OWNER_A = '00000000-0000-4000-8000-00000000000a';
const OWNER_B = '00000000-0000-4000-8000-00000000000b';
const OWNER_C = '00000000-0000-4000-8000-00000000000c';

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

  it('removes a lightweight-transaction row with a condition only: its own claim, never a later one', async () => {
    const cluster = await SimCluster.create({ seed: 3, offsetsMs: [500, -500], maxDelayMs: 5 });
    try {
      const key = { username: 'sim-claim' };
      const owner = async () => (await cluster.base.get(usersByUsernameTable, key))?.user_id ?? null;
      const [ahead, behind] = [cluster.at(0).store, cluster.at(1).store];
      expect((await behind.insertIfNotExists(usersByUsernameTable, { ...key, user_id: OWNER_A })).applied).toBe(true);
      expect(await ahead.deleteIf(usersByUsernameTable, key, { user_id: OWNER_B })).toBe(false);
      expect(await owner()).toBe(OWNER_A);
      // The owner releases it from the clock 500 ms behind: the ballot, not that clock, orders it.
      expect(await behind.deleteIf(usersByUsernameTable, key, { user_id: OWNER_A })).toBe(true);
      expect(await owner()).toBeNull();
      expect((await ahead.insertIfNotExists(usersByUsernameTable, { ...key, user_id: OWNER_B })).applied).toBe(true);
      // A late or repeated release of the old claim leaves the new owner's alone.
      expect(await behind.deleteIf(usersByUsernameTable, key, { user_id: OWNER_A })).toBe(false);
      expect(await owner()).toBe(OWNER_B);
      // Why the condition: a plain delete stamped by the clock ahead outranks the ballot,
      // and then hides even a claim made after it, which the store accepted.
      await ahead.delete(usersByUsernameTable, key);
      expect((await behind.insertIfNotExists(usersByUsernameTable, { ...key, user_id: OWNER_C })).applied).toBe(true);
      expect(await owner()).toBeNull();
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
