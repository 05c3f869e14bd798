/**
 * The ranks of clustering values (paging/rank-orders.ts and the features' orders): a
 * rank never decreases in the store's clustering order, and the key a rank's edge names
 * lies before every value of that rank and after every value of the ranks before it
 * (forward), and the reverse (backward). Checked against the store's own order
 * (`compareValues`) for uuids of every version, bigints, list positions and suspensions.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareItems } from '../../src/features/lists/ledger.js';
import { listOrder } from '../../src/features/lists/lists.js';
import { suspensionOrder, suspensionRank } from '../../src/features/suspensions/suspension-ranks.js';
import { bucketOf } from '../../src/features/suspensions/buckets.js';
import { BIGINT_BOUNDS, RANK_TOP, bigintAtRank, bigintRank, uuidAscending, uuidAtRank, uuidRank } from '../../src/paging/rank-orders.js';
import type { RankOrder } from '../../src/paging/ranked-index.js';
import type { CursorKey } from '../../src/paging/types.js';
import { compareValues, isUuid } from '../../src/store/values.js';

const hex = (bytes: number) => fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => Buffer.from(b).toString('hex'));
/** Any uuid: a random version nibble (1 and 4 most often), random bits elsewhere; some share long prefixes. */
const uuid = fc
  .tuple(hex(16), fc.oneof(fc.constant(1), fc.constant(4), fc.integer({ min: 0, max: 15 })), fc.nat(15))
  .map(([h, version, shared]) => {
    const text = (shared > 10 ? `0123456789ab${h.slice(12)}` : h).split('');
    text[12] = version.toString(16);
    const s = text.join('');
    return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
  });
const bigint64 = fc.bigInt({ min: BIGINT_BOUNDS.lowest, max: BIGINT_BOUNDS.highest });

/** A rank order checked against a key comparison: monotone, and its edges bound each rank. */
function expectRankOrder(order: RankOrder, compare: (a: CursorKey, b: CursorKey) => number, a: CursorKey, b: CursorKey): void {
  const [ra, rb] = [order.rankOf(a), order.rankOf(b)];
  expect(ra >= 0n && ra <= RANK_TOP).toBe(true);
  if (compare(a, b) < 0) expect(ra <= rb).toBe(true);
  if (compare(a, b) > 0) expect(ra >= rb).toBe(true);
  // The edges of a's rank: before (forward) or after (backward) every key of it, and beyond the other ranks.
  const forward = order.edgeKey(ra, 'forward');
  const backward = order.edgeKey(ra, 'backward');
  expect(order.rankOf(forward)).toBe(ra);
  expect(order.rankOf(backward)).toBe(ra);
  expect(compare(forward, a) <= 0 && compare(backward, a) >= 0).toBe(true);
  if (rb < ra) expect(compare(b, forward) < 0).toBe(true);
  if (rb > ra) expect(compare(b, backward) > 0).toBe(true);
}

describe('ranks of clustering values', () => {
  it('ranks uuids in UUIDType order, every version, and bounds each rank with valid uuids', () => {
    fc.assert(
      fc.property(uuid, uuid, (a, b) => {
        expectRankOrder(uuidAscending, (x, y) => compareValues('uuid', x[0] as string, y[0] as string), [a], [b]);
        expect(isUuid(uuidAtRank(uuidRank(a), 'lowest')) && isUuid(uuidAtRank(uuidRank(a), 'highest'))).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it('ranks bigints by their top 60 bits', () => {
    fc.assert(
      fc.property(bigint64, bigint64, (a, b) => {
        if (a < b) expect(bigintRank(a) <= bigintRank(b)).toBe(true);
        const r = bigintRank(a);
        expect(bigintAtRank(r, 'lowest') <= a && a <= bigintAtRank(r, 'highest')).toBe(true);
        expect(bigintRank(bigintAtRank(r, 'lowest'))).toBe(r);
        expect(bigintRank(bigintAtRank(r, 'highest'))).toBe(r);
      }),
      { numRuns: 2_000 },
    );
    expect(bigintRank(BIGINT_BOUNDS.lowest)).toBe(0n);
    expect(bigintRank(BIGINT_BOUNDS.highest)).toBe(RANK_TOP);
  });

  it("ranks a list's positions in the list's order (weight, seq, item id)", () => {
    const weight = fc.oneof(bigint64, fc.bigInt({ min: -20n, max: 20n }), fc.bigInt({ min: 0n, max: 1n << 40n }));
    const key = fc.tuple(weight, bigint64, uuid).map(([w, s, id]): CursorKey => [w.toString(), s.toString(), id]);
    const position = (k: CursorKey) => ({ weight: BigInt(k[0] as string), seq: BigInt(k[1] as string), itemId: k[2] as string });
    fc.assert(
      fc.property(key, key, (a, b) => expectRankOrder(listOrder, (x, y) => compareItems(position(x), position(y)), a, b)),
      { numRuns: 2_000 },
    );
  });

  it('ranks suspensions newest first, then by user id, with the bucket of their time', () => {
    const order = suspensionOrder('month');
    const ms = fc.oneof(fc.integer({ min: 0, max: Date.UTC(2100, 0, 1) }), fc.constantFrom(Date.UTC(2026, 0, 1), Date.UTC(2026, 0, 1) + 1));
    const key = fc.tuple(ms, uuid).map(([t, id]): CursorKey => [bucketOf(new Date(t), 'month'), t, id]);
    // The connection's order: bucket DESC, then occurred_on DESC, then user_id ASC.
    const compare = (x: CursorKey, y: CursorKey) =>
      (x[0]! < y[0]! ? 1 : x[0]! > y[0]! ? -1 : 0) || (y[1] as number) - (x[1] as number) || compareValues('uuid', x[2] as string, y[2] as string);
    fc.assert(fc.property(key, key, (a, b) => expectRankOrder(order, compare, a, b)), { numRuns: 2_000 });
    expect(suspensionRank(Date.UTC(2026, 0, 1), uuidAtRank(0n, 'lowest'))).toBeGreaterThan(suspensionRank(Date.UTC(2026, 0, 2), uuidAtRank(RANK_TOP, 'highest')));
  });
});
