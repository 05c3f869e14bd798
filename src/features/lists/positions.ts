/**
 * Positions in a hand-ordered list: `(weight, seq)`, then the item id (seed 002's
 * "(weight, seq, id)"). A new position is chosen strictly between two neighbours:
 * midway in weight when there is room, else midway in seq under the lower weight.
 */
import { DomainError } from '../../errors.js';

/** A position: compared by weight, then seq (then the item id breaks ties). */
export interface Position {
  readonly weight: bigint;
  readonly seq: bigint;
}

/** Room left between appended items: ~4 billion, so midpoints go 32 levels deep. */
export const WEIGHT_GAP = 1n << 32n;

/** Compare two positions. */
export function comparePositions(a: Position, b: Position): number {
  if (a.weight !== b.weight) return a.weight < b.weight ? -1 : 1;
  if (a.seq !== b.seq) return a.seq < b.seq ? -1 : 1;
  return 0;
}

/**
 * A position strictly after `before` and strictly before `after` (either may be
 * absent: the start or the end of the list). `now` (µs) is the seq when any will do.
 */
export function positionBetween(before: Position | undefined, after: Position | undefined, now: bigint): Position {
  if (!before && !after) return { weight: 0n, seq: now };
  if (!before) return { weight: after!.weight - WEIGHT_GAP, seq: now };
  if (!after) return { weight: before.weight + WEIGHT_GAP, seq: now };
  const gap = after.weight - before.weight;
  if (gap >= 2n) return { weight: before.weight + gap / 2n, seq: now };
  if (gap === 1n) return { weight: before.weight, seq: now > before.seq ? now : before.seq + 1n };
  const seqGap = after.seq - before.seq;
  if (seqGap >= 2n) return { weight: before.weight, seq: before.seq + seqGap / 2n };
  throw new DomainError('CONFLICT', 'no room left between these two items; move one of them first, then retry');
}

/**
 * A gap narrower than this (in weight) is crowded: a move that lands in one asks the
 * applier to rebalance around it, while 12 more halvings (and the seq) are still left.
 */
export const CROWDED_GAP = 1n << 12n;

/** The least spacing a rebalance leaves between the items it moves. */
export const REBALANCED_GAP = 1n << 20n;

/** Whether `to`, placed between `before` and `after`, sits in a crowded gap. */
export function isCrowded(before: Position | undefined, to: Position, after: Position | undefined): boolean {
  const narrow = (lo: Position, hi: Position) => hi.weight - lo.weight < CROWDED_GAP;
  return (before !== undefined && narrow(before, to)) || (after !== undefined && narrow(to, after));
}

/**
 * New positions for a run of `count` consecutive items strictly between `lo` and `hi`
 * (either absent: the start or the end of the list), evenly spaced; null when the gap
 * cannot hold them REBALANCED_GAP apart.
 */
export function spreadBetween(lo: Position | undefined, hi: Position | undefined, count: number, now: bigint): Position[] | null {
  const n = BigInt(count);
  let first: bigint;
  let step: bigint;
  if (lo && hi) {
    step = (hi.weight - lo.weight) / (n + 1n);
    if (step < REBALANCED_GAP) return null;
    first = lo.weight + step;
  } else {
    step = WEIGHT_GAP;
    first = lo ? lo.weight + step : hi ? hi.weight - n * step : 0n;
  }
  return Array.from({ length: count }, (_, i) => ({ weight: first + BigInt(i) * step, seq: now }));
}
