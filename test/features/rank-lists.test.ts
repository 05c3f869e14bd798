/**
 * The counted index's lists as stored (count-ranks.ts `packRankList` /
 * `unpackRankList`): one cell per list of buckets, read back to the same buckets; read
 * as the index's walk reads it (`packedRankList`), decoded only as far as it is asked,
 * with the same answers as the whole list.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { packRankList, packedRankList, unpackRankList } from '../../src/counts/count-ranks.js';
import { RANK_LEVEL_SHIFTS, bucketList, childPrefixRange, levelWidth, type RankBucket } from '../../src/paging/ranked-index.js';

/** A list of `level` under `parent`: unique places under the parent, in prefix order, with their counts. */
const aList = fc
  .integer({ min: 0, max: RANK_LEVEL_SHIFTS.length - 1 })
  .chain((level) =>
    fc.record({
      level: fc.constant(level),
      // Level 0 has no parent; a deeper list's parent is any prefix of the level above.
      parent: level === 0 ? fc.constant(undefined) : fc.bigInt({ min: 0n, max: (1n << BigInt(60 - RANK_LEVEL_SHIFTS[level - 1]!)) - 1n }),
      entries: fc.uniqueArray(fc.tuple(fc.integer({ min: 0, max: 2 ** levelWidth(level) - 1 }), fc.integer({ min: -1_000, max: 10_000_000 })), { selector: ([place]) => place, maxLength: 300 }),
    }),
  );

describe('the counted index lists as stored', () => {
  it('reads back every bucket of a list as packed, in prefix order, leaving out counts of 0', () => {
    fc.assert(
      fc.property(aList, ({ level, parent, entries }) => {
        const { lowest } = childPrefixRange(level, parent ?? 0n);
        const buckets: RankBucket[] = [...entries].sort((a, b) => a[0] - b[0]).map(([place, count]) => ({ prefix: lowest + BigInt(place), count }));
        const read = unpackRankList(level, parent, packRankList(level, parent, buckets));
        expect(read.map((b) => ({ prefix: b.prefix, count: b.count }))).toEqual(buckets.filter((b) => b.count !== 0));
      }),
      { numRuns: 500 },
    );
  });

  it('reads an empty list from no row and from an emptied one', () => {
    expect(unpackRankList(3, 7n, undefined)).toEqual([]);
    expect(unpackRankList(3, 7n, packRankList(3, 7n, [{ prefix: 7n << 8n, count: 0 }]))).toEqual([]);
  });

  it('answers a walk from a packed list, read in any order, as from the whole list of buckets', () => {
    fc.assert(
      fc.property(aList, fc.array(fc.nat(), { maxLength: 12 }), ({ level, parent, entries }, probes) => {
        const { lowest } = childPrefixRange(level, parent ?? 0n);
        const buckets: RankBucket[] = [...entries].sort((a, b) => a[0] - b[0]).map(([place, count]) => ({ prefix: lowest + BigInt(place), count }));
        const whole = bucketList(buckets.filter((b) => b.count !== 0));
        const packed = packedRankList(level, parent, packRankList(level, parent, buckets));
        // Each probe, in the order drawn: a position (a bucket there, or none), and a prefix (how many lie below it).
        for (const probe of probes) {
          const i = probe % (whole.length + 2);
          expect(packed.has(i)).toBe(i < whole.length);
          if (i < whole.length) expect([packed.prefix(i), packed.count(i)]).toEqual([whole.prefix(i), whole.count(i)]);
          const prefix = lowest + BigInt(probe % (2 ** levelWidth(level) + 2)) - 1n;
          expect(packed.below(prefix)).toBe(whole.below(prefix));
        }
        expect(packed.length).toBe(whole.length);
        expect(packed.rows).toBeGreaterThanOrEqual(whole.length);
      }),
      { numRuns: 500 },
    );
  });

  it('sums the counts below a prefix and finds the bucket of a position, in its text and decoded, as the whole list does', () => {
    fc.assert(
      fc.property(aList, fc.array(fc.tuple(fc.nat(), fc.integer({ min: -5, max: 20_000_000 })), { minLength: 1, maxLength: 8 }), ({ level, parent, entries }, probes) => {
        const { lowest } = childPrefixRange(level, parent ?? 0n);
        const buckets: RankBucket[] = [...entries].sort((a, b) => a[0] - b[0]).map(([place, count]) => ({ prefix: lowest + BigInt(place), count }));
        const stored = buckets.filter((b) => b.count !== 0);
        const text = packRankList(level, parent, buckets);
        // The model: a sum over the buckets below, and the first bucket the running count passes.
        const sumBelow = (prefix: bigint) => stored.reduce((sum, b) => (b.prefix < prefix ? sum + b.count : sum), 0);
        const selectModel = (remaining: number) => {
          let before: RankBucket | undefined;
          for (let at = 0; at < stored.length; at++) {
            const { prefix, count } = stored[at]!;
            if (remaining < count) return { at, prefix, count, remaining, beforePrefix: before?.prefix, beforeCount: before?.count ?? 0 };
            remaining -= count;
            if (count > 0) before = stored[at];
          }
          return null;
        };
        // One list read again and again (in its text, then decoded), and a fresh one per read.
        const kept = packedRankList(level, parent, text);
        const whole = bucketList(stored);
        for (const [probe, remaining] of probes) {
          const prefix = lowest + BigInt(probe % (2 ** levelWidth(level) + 2)) - 1n;
          for (const list of [kept, packedRankList(level, parent, text), whole]) {
            expect(list.countBelow(prefix)).toBe(sumBelow(prefix));
            expect(list.select(remaining)).toEqual(selectModel(remaining));
          }
        }
      }),
      { numRuns: 500 },
    );
  });
});
