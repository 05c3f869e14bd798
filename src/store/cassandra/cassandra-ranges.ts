/**
 * Clustering ranges in CQL: splitting clustering-order bounds into single-range
 * restrictions. The SQLite adapter's counterpart is `sqlite-keys.ts`.
 *
 * CQL tuple relations such as `(a, b) > (?, ?)` compare values, not clustering order,
 * so on mixed ASC/DESC keys "rows after this key" is not one relation. It is a union,
 * in clustering order, of restrictions of the form
 *   c1 = ? AND … AND c(d-1) = ? AND c(d) <op> ? [AND c(d) <op> ?]
 * each of which Cassandra serves as one contiguous slice (DESIGN.md, semantic point 6).
 */
import type { ClusteringRange } from '../port.js';
import type { ClusteringOrder, CqlType, CqlValue } from '../table.js';
import { compareValues } from '../values.js';

/** One clustering column as the splitter needs it. */
export interface RangeColumn {
  readonly column: string;
  readonly type: CqlType;
  readonly order: ClusteringOrder;
}

/** A value bound as CQL states it: `>`/`>=` or `<`/`<=` on one column. */
export interface ValueBound {
  readonly op: '>' | '>=' | '<' | '<=';
  readonly value: CqlValue;
}

/** One single-range restriction: equalities on a prefix, then 0-2 bounds on the next column. */
export interface SingleRange {
  readonly equal: readonly CqlValue[];
  readonly bounds: readonly ValueBound[];
}

interface OrderBound {
  readonly value: CqlValue;
  readonly inclusive: boolean;
}

/**
 * Restrictions covering exactly the rows between `lower` and `upper` (clustering
 * order), listed in clustering order. An empty list means no row can match.
 */
export function splitClusteringRange(columns: readonly RangeColumn[], { lower, upper }: ClusteringRange = {}): SingleRange[] {
  return split(columns, [], lower?.values, lower?.inclusive ?? true, upper?.values, upper?.inclusive ?? true);
}

function split(
  columns: readonly RangeColumn[],
  prefix: CqlValue[],
  lo: readonly CqlValue[] | undefined,
  loInclusive: boolean,
  hi: readonly CqlValue[] | undefined,
  hiInclusive: boolean,
): SingleRange[] {
  // A bound consumed to its end covers the whole prefix if inclusive, nothing if not.
  if (lo && lo.length === 0) {
    if (!loInclusive) return [];
    lo = undefined;
  }
  if (hi && hi.length === 0) {
    if (!hiInclusive) return [];
    hi = undefined;
  }
  if (!lo && !hi) return [{ equal: prefix, bounds: [] }];
  const d = prefix.length;
  const col = columns[d]!;
  const cmp = (x: CqlValue, y: CqlValue) => {
    const c = compareValues(col.type, x, y);
    return col.order === 'DESC' ? -c : c;
  };
  if (lo && hi) {
    const c = cmp(lo[0]!, hi[0]!);
    if (c > 0) return [];
    if (c === 0) return split(columns, [...prefix, lo[0]!], lo.slice(1), loInclusive, hi.slice(1), hiInclusive);
  }
  const out: SingleRange[] = [];
  // A bound whose rest is the first (or last) key there is, inclusive, takes in every row
  // sharing its value here (the edge of a rank: `RankOrder.edgeKey`): one range on this
  // column instead of two, which Cassandra serves one after the other.
  const loWhole = lo !== undefined && lo.length > 1 && loInclusive && atEnd(columns, d + 1, lo.slice(1), 'first');
  const hiWhole = hi !== undefined && hi.length > 1 && hiInclusive && atEnd(columns, d + 1, hi.slice(1), 'last');
  // Rows sharing the lower bound's value here, after the rest of that bound.
  if (lo && lo.length > 1 && !loWhole) out.push(...split(columns, [...prefix, lo[0]!], lo.slice(1), loInclusive, undefined, true));
  const from: OrderBound | undefined = lo ? { value: lo[0]!, inclusive: loWhole || (lo.length === 1 && loInclusive) } : undefined;
  const to: OrderBound | undefined = hi ? { value: hi[0]!, inclusive: hiWhole || (hi.length === 1 && hiInclusive) } : undefined;
  out.push({ equal: prefix, bounds: valueBounds(col.order, from, to) });
  // Rows sharing the upper bound's value here, before the rest of that bound.
  if (hi && hi.length > 1 && !hiWhole) out.push(...split(columns, [...prefix, hi[0]!], undefined, true, hi.slice(1), hiInclusive));
  return out;
}

