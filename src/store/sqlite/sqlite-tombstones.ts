/**
 * Tombstones in SQLite, kept as Cassandra keeps range tombstones in memory
 * (`RangeTombstoneList`): per partition, a list of disjoint `ck` ranges, each with the
 * deletion's timestamp and local deletion time. A new tombstone is merged in: where it
 * overlaps a stronger one, the stronger one stays; where it is stronger, it replaces
 * the old one; neighbours with the same timestamp join. So
 *
 * - a tombstone covered by another of the same or a higher timestamp leaves no trace
 *   (a growing low-water-mark delete `[start, mark_k]` stays ONE range, not k);
 * - the tombstone covering a row is the one range starting at or before the row's `ck`:
 *   one index seek on `(pk, lo)`, whatever the number of tombstones in the partition.
 */

/** One stored tombstone: it covers `lo <= ck < hi` (hi null: to the end of the partition). */
export interface Tombstone {
  readonly lo: Buffer;
  readonly hi: Buffer | null;
  /** Write timestamp (µs): hides every cell written at or below it. */
  readonly ts: bigint;
  /** Local deletion time (epoch seconds), as Cassandra's `localDeletionTime`: grace runs from here. */
  readonly ldt: number;
}

/** The lowest `ck` (an empty byte string sorts first): where an unbounded range starts. */
export const PARTITION_START = Buffer.alloc(0);

/** Compare two range ends, null being past every byte string. */
function compareEnds(a: Buffer | null, b: Buffer | null): number {
  if (a === null) return b === null ? 0 : 1;
  if (b === null) return -1;
  return Buffer.compare(a, b);
}

/** Cassandra's rule between two deletions: the higher timestamp, then the later local deletion time. */
function stronger(a: Tombstone, b: Tombstone): Tombstone {
  if (a.ts !== b.ts) return a.ts > b.ts ? a : b;
  return a.ldt >= b.ldt ? a : b;
}

/**
 * Merge `added` into `existing` (disjoint ranges, the ones overlapping or touching
 * `added`): the disjoint ranges that now cover the same span, strongest deletion per
 * point, neighbours with the same timestamp joined (keeping the later deletion time, so
 * nothing is purged early).
 */
export function mergeTombstones(existing: readonly Tombstone[], added: Tombstone): Tombstone[] {
  const all = [...existing, added];
  const points = all.flatMap((t) => (t.hi === null ? [t.lo] : [t.lo, t.hi]));
  points.sort(Buffer.compare);
  const cuts = points.filter((p, i) => i === 0 || !p.equals(points[i - 1]!));
  const unbounded = all.some((t) => t.hi === null);
  const out: Tombstone[] = [];
  for (let i = 0; i < cuts.length; i++) {
    const lo = cuts[i]!;
    const hi = i + 1 < cuts.length ? cuts[i + 1]! : null;
    if (hi === null && !unbounded) break;
    let winner: Tombstone | null = null;
    for (const t of all) {
      const covers = Buffer.compare(t.lo, lo) <= 0 && compareEnds(t.hi, hi) >= 0;
      if (covers) winner = winner ? stronger(winner, t) : t;
    }
    if (!winner) continue;
    const last = out[out.length - 1];
    if (last && last.hi !== null && last.hi.equals(lo) && last.ts === winner.ts) {
      out[out.length - 1] = { lo: last.lo, hi, ts: last.ts, ldt: Math.max(last.ldt, winner.ldt) };
    } else {
      out.push({ lo, hi, ts: winner.ts, ldt: winner.ldt });
    }
  }
  return out;
}

/** True when two tombstone lists are the same ranges with the same deletions. */
export function sameTombstones(a: readonly Tombstone[], b: readonly Tombstone[]): boolean {
  return (
    a.length === b.length &&
    a.every((t, i) => {
      const u = b[i]!;
      return t.lo.equals(u.lo) && compareEnds(t.hi, u.hi) === 0 && t.ts === u.ts && t.ldt === u.ldt;
    })
  );
}
