/**
 * A reference model of clustering order for tuples of (int, text, int), written
 * independently of the adapters' byte encoding: plain comparisons, DESC flips them.
 */
import type { ClusteringBound } from '../../src/store/port.js';
import type { ClusteringOrder, CqlValue } from '../../src/store/table.js';

/** Value order of one column: text by UTF-8 bytes, the others numerically. */
export function compareColumnValues(i: number, x: CqlValue, y: CqlValue): number {
  if (i === 1) return Buffer.compare(Buffer.from(x as string, 'utf8'), Buffer.from(y as string, 'utf8'));
  return (x as number) - (y as number);
}

/** Compare a row's clustering tuple with a (prefix) tuple, in clustering order. */
export function compareInClusteringOrder(orders: readonly ClusteringOrder[], row: readonly CqlValue[], prefix: readonly CqlValue[]): number {
  for (let i = 0; i < prefix.length; i++) {
    const c = compareColumnValues(i, row[i]!, prefix[i]!);
    if (c !== 0) return orders[i] === 'DESC' ? -c : c;
  }
  return 0;
}

/** The tuples between two clustering bounds, sorted in clustering order. */
export function tuplesBetween(
  orders: readonly ClusteringOrder[],
  tuples: readonly CqlValue[][],
  lower?: ClusteringBound,
  upper?: ClusteringBound,
): CqlValue[][] {
  return tuples
    .filter((t) => {
      if (lower) {
        const c = compareInClusteringOrder(orders, t, lower.values);
        if (c < 0 || (c === 0 && !lower.inclusive)) return false;
      }
      if (upper) {
        const c = compareInClusteringOrder(orders, t, upper.values);
        if (c > 0 || (c === 0 && !upper.inclusive)) return false;
      }
      return true;
    })
    .sort((x, y) => compareInClusteringOrder(orders, x, y));
}