/** The lowest and highest value of each type that has both and states them simply (the others are never taken as an end). */
const TYPE_ENDS: Partial<Record<CqlType, readonly [CqlValue, CqlValue | undefined]>> = {
  // UUIDType: the version first, then unsigned bytes (values.ts, `encodeSortable`).
  uuid: ['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff'],
  int: [-(2 ** 31), 2 ** 31 - 1],
  bigint: [-(1n << 63n), (1n << 63n) - 1n],
  boolean: [false, true],
  text: ['', undefined],
};

/** Whether `values`, from column `start` on, are the first (or last) key in clustering order: nothing sorts before (after) them. */
function atEnd(columns: readonly RangeColumn[], start: number, values: readonly CqlValue[], end: 'first' | 'last'): boolean {
  return values.every((value, i) => {
    const { type, order } = columns[start + i]!;
    const ends = TYPE_ENDS[type];
    // The first key of an ASC column is its type's lowest value, of a DESC one its highest.
    const wanted = ends?.[(end === 'first') === (order === 'ASC') ? 0 : 1];
    return wanted !== undefined && value !== null && compareValues(type, value, wanted) === 0;
  });
}

/** Clustering-order bounds on one column as value operators. */
function valueBounds(order: ClusteringOrder, from?: OrderBound, to?: OrderBound): ValueBound[] {
  const bounds: ValueBound[] = [];
  if (from) bounds.push({ op: lowerOp(order, from.inclusive), value: from.value });
  if (to) bounds.push({ op: upperOp(order, to.inclusive), value: to.value });
  return bounds;
}

/** The value operator of a lower bound in clustering order (DESC flips it). */
function lowerOp(order: ClusteringOrder, inclusive: boolean): ValueBound['op'] {
  if (order === 'ASC') return inclusive ? '>=' : '>';
  return inclusive ? '<=' : '<';
}

/** The value operator of an upper bound in clustering order (DESC flips it). */
function upperOp(order: ClusteringOrder, inclusive: boolean): ValueBound['op'] {
  if (order === 'ASC') return inclusive ? '<=' : '<';
  return inclusive ? '>=' : '>';
}

/** One multi-column bound: `(c1, …, ck) <op> (?, …, ?)` on a prefix of the clustering columns. */
export interface TupleBound {
  readonly op: ValueBound['op'];
  readonly values: readonly CqlValue[];
}

/** A range stated as one tuple relation per bound, served as one slice. */
export interface TupleRange {
  readonly tuple: readonly TupleBound[];
}

/**
 * The fewest restrictions covering a range, in clustering order: one tuple relation
 * per bound when every clustering column the bounds name sorts the same way (tuple
 * comparison then equals clustering order, or its exact reverse), the split into
 * single ranges otherwise (DESIGN.md, semantic point 6). Empty when no row can match.
 */
export function cqlRestrictions(columns: readonly RangeColumn[], range: ClusteringRange = {}): Array<SingleRange | TupleRange> {
  const split = splitClusteringRange(columns, range);
  if (split.length <= 1) return split;
  const { lower, upper } = range;
  const named = columns.slice(0, Math.max(lower?.values.length ?? 0, upper?.values.length ?? 0));
  if (new Set(named.map((c) => c.order)).size > 1) return split;
  const order = named[0]!.order;
  const tuple: TupleBound[] = [];
  if (lower && lower.values.length > 0) tuple.push({ op: lowerOp(order, lower.inclusive), values: lower.values });
  if (upper && upper.values.length > 0) tuple.push({ op: upperOp(order, upper.inclusive), values: upper.values });
  return [{ tuple }];
}
