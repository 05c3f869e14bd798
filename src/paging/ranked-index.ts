/**
 * Jumping to a position (`offset`) without reading the edges before it: a counted
 * index read top-down, as FoundationDB's RankedSet reads its levels.
 *
 * Every edge has a rank: a 60-bit number ascending in connection order (a `RankOrder`;
 * edges of one rank are told apart by the source itself). The index holds, for each of
 * a few levels, how many edges there are per rank prefix: level 0 counts per top 12
 * bits, each further level splits a bucket in 2^8, down to buckets of 256 ranks (the
 * leaves): 6 levels. The counts are kept by the counts' verifier from settled changes
 * (counts/count-ranks.ts); this file only reads them.
 *
 * - select (the edge at position p): read level 0's buckets, walk them summing counts
 *   until the one holding p, read its children, and so on: one read per level, then
 *   one slice from the leaf's first possible key, skipping the few edges of the leaf
 *   before p;
 * - rank (how many edges lie at or before a cursor): the cursor's rank names its
 *   bucket at every level, so every level's sibling buckets and the leaf's edges up to
 *   the cursor are read at once, in one wave.
 * A page at any offset therefore costs 1 + LEVELS + 1 waves of reads (one less without a
 * cursor), whatever the offset: 8 at most. Wider levels would cost fewer waves but read
 * more bucket rows each (2^10 children a level read 2-3x slower pages where posts are
 * dense). Without an index, `readingPositions` reads the edges
 * being skipped, a chunk at a time.
 */
import { ticksOfTimeuuid, timeuuidBoundOfTicks } from '../store/timeuuid.js';
import type { CursorKey, Direction, OrderedSource, PagePosition, PositionIndex } from './types.js';

/** How many bits a rank has. */
export const RANK_BITS = 60;

/** The highest rank. */
const RANK_MAX = (1n << BigInt(RANK_BITS)) - 1n;

/** The shift of each level's prefix (`rank >> shift`), from the top level to the leaves. */
export const RANK_LEVEL_SHIFTS: readonly number[] = [48, 40, 32, 24, 16, 8];

/** The bucket of `rank` at every level, top level first. */
export function rankPrefixes(rank: bigint): bigint[] {
  return RANK_LEVEL_SHIFTS.map((shift) => rank >> BigInt(shift));
}

/** The range of child prefixes of bucket `parent` (at `level - 1`) at `level`. */
export function childPrefixRange(level: number, parent: bigint): { lowest: bigint; highest: bigint } {
  const width = BigInt(RANK_LEVEL_SHIFTS[level - 1]! - RANK_LEVEL_SHIFTS[level]!);
  return { lowest: parent << width, highest: ((parent + 1n) << width) - 1n };
}

/** How ranks map to a connection's keys. */
export interface RankOrder {
  /** The rank of a key: 0 to 2^60 - 1, never decreasing in connection order. */
  rankOf(key: CursorKey): bigint;
  /**
   * A key that a read in `direction` from it (inclusive) starts exactly at the first key
   * of rank `rank` or beyond: before every key of that rank in that direction, and
   * after every key of the ranks before it.
   */
  edgeKey(rank: bigint, direction: Direction): CursorKey;
}

/** A bucket of the index: its prefix at its level, and how many edges it holds. */
export interface RankBucket {
  readonly prefix: bigint;
  readonly count: number;
}

/** Options of `rankedIndex`. */
export interface RankedIndexOptions {
  readonly order: RankOrder;
  /**
   * The buckets of `level` under `parent` (every bucket of level 0 when `parent` is
   * undefined), in ascending prefix order. One read.
   */
  buckets(level: number, parent: bigint | undefined): Promise<RankBucket[]>;
}

/** Rows read per call while walking a connection's edges. */
const READ_CHUNK = 1_000;

/** Rows read per call while counting a leaf's edges up to a cursor (a leaf holds few). */
const LEAF_CHUNK = 64;

/**
 * Up to `count` rows from `from` (inclusive) in `direction`, in reads of at most
 * `chunk` rows, each continuing from the last row of the one before; with `keep`,
 * only the rows before the first it refuses.
 */
