/**
 * The Cassandra adapter turns clustering-order bounds into CQL single-range
 * restrictions. No Cassandra runs here, so this proves the split itself: evaluating
 * each restriction with CQL's value semantics and concatenating them must give exactly
 * the rows between the bounds, in clustering order, for every ASC/DESC mix.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cqlRestrictions,
  splitClusteringRange,
  type RangeColumn,
  type SingleRange,
  type TupleRange,
} from '../../src/store/cassandra/cassandra-ranges.js';
import type { ClusteringBound } from '../../src/store/port.js';
import type { ClusteringOrder, CqlValue } from '../../src/store/table.js';
import { compareColumnValues, compareInClusteringOrder, tuplesBetween } from '../support/clustering-model.js';

const A = [-5, -1, 0, 3];
const B = ['a', 'm', 'é', '😀'];
const C = [-2, 0, 7];
const TUPLES: CqlValue[][] = A.flatMap((a) => B.flatMap((b) => C.map((c) => [a, b, c])));

/** What Cassandra returns for one restriction: value semantics, clustering order. */
function evaluate(orders: ClusteringOrder[], range: SingleRange): CqlValue[][] {
  const d = range.equal.length;
  return TUPLES.filter((t) => {
    if (!range.equal.every((v, i) => compareColumnValues(i, t[i]!, v) === 0)) return false;
    return range.bounds.every((b) => {
      const c = compareColumnValues(d, t[d]!, b.value);
      return b.op === '>' ? c > 0 : b.op === '>=' ? c >= 0 : b.op === '<' ? c < 0 : c <= 0;
    });
  }).sort((x, y) => compareInClusteringOrder(orders, x, y));
}

/**
 * What Cassandra returns for a tuple relation: `(c1, …, ck) > (v1, …, vk)` compares
 * values lexicographically, whatever the clustering order (a shorter tuple compares
 * the row's prefix).
 */
function evaluateTuple(orders: ClusteringOrder[], range: TupleRange): CqlValue[][] {
  const compareByValue = (t: CqlValue[], values: readonly CqlValue[]) => {
    for (let i = 0; i < values.length; i++) {
      const c = compareColumnValues(i, t[i]!, values[i]!);
      if (c !== 0) return c;
    }
    return 0;
  };
  return TUPLES.filter((t) =>
    range.tuple.every((b) => {
      const c = compareByValue(t, b.values);
      return b.op === '>' ? c > 0 : b.op === '>=' ? c >= 0 : b.op === '<' ? c < 0 : c <= 0;
    }),
  ).sort((x, y) => compareInClusteringOrder(orders, x, y));
}

/** The (int, text, int) clustering key of TUPLES, in the given orders. */
function key(orders: readonly ClusteringOrder[]): RangeColumn[] {
  return [
    { column: 'a', type: 'int', order: orders[0]! },
    { column: 'b', type: 'text', order: orders[1]! },
    { column: 'c', type: 'int', order: orders[2]! },
  ];
}

const INT_LOWEST = -(2 ** 31);
const INT_HIGHEST = 2 ** 31 - 1;
const order = fc.constantFrom<ClusteringOrder>('ASC', 'DESC');
const bound = fc.option(
  fc
    .tuple(
      fc.integer({ min: 1, max: 3 }),
      fc.constantFrom(-5, -2, 0, 1, 3, 9),
      // The ends of a type too: a bound at the first or last key there is (a rank's edge).
      fc.constantFrom('a', 'b', 'é', '😀', 'zz', ''),
      fc.constantFrom(-2, 0, 5, 7, INT_LOWEST, INT_HIGHEST),
      fc.boolean(),
    )
    .map(([len, a, b, c, inclusive]) => ({ values: [a, b, c].slice(0, len), inclusive }) as ClusteringBound),
  { nil: undefined },
);

