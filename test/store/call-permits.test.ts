/** Request store calls under permits: never more than the cap at once, the rest wait their turn; callers without a permit never wait. */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { CallPermits, requestCallCapacity } from '../../src/store/call-permits.js';

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

  it('gives requests half of what one host carries on Cassandra (2,048 requests per connection)', () => {
    expect(requestCallCapacity(1)).toBe(1_024);
    expect(requestCallCapacity(2)).toBe(2_048);
  });
});