export async function readRun<N>(
  source: OrderedSource<N>,
  from: CursorKey | undefined,
  direction: Direction,
  count: number,
  keep: (node: N) => boolean = () => true,
  chunk = READ_CHUNK,
): Promise<N[]> {
  const out: N[] = [];
  let start = from;
  let continuing = false;
  while (out.length < count) {
    const ask = Math.min(chunk, count - out.length) + (continuing ? 1 : 0);
    let batch = await source.read(start, direction, ask);
    const short = batch.length < ask;
    if (continuing && batch.length > 0 && source.compare(source.keyOf(batch[0]!), start!) === 0) batch = batch.slice(1);
    const refused = batch.findIndex((node) => !keep(node));
    out.push(...(refused < 0 ? batch : batch.slice(0, refused)));
    if (short || refused >= 0 || batch.length === 0) break;
    start = source.keyOf(batch[batch.length - 1]!);
    continuing = true;
  }
  return out.slice(0, count);
}

/**
 * Positions found by reading the edges skipped, READ_CHUNK at a time: for a connection
 * without a counted index. Its cost grows with the offset.
 */
export const readingPositions: PositionIndex = {
  async locate<N>(source: OrderedSource<N>, from: CursorKey | undefined, direction: Direction, offset: number): Promise<PagePosition | null> {
    const rows = await readRun(source, from, direction, offset + (from ? 2 : 1));
    // The cursor's own row, when it still exists, is not one of the edges after it.
    const own = from !== undefined && rows.length > 0 && source.compare(source.keyOf(rows[0]!), from) === 0 ? 1 : 0;
    const row = rows[own + offset];
    return row === undefined ? null : { key: source.keyOf(row), skip: 0 };
  },
};

/** Rank and select over a counted index (see the file comment). */
export function rankedIndex(options: RankedIndexOptions): PositionIndex {
  const { order } = options;
  const leafShift = BigInt(RANK_LEVEL_SHIFTS[RANK_LEVEL_SHIFTS.length - 1]!);
  // The edge of leaf `prefix` a read in `direction` starts from.
  const leafEdge = (prefix: bigint, direction: Direction) =>
    order.edgeKey(direction === 'forward' ? prefix << leafShift : ((prefix + 1n) << leafShift) - 1n, direction);

  return {
    async locate<N>(source: OrderedSource<N>, from: CursorKey | undefined, direction: Direction, offset: number): Promise<PagePosition | null> {
      // Buckets read once per page: a select under the cursor's own buckets reuses them.
      const read = new Map<string, Promise<RankBucket[]>>();
      const buckets = (level: number, parent: bigint | undefined): Promise<RankBucket[]> => {
        const key = `${level}:${parent ?? ''}`;
        let found = read.get(key);
        if (!found) read.set(key, (found = options.buckets(level, parent)));
        return found;
      };
      const inOrder = async (level: number, parent: bigint | undefined) => {
        const list = await buckets(level, parent);
        return direction === 'forward' ? list : [...list].reverse();
      };

      // Rank: the edges at or before `from`, every level's siblings and the leaf at once.
      let position = offset;
      if (from !== undefined) {
        const prefixes = rankPrefixes(order.rankOf(from));
        const sign = direction === 'forward' ? 1 : -1;
        const leaf = prefixes[prefixes.length - 1]!;
        const [levels, inLeaf] = await Promise.all([
          Promise.all(prefixes.map((_, level) => buckets(level, level === 0 ? undefined : prefixes[level - 1]))),
          readRun(source, leafEdge(leaf, direction), direction, Number.MAX_SAFE_INTEGER, (node) => sign * source.compare(source.keyOf(node), from) <= 0, LEAF_CHUNK),
        ]);
        levels.forEach((list, level) => {
          for (const b of list) if (sign * (b.prefix < prefixes[level]! ? -1 : b.prefix > prefixes[level]! ? 1 : 0) < 0) position += b.count;
        });
        position += inLeaf.length;
      }

      // Select: down the levels to the leaf holding `position`.
      let remaining = position;
      let parent: bigint | undefined;
      for (let level = 0; level < RANK_LEVEL_SHIFTS.length; level++) {
        const holding = (await inOrder(level, parent)).find((b) => {
          if (remaining < b.count) return true;
          remaining -= b.count;
          return false;
        });
        if (!holding) return null;
        parent = holding.prefix;
      }
      return { key: leafEdge(parent!, direction), skip: remaining };
    },
  };
}

/**
 * The ranks of a connection ordered by one timeuuid, newest first (a timeline): the
 * rank counts down from the newest possible tick, so it ascends in connection order.
 */
export const timeuuidDescending: RankOrder = {
  rankOf: (key) => RANK_MAX - ticksOfTimeuuid(key[0] as string),
  // Newest first: a forward read starts at the tick's highest timeuuid, a backward one at its lowest.
  edgeKey: (rank, direction) => [timeuuidBoundOfTicks(RANK_MAX - rank, direction === 'forward' ? 'highest' : 'lowest')],
};
