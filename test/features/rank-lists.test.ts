/**
 * The counted index's lists as stored (count-ranks.ts `packRankList` /
 * `unpackRankList`): one cell per list of buckets, in either spelling (sparse, or dense
 * where every count is 1 to 35 and that is shorter; sparse only with COUNT_LISTS_SPARSE),
 * read back to the same buckets; read as the index's walk reads it (`packedRankList`),
 * decoded only as far as it is asked, with the same answers as the whole list.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { packRankList, packedRankList, unpackRankList } from '../../src/counts/count-ranks.js';
import { RANK_LEVEL_SHIFTS, bucketList, childPrefixRange, levelWidth, type RankBucket } from '../../src/paging/ranked-index.js';

/**
 * A list of `level` under `parent`: unique places under the parent, with their counts.
 * Half of them are spread over the parent's children with any count (sparse lists); half
 * crowd its first children with counts of 0 to 35, and now and then one below 0 or
 * above 35, where the dense spelling is not to be written.
 */
const aList = fc
  .tuple(fc.integer({ min: 0, max: RANK_LEVEL_SHIFTS.length - 1 }), fc.boolean())
  .chain(([level, crowded]) =>
    fc.record({
      level: fc.constant(level),
      // Level 0 has no parent; a deeper list's parent is any prefix of the level above.
      parent: level === 0 ? fc.constant(undefined) : fc.bigInt({ min: 0n, max: (1n << BigInt(60 - RANK_LEVEL_SHIFTS[level - 1]!)) - 1n }),
      entries: crowded
        ? fc
            .tuple(
              // The count of each child from the first, half of them empty.
              fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 35 })), { minLength: 1, maxLength: Math.min(2 ** levelWidth(level), 300) }),
              fc.option(fc.tuple(fc.nat(), fc.oneof(fc.integer({ min: -40, max: -1 }), fc.integer({ min: 36, max: 2_000 }))), { freq: 2 }),
            )
            .map(([counts, spoiler]): Array<[number, number]> => {
              const entries = counts.map((count, place): [number, number] => [place, count]);
              if (spoiler) entries[spoiler[0] % entries.length]![1] = spoiler[1];
              return entries;
            })
        : fc.uniqueArray(fc.tuple(fc.integer({ min: 0, max: 2 ** levelWidth(level) - 1 }), fc.integer({ min: -1_000, max: 10_000_000 })), { selector: ([place]) => place, maxLength: 300 }),
    }),
  );

/** The list's buckets in prefix order, and the buckets stored (those of counts not 0). */
function bucketsOf({ level, parent, entries }: { level: number; parent: bigint | undefined; entries: Array<[number, number]> }) {
  const { lowest } = childPrefixRange(level, parent ?? 0n);
  const buckets: RankBucket[] = [...entries].sort((a, b) => a[0] - b[0]).map(([place, count]) => ({ prefix: lowest + BigInt(place), count }));
  return { lowest, buckets, stored: buckets.filter((b) => b.count !== 0) };
}

/** The list packed both ways: as written by default, and with COUNT_LISTS_SPARSE. */
const spellings = (level: number, parent: bigint | undefined, buckets: RankBucket[]) => [packRankList(level, parent, buckets), packRankList(level, parent, buckets, { sparseLists: true })];