describe('splitting clustering bounds for CQL', () => {
  it('covers exactly the rows between the bounds, in clustering order, for every ASC/DESC mix', () => {
    fc.assert(
      fc.property(fc.tuple(order, order, order), bound, bound, (orders, lower, upper) => {
        const columns = key(orders);
        const ranges = splitClusteringRange(columns, { lower, upper });
        const got = ranges.flatMap((r) => evaluate(orders, r));
        expect(got).toEqual(tuplesBetween(orders, TUPLES, lower, upper));
        // Each restriction is one CQL slice: equalities, then at most two bounds on one column.
        for (const r of ranges) expect(r.bounds.length).toBeLessThanOrEqual(2);
      }),
      { numRuns: 3_000 },
    );
  });

  it('keeps a bound on a single-direction key to one restriction per prefix level', () => {
    const columns: RangeColumn[] = [
      { column: 'a', type: 'int', order: 'DESC' },
      { column: 'b', type: 'text', order: 'ASC' },
    ];
    // After (3, 'm') in clustering order: a = 3 AND b > 'm', then a < 3.
    expect(splitClusteringRange(columns, { lower: { values: [3, 'm'], inclusive: false } })).toEqual([
      { equal: [3], bounds: [{ op: '>', value: 'm' }] },
      { equal: [], bounds: [{ op: '<', value: 3 }] },
    ]);
    // No bounds: the whole partition in one restriction.
    expect(splitClusteringRange(columns)).toEqual([{ equal: [], bounds: [] }]);
  });

  it('states a bound whose rest is the first (or last) key there is as one range on its first column, not two served in turn', () => {
    // A suspension's edge: (occurred_on DESC, user_id ASC), from a time's lowest user id on.
    const columns: RangeColumn[] = [
      { column: 'occurred_on', type: 'int', order: 'DESC' },
      { column: 'user_id', type: 'uuid', order: 'ASC' },
    ];
    const lowest = '00000000-0000-0000-0000-000000000000';
    const highest = 'ffffffff-ffff-ffff-ffff-ffffffffffff';
    expect(cqlRestrictions(columns, { lower: { values: [7, lowest], inclusive: true } })).toEqual([{ equal: [], bounds: [{ op: '<=', value: 7 }] }]);
    expect(cqlRestrictions(columns, { upper: { values: [7, highest], inclusive: true } })).toEqual([{ equal: [], bounds: [{ op: '>=', value: 7 }] }]);
    expect(cqlRestrictions(columns, { lower: { values: [9, lowest], inclusive: true }, upper: { values: [7, highest], inclusive: true } })).toEqual([
      { equal: [], bounds: [{ op: '<=', value: 9 }, { op: '>=', value: 7 }] },
    ]);
    // Not at an end (or not inclusive): the rows sharing the time are a range of their own.
    expect(cqlRestrictions(columns, { lower: { values: [7, lowest], inclusive: false } })).toHaveLength(2);
    expect(cqlRestrictions(columns, { lower: { values: [7, highest], inclusive: true } })).toHaveLength(2);
    // On a DESC column the first key is its type's highest value: two ranges, not three.
    expect(splitClusteringRange(key(['ASC', 'ASC', 'DESC']), { lower: { values: [3, 'm', INT_HIGHEST], inclusive: true } })).toEqual([
      { equal: [3], bounds: [{ op: '>=', value: 'm' }] },
      { equal: [], bounds: [{ op: '>', value: 3 }] },
    ]);
  });

  it('sends one tuple relation per bound when the bounded columns sort one way, and still covers exactly the range', () => {
    fc.assert(
      fc.property(fc.tuple(order, order, order), bound, bound, (orders, lower, upper) => {
        const columns = key(orders);
        const restrictions = cqlRestrictions(columns, { lower, upper });
        const got = restrictions.flatMap((r) => ('tuple' in r ? evaluateTuple(orders, r) : evaluate(orders, r)));
        expect(got).toEqual(tuplesBetween(orders, TUPLES, lower, upper));
        const named = Math.max(lower?.values.length ?? 0, upper?.values.length ?? 0);
        // One statement unless the bounded columns mix ASC and DESC.
        if (new Set(orders.slice(0, named)).size <= 1) expect(restrictions.length).toBeLessThanOrEqual(1);
      }),
      { numRuns: 3_000 },
    );
  });

  it('turns "after (3, \'m\', 0)" on an all-DESC key into one tuple relation, and splits it on a mixed key', () => {
    const lower = { values: [3, 'm', 0], inclusive: false };
    expect(cqlRestrictions(key(['DESC', 'DESC', 'DESC']), { lower })).toEqual([{ tuple: [{ op: '<', values: [3, 'm', 0] }] }]);
    expect(cqlRestrictions(key(['ASC', 'ASC', 'ASC']), { lower })).toEqual([{ tuple: [{ op: '>', values: [3, 'm', 0] }] }]);
    expect(cqlRestrictions(key(['DESC', 'ASC', 'DESC']), { lower })).toEqual([
      { equal: [3, 'm'], bounds: [{ op: '<', value: 0 }] },
      { equal: [3], bounds: [{ op: '>', value: 'm' }] },
      { equal: [], bounds: [{ op: '<', value: 3 }] },
    ]);
  });
});
