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

/**
 * The page `offset` edges on (PageArgs.offset): forward, edges `start` to `start + n`
 * where `start` is the number of edges at or before the cursor (0 without one) plus the
 * offset; backward, the same counted from the end. Flags: edges exist before the
 * page's start, and beyond its end.
 */
export function modelOffsetPage<T>(
  all: readonly T[],
  compare: (a: T, b: T) => number,
  direction: 'forward' | 'backward',
  n: number,
  offset: number,
  cursor: T | undefined,
): ModelPage<T> {
  const forward = direction === 'forward';
  const sorted = [...all].sort(compare);
  const inDirection = forward ? sorted : sorted.reverse();
  const through = cursor === undefined ? 0 : inDirection.filter((k) => (forward ? compare(k, cursor) <= 0 : compare(k, cursor) >= 0)).length;
  const start = through + offset;
  const taken = inDirection.slice(start, start + n);
  const behind = Math.min(start, inDirection.length) > 0;
  const ahead = inDirection.length > start + n;
  return forward
    ? { nodes: taken, hasPreviousPage: behind, hasNextPage: ahead }
    : { nodes: taken.reverse(), hasPreviousPage: ahead, hasNextPage: behind };
}
