/**
 * The reference model of one page: computed from the data alone, with exact flags.
 * Flags say whether rows exist before the first edge and after the last one; on an
 * empty page, on either side of the cursor's position.
 */
export interface ModelPage<T> {
  readonly nodes: T[];
  readonly hasPreviousPage: boolean;
  readonly hasNextPage: boolean;
}

/** The page `first: n, after: cursor` (forward) or `last: n, before: cursor` (backward). */
export function modelPage<T>(
  all: readonly T[],
  compare: (a: T, b: T) => number,
  direction: 'forward' | 'backward',
  n: number,
  cursor: T | undefined,
): ModelPage<T> {
  const keys = [...all].sort(compare);
  const forward = direction === 'forward';
  const candidates = cursor === undefined ? keys : keys.filter((k) => (forward ? compare(k, cursor) > 0 : compare(k, cursor) < 0));
  const nodes = forward ? candidates.slice(0, n) : candidates.slice(Math.max(0, candidates.length - n));
  const first = nodes[0];
  const last = nodes[nodes.length - 1];
  if (first !== undefined && last !== undefined) {
    return {
      nodes,
      hasPreviousPage: keys.some((k) => compare(k, first) < 0),
      hasNextPage: keys.some((k) => compare(k, last) > 0),
    };
  }
  if (cursor === undefined) {
    return { nodes, hasPreviousPage: !forward && keys.length > 0, hasNextPage: forward && keys.length > 0 };
  }
  return forward
    ? { nodes, hasPreviousPage: keys.some((k) => compare(k, cursor) <= 0), hasNextPage: keys.some((k) => compare(k, cursor) > 0) }
    : { nodes, hasPreviousPage: keys.some((k) => compare(k, cursor) < 0), hasNextPage: keys.some((k) => compare(k, cursor) >= 0) };
}
