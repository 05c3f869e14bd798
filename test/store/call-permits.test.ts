/** Request store calls under permits: never more than the cap at once, the rest wait their turn; callers without a permit never wait. */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { CallPermits, requestCallCapacity } from '../../src/store/call-permits.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { CountingStore, StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';
import { defineTable } from '../../src/store/table.js';

/** Every call takes 50 ms, as a busy cluster's would. */
class SlowStore extends StoreDecorator {
  protected async around<T>(_call: StoreCall, run: () => Promise<T>): Promise<T> {
    await sleep(50);
    return run();
  }
}

describe('call permits', () => {
  it('runs at most `max` calls at once, hands each freed permit to the next waiter, and keeps every result', async () => {
    const permits = new CallPermits(3);
    let running = 0;
    let most = 0;
    const call = (i: number) =>
      permits.run(async () => {
        most = Math.max(most, ++running);
        await sleep(5 + (i % 3));
        running--;
        if (i === 7) throw new Error('call 7 failed');
        return i;
      });
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => call(i)));
    expect(most).toBe(3);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual(
      Array.from({ length: 20 }, (_, i) => (i === 7 ? 'call 7 failed' : i)),
    );
    expect(permits.inUse).toBe(0);
  });

  it('returns the permit before the caller sees the result, and when the call throws before it starts', async () => {
    const permits = new CallPermits(1);
    const seen = await permits.run(async () => 'read').then((value) => [value, permits.inUse]);
    expect(seen).toEqual(['read', 0]);
    await expect(
      permits.run(() => {
        throw new Error('bad statement');
      }),
    ).rejects.toThrow('bad statement');
    expect(permits.inUse).toBe(0);
    // A throwing call that waited for its permit hands it on too.
    const first = permits.run(() => sleep(10).then(() => 1));
    const second = permits.run(() => {
      throw new Error('second failed');
    });
    const third = permits.run(async () => permits.inUse);
    await expect(first).resolves.toBe(1);
    await expect(second).rejects.toThrow('second failed');
    await expect(third).resolves.toBe(1);
    expect(permits.inUse).toBe(0);
  });

  it('gives requests half of what one host carries on Cassandra (2,048 requests per connection)', () => {
    expect(requestCallCapacity(1)).toBe(1_024);
    expect(requestCallCapacity(2)).toBe(2_048);
  });

  it('makes a request store call wait for a permit while a background call on the same store goes straight through', async () => {
    const table = defineTable({ name: 'permit_rows', columns: { id: 'int', v: 'text' }, partitionKey: ['id'] });
    const base = new SqliteStore({ database: new Database(':memory:') });
    await base.ensureTables([table]);
    await base.upsert(table, { id: 1, v: 'one' });
    const shared = new SlowStore(base);
    const permits = new CallPermits(1);
    const request = new CountingStore(shared, undefined, undefined, permits);
    const started = Date.now();
    const finished: Array<[string, number]> = [];
    const timed = (name: string, call: Promise<unknown>) => call.then(() => finished.push([name, Date.now() - started]));
    await Promise.all([
      timed('request 1', request.get(table, { id: 1 })),
      timed('request 2', request.get(table, { id: 1 })),
      // Presence, the applier, the verifiers: the store itself, no permit.
      timed('background', shared.get(table, { id: 1 })),
    ]);
    expect(finished.map(([name]) => name)).toEqual(['request 1', 'background', 'request 2']);
    expect(finished[1]![1]).toBeLessThan(90);
    expect(finished[2]![1]).toBeGreaterThanOrEqual(95);
    await base.close();
  });
});