describe('the counted index lists as stored', () => {
  it('reads back every bucket of a list as packed, in either spelling, in prefix order, leaving out counts of 0', () => {
    const seen = { dense: 0, sparse: 0 };
    fc.assert(
      fc.property(aList, (list) => {
        const { level, parent } = list;
        const { buckets, stored } = bucketsOf(list);
        const [written, sparse] = spellings(level, parent, buckets);
        for (const text of [written!, sparse!]) {
          const read = unpackRankList(level, parent, text);
          expect(read.map((b) => ({ prefix: b.prefix, count: b.count }))).toEqual(stored);
        }
        // COUNT_LISTS_SPARSE writes the sparse spelling always; without it, the dense one
        // where every count is 1 to 35 and "=" and a digit per child through the last is shorter.
        expect(sparse!.startsWith('=')).toBe(false);
        const last = stored.length === 0 ? -1 : Number(stored.at(-1)!.prefix - childPrefixRange(level, parent ?? 0n).lowest);
        const dense = stored.length > 0 && stored.every((b) => b.count >= 1 && b.count <= 35) && last + 2 < sparse!.length;
        expect(written).toBe(dense ? `=${Array.from({ length: last + 1 }, (_, place) => (stored.find((b) => Number(b.prefix - childPrefixRange(level, parent ?? 0n).lowest) === place)?.count ?? 0).toString(36)).join('')}` : sparse);
        seen[dense ? 'dense' : 'sparse']++;
      }),
      { numRuns: 500 },
    );
    // Both spellings were drawn, many times each.
    expect(seen.dense).toBeGreaterThan(50);
    expect(seen.sparse).toBeGreaterThan(50);
  });

  it('spells a crowded list of small counts densely, and sparsely with a count past 35, below 1, or where that is shorter', () => {
    const lowest = 5n << 8n;
    const at = (place: number, count: number): RankBucket => ({ prefix: lowest + BigInt(place), count });
    expect(packRankList(2, 5n, [at(0, 3), at(2, 1), at(3, 10), at(4, 35)])).toBe('=301az');
    expect(packRankList(2, 5n, [at(0, 3), at(2, 1), at(3, 10), at(4, 35)], { sparseLists: true })).toBe('0:3,2:1,3:a,4:z');
    expect(packRankList(2, 5n, [at(0, 3), at(2, 1), at(3, 36)])).toBe('0:3,2:1,3:10');
    expect(packRankList(2, 5n, [at(0, 3), at(2, -1), at(3, 10)])).toBe('0:3,2:-1,3:a');
    expect(packRankList(2, 5n, [at(0, 3), at(200, 1)])).toBe('0:3,5k:1');
    expect(unpackRankList(2, 5n, '=301az')).toEqual([at(0, 3), at(2, 1), at(3, 10), at(4, 35)]);
    // Trailing empty children, or none at all, read as nothing.
    expect(unpackRankList(2, 5n, '=0300')).toEqual([at(1, 3)]);
    expect(unpackRankList(2, 5n, '=')).toEqual([]);
  });

  it('reads an empty list from no row and from an emptied one', () => {
    expect(unpackRankList(3, 7n, undefined)).toEqual([]);
    expect(unpackRankList(3, 7n, packRankList(3, 7n, [{ prefix: 7n << 8n, count: 0 }]))).toEqual([]);
  });

  it('answers a walk from a packed list in either spelling, read in any order, as from the whole list of buckets', () => {
    fc.assert(
      fc.property(aList, fc.array(fc.nat(), { maxLength: 12 }), (list, probes) => {
        const { level, parent } = list;
        const { lowest, buckets, stored } = bucketsOf(list);
        const whole = bucketList(stored);
        for (const text of spellings(level, parent, buckets)) {
          const packed = packedRankList(level, parent, text);
          const rows = packed.rows;
          // Each probe, in the order drawn: a position (a bucket there, or none), and a prefix (how many lie below it).
          for (const probe of probes) {
            const i = probe % (whole.length + 2);
            expect(packed.has(i)).toBe(i < whole.length);
            if (i < whole.length) expect([packed.prefix(i), packed.count(i)]).toEqual([whole.prefix(i), whole.count(i)]);
            const prefix = lowest + BigInt(probe % (2 ** levelWidth(level) + 2)) - 1n;
            expect(packed.below(prefix)).toBe(whole.below(prefix));
          }
          expect(packed.length).toBe(whole.length);
          // An upper bound that never changes as the list is decoded (`RankCache` weighs it so).
          expect(packed.rows).toBe(rows);
          expect(packed.rows).toBeGreaterThanOrEqual(whole.length);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('sums the counts below a prefix and finds the bucket of a position, in either spelling, in its text and decoded, as the whole list does', () => {
    fc.assert(
      fc.property(aList, fc.array(fc.tuple(fc.nat(), fc.oneof(fc.integer({ min: -5, max: 20_000_000 }), fc.integer({ min: -5, max: 3_000 }))), { minLength: 1, maxLength: 8 }), (list, probes) => {
        const { level, parent } = list;
        const { lowest, buckets, stored } = bucketsOf(list);
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
        // Per spelling, one list read again and again (in its text, then decoded), and a
        // fresh one per read; a list read once, by a select alone.
        const whole = bucketList(stored);
        for (const text of spellings(level, parent, buckets)) {
          const kept = packedRankList(level, parent, text);
          for (const [probe, remaining] of probes) {
            const prefix = lowest + BigInt(probe % (2 ** levelWidth(level) + 2)) - 1n;
            for (const list of [kept, packedRankList(level, parent, text), whole]) {
              expect(list.countBelow(prefix)).toBe(sumBelow(prefix));
              expect(list.select(remaining)).toEqual(selectModel(remaining));
            }
            expect(packedRankList(level, parent, text).select(remaining)).toEqual(selectModel(remaining));
          }
        }
      }),
      { numRuns: 500 },
    );
  });
});
