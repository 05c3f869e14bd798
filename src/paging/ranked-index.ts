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
 *   until the one holding p, read its children, and so on, one read per level, until a
 *   leaf or a bucket of at most SMALL_BUCKET edges; then one slice from that bucket's
 *   first possible key, skipping its few edges before p;
 * - rank (how many edges lie at or before a cursor): the cursor's rank names its
 *   bucket at every level, so every level's sibling buckets and the leaf's edges up to
 *   the cursor (as stored, where a source reads them so: `OrderedSource.readStored`)
 *   are read at once, in one wave; or, where a level's buckets hold few
 *   edges (`RankOrder.cursorLevel`: a timeline's level 4, random ranks' level 1), the
 *   levels down to it and the edges of the cursor's bucket there up to it (the levels
 *   below in a second wave when they are more than SMALL_BUCKET); beside the index's
 *   top, only that level's list, the ones above coming with the top.
 * The buckets of one parent are one list, one row of the store (count-ranks.ts), so a
 * level costs one row to read however many buckets it has. A page at any offset
 * therefore costs at most 1 + LEVELS + 1 waves of reads (one less without a cursor): 8
 * at most. Fewer in practice: the index's first lists (`TOP_LISTS`, level 0 first;
 * level 0's alone where ranks are random) are read in one slice, and every level they hold whole comes with them; below that, a
 * bucket of SMALL_BUCKET edges is reached in a list or two wherever edges are spread
 * over time (a first visit is 3 waves: the top, one list, the page); where a level is
 * dense, or ranks random, the page is read on a guess beside the list under the
 * position's bucket (a steady rate puts it in a child one can compute, random ranks
 * within a binomial deviation of it: `guessAt`), and when the list confirms that the
 * rows read hold the page, its wave is saved (2 waves); and a process keeps the lists
 * it read across requests (`RankCache`), checked against the index's settlement read
 * beside the page, so a page whose lists are kept is one wave. Where a page knows
 * which lists it needs before reading any (a cursor's; those the index's shape, as a
 * process last read it, puts the position under: `likelyLists`), they are one read of
 * several rows with level 0's (`several`), and the page is read from its position
 * beside nothing: 2 waves from a cursor or an end. Without an index,
 * `readingPositions` reads the edges being skipped, a chunk at a time.
 */
import { ticksOfTimeuuid, timeuuidBoundOfTicks } from '../store/timeuuid.js';
import type { CursorKey, Direction, Located, OrderedSource, PagePosition, PositionIndex } from './types.js';

/** How many bits a rank has. */
export const RANK_BITS = 60;

/** The highest rank. */
const RANK_MAX = (1n << BigInt(RANK_BITS)) - 1n;

/** The shift of each level's prefix (`rank >> shift`), from the top level to the leaves. */
export const RANK_LEVEL_SHIFTS: readonly number[] = [48, 40, 32, 24, 16, 8];

/** How many bits a bucket of `level` adds to its parent's prefix: log2 of the children a parent has. */
export function levelWidth(level: number): number {
  return level === 0 ? RANK_BITS - RANK_LEVEL_SHIFTS[0]! : RANK_LEVEL_SHIFTS[level - 1]! - RANK_LEVEL_SHIFTS[level]!;
}

/** `RANK_LEVEL_SHIFTS` as bigints, made once (a page ranks a cursor twice). */
const RANK_LEVEL_SHIFTS_BIG: readonly bigint[] = RANK_LEVEL_SHIFTS.map(BigInt);

/** The bucket of `rank` at every level, top level first. */
export function rankPrefixes(rank: bigint): bigint[] {
  const out = new Array<bigint>(RANK_LEVEL_SHIFTS_BIG.length);
  for (let level = 0; level < out.length; level++) out[level] = rank >> RANK_LEVEL_SHIFTS_BIG[level]!;
  return out;
}

/** The range of child prefixes of bucket `parent` (at `level - 1`) at `level`. */
export function childPrefixRange(level: number, parent: bigint): { lowest: bigint; highest: bigint } {
  const width = BigInt(levelWidth(level));
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
  /**
   * Set where ranks are drawn at random, uniformly (random ids): a bucket's edges then
   * lie where an even spread puts them give or take a binomial deviation, and a walk
   * reads the page on a guess that wide beside a list (see `guessAt`).
   */
  readonly random?: boolean;
  /**
   * The level whose bucket a cursor's rank reads the edges of, up to the cursor, rather
   * than read the lists below it: one where a bucket holds few edges in practice (at
   * most SMALL_BUCKET before a cursor, else the levels below come a wave later).
   * Default: the leaves; where ranks are `random`, 1.
   */
  readonly cursorLevel?: number;
}

/** A bucket of the index: its prefix at its level, and how many edges it holds. */
export interface RankBucket {
  readonly prefix: bigint;
  readonly count: number;
}

/**
 * The buckets of one list in prefix order, read by position: what a walk reads. A packed
 * list (count-ranks.ts) is decoded only as far as it is read, with no object per bucket
 * (a walk reads a list up to its cursor's or its position's bucket, and unpacking whole
 * lists of 256 buckets into objects was most of a first visit's JavaScript); a list of
 * `RankBucket`s is read through `bucketList`.
 */
export interface BucketList {
  /** How many buckets it holds (a packed list decodes itself whole to tell). */
  readonly length: number;
  /** Whether it holds a bucket at `i` (a packed list decodes itself up to `i` only). */
  has(i: number): boolean;
  /** What it weighs where it is kept (`RankCache`), in bucket rows: an estimate where it is not decoded yet. */
  readonly rows: number;
  prefix(i: number): bigint;
  count(i: number): number;
  /** How many of its buckets lie below `prefix`: the position of the first at or above it. */
  below(prefix: bigint): number;
  /**
   * The sum of the counts of its buckets below `prefix` (a forward rank's): a packed list
   * read for the first time sums them in its text, with nothing decoded to keep.
   */
  countBelow(prefix: bigint): number;
  /**
   * The bucket holding the edge `remaining` edges into the list, in its order (a select's):
   * the first whose count the running sum passes; null past its last. A packed list read
   * for the first time finds it in its text, with nothing decoded to keep.
   */
  select(remaining: number): Selected | null;
}

/** The bucket a select stops at in a list (`BucketList.select`). */
export interface Selected {
  /** Its position in the list, its prefix and its count. */
  readonly at: number;
  readonly prefix: bigint;
  readonly count: number;
  /** The edges of it before the one sought. */
  readonly remaining: number;
  /** The last bucket before it that holds edges (a count above 0): its prefix, undefined where none does. */
  readonly beforePrefix: bigint | undefined;
  readonly beforeCount: number;
}

/** `BucketList.countBelow` read by position: what a list decoded (or not packed) answers. */
export function countBelowIn(list: BucketList, prefix: bigint): number {
  return countsOf(list, 0, list.below(prefix));
}

/** `BucketList.select` read by position: what a list decoded (or not packed, or reversed) answers. */
export function selectIn(list: BucketList, remaining: number): Selected | null {
  let before = -1;
  for (let at = 0; list.has(at); at++) {
    const count = list.count(at);
    if (remaining < count) {
      const beforePrefix = before >= 0 ? list.prefix(before) : undefined;
      return { at, prefix: list.prefix(at), count, remaining, beforePrefix, beforeCount: before >= 0 ? list.count(before) : 0 };
    }
    remaining -= count;
    if (count > 0) before = at;
  }
  return null;
}

/** A list of buckets as an index's reads give it: `RankBucket`s in prefix order, or a `BucketList`. */
export type Buckets = readonly RankBucket[] | BucketList;

/** `buckets` as a `BucketList`. */
export function bucketList(buckets: Buckets): BucketList {
  if (!Array.isArray(buckets)) return buckets as BucketList;
  const list = buckets as readonly RankBucket[];
  const out: BucketList = {
    length: list.length,
    rows: list.length,
    has: (i) => i < list.length,
    prefix: (i) => list[i]!.prefix,
    count: (i) => list[i]!.count,
    below: (prefix) => {
      let low = 0;
      let high = list.length;
      while (low < high) {
        const mid = (low + high) >>> 1;
        if (list[mid]!.prefix < prefix) low = mid + 1;
        else high = mid;
      }
      return low;
    },
    countBelow: (prefix) => countBelowIn(out, prefix),
    select: (remaining) => selectIn(out, remaining),
  };
  return out;
}

/** The empty list. */
const NO_BUCKETS: BucketList = bucketList([]);

/** The reversed views made of lists (`reversedList`): a kept list is reversed once, not on every backward page. */
const reversedViews = new WeakMap<BucketList, BucketList>();

/**
 * `list` read from its last bucket back (a walk backward), its counts copied once (it is
 * decoded whole to be reversed; a list never changes once read); `below` is not asked of it.
 */
function reversedList(list: BucketList): BucketList {
  const made = reversedViews.get(list);
  if (made) return made;
  const last = list.length - 1;
  const counts = new Array<number>(last + 1);
  for (let i = 0; i <= last; i++) counts[i] = list.count(last - i);
  const reversed: BucketList = {
    length: last + 1,
    rows: list.rows,
    has: (i) => i <= last,
    prefix: (i) => list.prefix(last - i),
    count: (i) => counts[i]!,
    below: () => {
      throw new Error('a reversed bucket list is read by position only');
    },
    countBelow: () => {
      throw new Error('a reversed bucket list is read by position only');
    },
    select: (remaining) => selectIn(reversed, remaining),
  };
  reversedViews.set(list, reversed);
  return reversed;
}

/** The sum of the counts of `list`'s buckets from `from` up to `to` (exclusive). */
function countsOf(list: BucketList, from: number, to: number): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum += list.count(i);
  return sum;
}

/** Options of `rankedIndex`. */
export interface RankedIndexOptions {
  readonly order: RankOrder;
  /**
   * The buckets of `level` under `parent` (every bucket of level 0 when `parent` is
   * undefined), in ascending prefix order. One read.
   */
  buckets(level: number, parent: bigint | undefined): Promise<Buckets>;
  /**
   * The first `limit` lists of the index, in level then parent order (level 0's first).
   * One read. Without it, level 0 is read as the others are.
   */
  top?(limit: number): Promise<IndexTop>;
  /**
   * The lists `wanted` (level 0's among them) in one read, each of them (empty where the
   * index has none), with the settlement where the store keeps it with level 0's list:
   * what a page reads first instead of the top where it knows which lists it needs (a
   * cursor's where ranks are random, and those the index's `IndexShape` puts a position
   * under). Without it, the top, then a read a list.
   */
  several?(wanted: readonly RankListName[]): Promise<IndexTop>;
  /**
   * Keep buckets across requests (see `RankCache`): the process's cache, this index's
   * name in it, and a read of the index's settlement (one call: a token that changes
   * with every settlement that may change a bucket). With `inTop`, the top's read
   * brings the settlement too (`IndexTop.settlement`, the same token, read with the
   * lists it came with): a page that reads the top reads nothing else for it.
   */
  readonly cached?: { readonly cache: RankCache; readonly id: string; settlement(): Promise<string>; readonly inTop?: boolean };
  /**
   * Set where the connection's edges are never removed (a meeting's acceptances are
   * final): a cursor's edge is then always there, so once settled a bucket of its that
   * holds one edge holds the cursor, and a first read that names the cursor's lists down
   * to a level where its bucket likely holds it alone (`loneLevel`) places it without
   * reading its bucket's edges (one call fewer).
   */
  readonly lasting?: boolean;
}

/** Bucket rows a process keeps across requests (`RankCache`): a few MB. */
export const RANK_CACHE_ROWS = 50_000;

/** Indexes whose last settlement read a process remembers (`RankCache`). */
const RANK_CACHE_INDEXES = 10_000;

/**
 * What a process remembers of an index from the last first read of it here
 * (`RankCache.shape`): how many edges it held, and the ranks they spanned as far as the
 * deepest level that read held whole tells (level 0's buckets where it held only level
 * 0's list; the top's whole levels where it was the top). It tells which lists a
 * position likely lies under before any read (`likelyLists`: an even spread of the
 * edges over their ranks, which random ranks and a steady rate give), so the first read
 * brings them; a hint for what to read, never a position: a stale or wrong one costs a
 * read, not exactness.
 */
export interface IndexShape {
  readonly total: number;
  readonly lowest: bigint;
  readonly highest: bigint;
  /** The level whose buckets `lowest` and `highest` come from. */
  readonly level: number;
}

/** The shape of an index from `lists`, a first read that held `whole` levels whole (`IndexShape`); undefined when it holds nothing. */
function shapeOf(lists: readonly RankList[], whole: number): IndexShape | undefined {
  const level = Math.max(0, Math.min(whole, RANK_LEVEL_SHIFTS.length) - 1);
  let total = 0;
  // The first and last lists of `level` that hold a bucket (one pass, no list made).
  let first: BucketList | undefined;
  let last: BucketList | undefined;
  for (const l of lists) {
    if (l.level === 0) total += countsOf(bucketList(l.buckets), 0, l.buckets.length);
    if (l.level !== level) continue;
    const list = bucketList(l.buckets);
    if (!list.has(0)) continue;
    first ??= list;
    last = list;
  }
  if (total <= 0 || !first || !last) return undefined;
  const shift = RANK_LEVEL_SHIFTS_BIG[level]!;
  return { total, lowest: first.prefix(0) << shift, highest: ((last.prefix(last.length - 1) + 1n) << shift) - 1n, level };
}

/**
 * The bucket lists read lately, kept across requests, each under the settlement it was
 * read under; least recently used first out. A list is kept under settlement S only
 * when it was read after a read of the index's settlement gave S (every bucket it
 * holds is then S's value, or a later one's still being written), or alongside such a
 * read made once S was already known here and confirmed by it. A page uses kept lists
 * of S only when its own read of the settlement, made alongside its other reads, gives
 * S back: settlements only move forward, and the buckets change only with them, so
 * the lists are what a read would give. Otherwise it finds its position again from the
 * store. A settled page is therefore as exact as without the cache. Beside the lists,
 * each index's shape (`IndexShape`), a hint for which lists a first read names.
 */
export class RankCache {
  private readonly settlements = new Map<string, string>();
  private readonly shapes = new Map<string, IndexShape>();
  private readonly lists = new Map<string, { readonly token: string; readonly list: BucketList }>();
  private rows = 0;

  constructor(private readonly maxRows = RANK_CACHE_ROWS) {}

  /** The settlement of index `id` last read here, if any. */
  settlement(id: string): string | undefined {
    return this.settlements.get(id);
  }

  /** Remember `token` as the settlement of index `id` just read. */
  settle(id: string, token: string): void {
    this.settlements.delete(id);
    this.settlements.set(id, token);
    if (this.settlements.size > RANK_CACHE_INDEXES) this.settlements.delete(this.settlements.keys().next().value!);
  }

  /** The shape of index `id` when its level-0 list was last read here (`IndexShape`), if known. */
  shape(id: string): IndexShape | undefined {
    return this.shapes.get(id);
  }

  /**
   * Remember the shape of index `id` from a first read of it (`lists`, `whole` levels
   * whole): over a finer one known (the top's, where a later read held only level 0's
   * list) only when its total moved by an eighth.
   */
  noteShape(id: string, lists: readonly RankList[], whole: number): void {
    const shape = shapeOf(lists, whole);
    const old = this.shapes.get(id);
    if (!shape || (old && shape.level < old.level && Math.abs(shape.total - old.total) * 8 <= old.total)) return;
    this.shapes.delete(id);
    this.shapes.set(id, shape);
    if (this.shapes.size > RANK_CACHE_INDEXES) this.shapes.delete(this.shapes.keys().next().value!);
  }

  /** The list of `level` under `parent` of index `id` kept under settlement `token`, if any. */
  get(id: string, token: string, level: number, parent: bigint | undefined): BucketList | undefined {
    // (A cache that holds none, as a process that keeps no list: no name made.)
    if (this.lists.size === 0) return undefined;
    const name = listName(id, level, parent);
    const entry = this.lists.get(name);
    if (entry?.token !== token) return undefined;
    this.lists.delete(name);
    this.lists.set(name, entry);
    return entry.list;
  }

  /** Keep the list of `level` under `parent` of index `id`, read under settlement `token`. */
  put(id: string, token: string, level: number, parent: bigint | undefined, list: BucketList): void {
    // A list heavier than the whole cache is not kept (nor would it stay: it would only
    // push out every other), and then no name is made where the cache holds none.
    const kept = list.rows + 1 <= this.maxRows;
    if (!kept && this.lists.size === 0) return;
    const name = listName(id, level, parent);
    const old = this.lists.get(name);
    if (old) {
      this.rows -= old.list.rows + 1;
      this.lists.delete(name);
    }
    if (!kept) return;
    this.lists.set(name, { token, list });
    this.rows += list.rows + 1;
    for (const [oldest, entry] of this.lists) {
      if (this.rows <= this.maxRows) break;
      this.lists.delete(oldest);
      this.rows -= entry.list.rows + 1;
    }
  }
}

function listName(id: string, level: number, parent: bigint | undefined): string {
  return `${id}\u0000${level}:${parent ?? ''}`;
}

/** A list of the index by its place: the buckets of `level` under `parent` (level 0's: no parent). */
export interface RankListName {
  readonly level: number;
  readonly parent: bigint | undefined;
}

/** The buckets of one level under one parent (level 0's: every bucket, no parent): what the top of an index is read as. */
export interface RankList extends RankListName {
  readonly buckets: Buckets;
}

/**
 * Lists of an index as one read gives them (its top, or the lists a page asked for),
 * and the settlement they were read under where the store keeps it with them.
 */
export interface IndexTop {
  readonly lists: readonly RankList[];
  readonly settlement?: string;
  /**
   * The levels it holds whole (a list of theirs it lacks is empty): absent for the top,
   * every level before its last list's, all of them where it holds fewer lists than
   * asked for.
   */
  readonly whole?: number;
}

/**
 * Lists read at once from the top of an index whose lists are not kept: the upper
 * levels, which hold a list or a few each (one wave instead of one per level), and the
 * first lists of the level below them. Where ranks are random, level 0's list alone
 * (`topListsOf`).
 */
const TOP_LISTS = 12;

/**
 * The lists the top of an index with ranks `order` reads: where ranks are random, level
 * 0's list alone, since each list after it (level 1's, one per level-0 bucket) covers a
 * 256th of the edges, seldom the page's: eleven more rows of a few hundred buckets each
 * that a first visit only unpacks and drops.
 */
function topListsOf(order: RankOrder): number {
  return order.random ? 1 : TOP_LISTS;
}

/**
 * A bucket holding this many edges or fewer is where a walk stops: the page is read
 * from the bucket's first key, skipping the edges before the position (up to this
 * many more rows in the page's own read), rather than reading one more level (a wave).
 */
export const SMALL_BUCKET = 64;

/** Keeps a list a read brought (`RankCache`), as decided when the read started. */
type Keep = (level: number, parent: bigint | undefined, list: BucketList) => void;

/** The top of an index read in one slice: its lists once back, and how many levels they hold whole. */
interface TopOfIndex {
  keeping: Keep;
  lists?: readonly RankList[];
  whole: number;
}

/** The list of `level` under `parent` in the top of an index, if it is known from it (empty where a level it holds whole has none). */
function listIn(top: TopOfIndex, level: number, parent: bigint | undefined): BucketList | undefined {
  const found = top.lists!.find((l) => l.level === level && l.parent === parent);
  return found ? bucketList(found.buckets) : level < top.whole ? NO_BUCKETS : undefined;
}

/** Rows read per call while walking a connection's edges. */
const READ_CHUNK = 1_000;

/** Rows read per call while counting a leaf's edges up to a cursor (a leaf holds few). */
const LEAF_CHUNK = 64;

/**
 * Rows of the first of those reads: a leaf (or a random rank's level-1 bucket) most
 * often holds the cursor among its first few edges, and the row after the cursor ends
 * the count, so a read of 64 rows would mostly bring rows only to drop them.
 */
const LEAF_FIRST = 16;

/**
 * How many of `rows` `keep` keeps, where it keeps a first run of them and refuses every
 * row after (a bound in the rows' order): asked of the last row first (a run most often
 * ends at its bound), else by halves, rather than of every row.
 */
function keptRun<N>(rows: readonly N[], keep: (node: N) => boolean): number {
  if (rows.length === 0 || keep(rows[rows.length - 1]!)) return rows.length;
  let low = 0;
  let high = rows.length - 1;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (keep(rows[mid]!)) low = mid + 1;
    else high = mid;
  }
  return low;
}

/**
 * Up to `count` rows from `from` (inclusive) in `direction`, in reads of at most
 * `chunk` rows (`first` for the first one), each continuing from the last row of the
 * one before; with `keep`, only the rows before the first it refuses (it keeps a first
 * run of the rows in order and refuses every one after: a bound); with `until`, none
 * past that key is wanted (`OrderedSource.read`).
 */
export async function readRun<N>(
  source: OrderedSource<N>,
  from: CursorKey | undefined,
  direction: Direction,
  count: number,
  keep?: (node: N) => boolean,
  chunk = READ_CHUNK,
  first = chunk,
  until?: CursorKey,
): Promise<N[]> {
  const out: N[] = [];
  let start = from;
  let continuing = false;
  while (out.length < count) {
    const ask = Math.min(continuing ? chunk : first, count - out.length) + (continuing ? 1 : 0);
    let batch = await source.read(start, direction, ask, until);
    const short = batch.length < ask;
    if (continuing && batch.length > 0 && source.compare(source.keyOf(batch[0]!), start!) === 0) batch = batch.slice(1);
    const kept = keep ? keptRun(batch, keep) : batch.length;
    const ends = short || kept < batch.length || batch.length === 0;
    // A run one read makes (most are): its rows as read, not copied.
    if (!continuing && (ends || kept >= count)) return kept === batch.length && kept <= count ? batch : batch.slice(0, Math.min(kept, count));
    for (let i = 0; i < kept; i++) out.push(batch[i]!);
    if (ends) break;
    start = source.keyOf(batch[batch.length - 1]!);
    continuing = true;
  }
  return out.length > count ? out.slice(0, count) : out;
}

/** `source` read as stored (`OrderedSource.readStored`) where it can be: what a cursor's rank counts. */
function storedRowsOf<N>(source: OrderedSource<N>): OrderedSource<N> {
  if (!source.readStored) return source;
  return {
    id: source.id,
    read: (from, direction, limit, until) => source.readStored!(from, direction, limit, until),
    keyOf: (node) => source.keyOf(node),
    compare: (a, b) => source.compare(a, b),
    isKey: (key) => source.isKey(key),
  };
}

/**
 * Positions found by reading the edges skipped, READ_CHUNK at a time: for a connection
 * without a counted index. Its cost grows with the offset.
 */
export const readingPositions: PositionIndex = {
  async locate<N>(source: OrderedSource<N>, from: CursorKey | undefined, direction: Direction, offset: number): Promise<Located> {
    const rows = await readRun(source, from, direction, offset + (from ? 2 : 1));
    // The cursor's own row, when it still exists, is not one of the edges after it.
    const own = from !== undefined && rows.length > 0 && source.compare(source.keyOf(rows[0]!), from) === 0 ? 1 : 0;
    const row = rows[own + offset];
    return { position: row === undefined ? null : { key: source.keyOf(row), skip: 0 } };
  },
};

/** Rows read on a guess of where a page starts (`rankedIndex`'s select): from the edge of bucket `prefix` of `level`. */
interface Guess<N> {
  readonly level: number;
  readonly prefix: bigint;
  readonly key: CursorKey;
  readonly rows: Promise<{ readonly rows: N[]; readonly short: boolean }>;
}

/**
 * Where a walk at bucket `count` of `level` (its list: `listed`), looking
 * for the edge `remaining` edges into it, reads the page on a guess beside the list of
 * the bucket's children: the fraction of the children's range to start from, and how
 * many rows to read (`child`: children skipped from the range's start in the walk's
 * direction); null where no guess is worth its read. The edges are taken as
 * spread evenly, and the read starts a child before where that puts the position and
 * holds three children's edges and the page (and one row for `hasNext`):
 * - where the level is dense (a quarter of its buckets under the parent hold edges: a
 *   steady rate), as it stands: at a steady rate the page is among those rows;
 * - where ranks are `random`, widened by three binomial deviations of the edges before
 *   the position (sqrt(r (n - r) / n) for r of n) on each side: the page is then among
 *   them but past three deviations (a few walks in a thousand);
 * - where a steady rate is slower than an edge a child (suspensions one a minute, a
 *   child 16 s), started one spacing of edges earlier and three edges longer: where the
 *   bucket's first edge falls within its spacing is unknown, which puts the position up
 *   to a spacing (four children there) either side of the even spread's place, and a
 *   guess a child before that missed the page about half the time.
 * Only where a child holds SMALL_BUCKET edges or fewer on average (the walk likely
 * stops at the next level). Not for edges merely uneven, as a list's items: there the
 * guess misses by more than a child or two, and costs a read.
 */
function guessAt(listed: BucketList, level: number, count: number, remaining: number, size: number, random: boolean): { child: number; ask: number } | null {
  const children = 2 ** levelWidth(level + 1);
  const perChild = count / children;
  // (Dense: a quarter of the buckets listed, asked of a packed list only that far.)
  if (perChild > SMALL_BUCKET || !(random || listed.has(Math.ceil(2 ** levelWidth(level) / 4) - 1))) return null;
  const deviation = random ? 3 * Math.sqrt((remaining * (count - remaining)) / count) : 0;
  // Children per edge, where edges are fewer than children at a steady rate.
  const spacing = !random && perChild < 1 ? Math.ceil(1 / perChild) : 0;
  const child = Math.max(0, Math.floor(((remaining - deviation) / count) * children) - 1 - spacing);
  return { child, ask: Math.ceil(3 * perChild + 2 * deviation) + (spacing > 0 ? 3 : 0) + size + 1 };
}

/** The level whose bucket a cursor's rank reads the edges of (`RankOrder.cursorLevel`). */
function cursorLevelOf(order: RankOrder): number {
  return order.cursorLevel ?? (order.random ? 1 : RANK_LEVEL_SHIFTS.length - 1);
}

/** Edges of other keys a cursor's bucket at the level `loneLevel` picks may hold, on average, at most. */
const LONE_OTHERS = 1 / 8;

/**
 * Where edges last (`RankedIndexOptions.lasting`), the deepest level of a cursor's lists
 * a first read names: the first from `RankOrder.cursorLevel` down whose buckets hold
 * fewer than LONE_OTHERS edges on average where the shape known here (`IndexShape`)
 * spreads its edges evenly over its ranks (a random rank's bucket there holds the cursor
 * alone but rarely); the one below `cursorLevel` without a shape; the leaves at most.
 */
function loneLevel(order: RankOrder, shape: IndexShape | undefined): number {
  const leaves = RANK_LEVEL_SHIFTS.length - 1;
  let level = cursorLevelOf(order);
  if (!shape) return Math.min(level + 1, leaves);
  const perRank = shape.total / (Number(shape.highest - shape.lowest) + 1);
  while (level < leaves && perRank * 2 ** RANK_LEVEL_SHIFTS[level]! > LONE_OTHERS) level++;
  return level;
}

/**
 * A cursor placed by its lists alone, where edges last: at the first level from `stop`
 * down to the last of `lists` (the cursor's, level 0's first) where the cursor's bucket
 * (`prefixes`) holds one edge at most (the cursor itself once settled), the lists down to
 * that level and that count; undefined where every one holds more.
 */
function loneBucket(lists: readonly BucketList[], prefixes: readonly bigint[], stop: number): { levels: BucketList[]; count: number } | undefined {
  for (let level = stop; level < lists.length; level++) {
    const list = lists[level]!;
    const at = list.below(prefixes[level]!);
    const count = list.has(at) && list.prefix(at) === prefixes[level] ? list.count(at) : 0;
    if (count <= 1) return { levels: lists.slice(0, level + 1), count };
  }
  return undefined;
}

/** The level from which a cursor's lists are read without the top where nothing else is known (`rankedIndex`'s `firstLists`). */
const NEAR_LEVEL = 3;

/** Lists of one level a first read brings at most on a hint (`likelyLists`). */
const LIKELY_LISTS = 3;

/**
 * The lists under which a position likely lies, from the index's shape known here
 * (`IndexShape`): `offset` edges on from rank `anchor` (or from the first or last edge,
 * without one) in `direction`, where an even spread of its edges over the ranks they
 * span puts that, give or take an edge and, where ranks are `random`, three binomial
 * deviations (sqrt(k (n - k) / n) for k edges of n), elsewhere one (a steady rate, the
 * only spread a shape tells of, strays little; three spanned more lists than a first
 * read should name, suspensions' 95 minutes from a cursor 1,000 on): at each level from 1 down to the first whose buckets hold
 * SMALL_BUCKET edges or fewer on average (where a walk stops), the lists of the buckets
 * that range spans. None past the edges, where level 0's buckets hold few, or where the
 * range spans more than LIKELY_LISTS buckets of a level (a hint too vague to read on).
 */
function likelyLists(shape: IndexShape, anchor: bigint | undefined, direction: Direction, offset: number, random: boolean): RankListName[] {
  const { total } = shape;
  if (offset >= total) return [];
  const lowest = Number(shape.lowest);
  const highest = Number(shape.highest);
  const perEdge = (highest - lowest + 1) / total;
  const start = anchor !== undefined ? Number(anchor) : direction === 'forward' ? lowest : highest + 1;
  const at = start + (direction === 'forward' ? 1 : -1) * (offset + 0.5) * perEdge;
  // From an end of a shape whose bounds are buckets' (not edges'), where ranks are not
  // random the first or last edge may lie anywhere in its bucket: a bucket more.
  const slack = anchor === undefined && !random ? 2 ** RANK_LEVEL_SHIFTS[shape.level]! : 0;
  const deviation = ((random ? 3 : 1) * Math.sqrt((offset * (total - offset)) / total) + 1) * perEdge + slack;
  const from = Math.max(lowest, at - deviation);
  const to = Math.min(highest, at + deviation);
  if (to < from) return [];
  const out: RankListName[] = [];
  for (let level = 1; level < RANK_LEVEL_SHIFTS.length && 2 ** RANK_LEVEL_SHIFTS[level - 1]! / perEdge > SMALL_BUCKET; level++) {
    const width = 2 ** RANK_LEVEL_SHIFTS[level - 1]!;
    const first = Math.floor(from / width);
    const last = Math.floor(to / width);
    if (last - first >= LIKELY_LISTS) return [];
    for (let p = first; p <= last; p++) out.push({ level, parent: BigInt(p) });
  }
  return out;
}

/** How a walk reads its lists: the read that brings level 0's (the top, or `several`), and what it keeps. */
interface ListReads {
  /** The read that brings level 0's list when it is not kept: the top, or the lists a page asks for. */
  readonly first: () => Promise<IndexTop>;
  /** Asked as a read starts; given each list it brings when it comes back. */
  readonly keep: () => Keep;
  /** The settlement under which kept lists are used, if any. */
  readonly trusted?: string;
  /** The first read, already started. */
  readonly pendingTop?: Promise<IndexTop>;
  /** Told what the first read brought, and how many levels it held whole. */
  readonly firstRead?: (lists: readonly RankList[], whole: number) => void;
}

/** Rank and select over a counted index (see the file comment). */
export function rankedIndex(options: RankedIndexOptions): PositionIndex {
  return new RankedIndex(options);
}

/** A list at once when it is kept or came with the top, else the read that brings it. */
type Lists = (level: number, parent: bigint | undefined) => BucketList | Promise<BucketList>;

/**
 * The index `rankedIndex` makes: its steps are methods, not closures, since a page makes
 * its index (a closure a step was made a page).
 */
class RankedIndex implements PositionIndex {
  private readonly order: RankOrder;
  private readonly topLists: number;

  constructor(private readonly options: RankedIndexOptions) {
    this.order = options.order;
    this.topLists = topListsOf(options.order);
  }

  // The edge of bucket `prefix` of `level` a read in `direction` starts from.
  private edgeOf(level: number, prefix: bigint, direction: Direction): CursorKey {
    const shift = RANK_LEVEL_SHIFTS_BIG[level]!;
    return this.order.edgeKey(direction === 'forward' ? prefix << shift : ((prefix + 1n) << shift) - 1n, direction);
  }

  // The position `offset` edges on from `from`, with the bucket lists `buckets` gives.
  // (`path`: the deepest level of the cursor's lists that the read bringing level 0's
  // list brings with it, at least `RankOrder.cursorLevel`; undefined where it brings none.)
  private async walk<N>(source: OrderedSource<N>, from: CursorKey | undefined, direction: Direction, offset: number, size: number, buckets: Lists, path: number | undefined): Promise<PagePosition | null> {
    const pathFirst = path !== undefined;
    const { options, order } = this;
    const leaves = RANK_LEVEL_SHIFTS.length - 1;

    // Rank: the edges at or before `from`: every level's siblings before the cursor's
    // bucket down to `stop` (`RankOrder.cursorLevel`), and the edges of its bucket there
    // up to it, at once, rather than the lists below it; those and the leaf's edges in a
    // second wave where the bucket holds more than SMALL_BUCKET before the cursor.
    let position = offset;
    if (from !== undefined) {
      const prefixes = rankPrefixes(order.rankOf(from));
      const sign = direction === 'forward' ? 1 : -1;
      // The cursor's lists of levels `first` to `last`: at once where every one is in
      // hand (kept, or brought by the first read), else once the reads are back.
      const listsOf = (first: number, last: number): BucketList[] | Promise<BucketList[]> => {
        const out = new Array<BucketList | Promise<BucketList>>(last - first + 1);
        let pending = false;
        for (let level = first; level <= last; level++) {
          const list = buckets(level, level === 0 ? undefined : prefixes[level - 1]);
          if (list instanceof Promise) pending = true;
          out[level - first] = list;
        }
        return pending ? Promise.all(out) : (out as BucketList[]);
      };
      const ranked = storedRowsOf(source);
      const upTo = (level: number, most: number) =>
        readRun(ranked, this.edgeOf(level, prefixes[level]!, direction), direction, most, (node) => sign * source.compare(source.keyOf(node), from) <= 0, LEAF_CHUNK, LEAF_FIRST, from);
      const stop = cursorLevelOf(order);
      // With the top (level 0's list, the levels it holds whole and the first lists
      // below), the list at `stop` and the bucket's edges are read beside it, and the
      // lists between are taken from it once it is back: read only where it lacks them.
      const between = (last = stop): BucketList[] | Promise<BucketList[]> => {
        const zero = buckets(0, undefined);
        return zero instanceof Promise ? zero.then(() => listsOf(0, last)) : listsOf(0, last);
      };
      // Where edges last (`RankedIndexOptions.lasting`) and the first read brought the
      // cursor's lists down to `path` (`loneLevel`), the first of its buckets from `stop`
      // down that holds one edge at most holds the cursor alone (or, unsettled, nothing
      // of it): its count places the cursor, and no edge is read before the page. Where
      // none does (rare), its bucket's edges at `stop` are read once the lists are back.
      const alone = options.lasting && path !== undefined && path >= stop ? loneBucket(await between(path), prefixes, stop) : undefined;
      let levels: BucketList[];
      let inBucket: number;
      if (alone) ({ levels, count: inBucket } = alone);
      else {
        const deepest = options.top && stop > 0 && !pathFirst ? buckets(stop, prefixes[stop - 1]) : undefined;
        // (Awaited through `listsOf`, unless the top fails first.)
        if (deepest instanceof Promise) deepest.catch(() => {});
        const reading = upTo(stop, stop === leaves ? Number.MAX_SAFE_INTEGER : SMALL_BUCKET + 1);
        const listed = options.top || pathFirst ? between() : listsOf(0, stop);
        // (The lists awaited before the edges: a failed read of the edges meanwhile fails the page there.)
        if (listed instanceof Promise) reading.catch(() => {});
        let upper = listed instanceof Promise ? await listed : listed;
        let edges = await reading;
        if (edges.length > SMALL_BUCKET && stop < leaves) {
          const [deeper, inLeaf] = await Promise.all([listsOf(stop + 1, leaves), upTo(leaves, Number.MAX_SAFE_INTEGER)]);
          upper = upper.concat(deeper);
          edges = inLeaf;
        }
        levels = upper;
        inBucket = edges.length;
      }
      for (let level = 0; level < levels.length; level++) {
        // The buckets before the cursor's in `direction`: those below (or above) its prefix
        // (forward, a packed list is decoded only up to it).
        const list = levels[level]!;
        if (sign > 0) position += list.countBelow(prefixes[level]!);
        else {
          const split = list.below(prefixes[level]!);
          position += countsOf(list, split < list.length && list.prefix(split) === prefixes[level] ? split + 1 : split, list.length);
        }
      }
      position += inBucket;
    }

    // Select: down the levels to a bucket holding `position` that is a leaf or small.
    let remaining = position;
    let parent: bigint | undefined;
    let guess: Guess<N> | undefined;
    for (let level = 0; ; level++) {
      // (A list in hand is taken without a wait: no promise a level.)
      const got = buckets(level, parent);
      const read = got instanceof Promise ? await got : got;
      const list = direction === 'forward' ? read : reversedList(read);
      // The bucket holding the position (a packed list read once finds it in its text).
      const selected = list.select(remaining);
      if (selected === null) return null;
      const { at, count: bucketCount } = selected;
      remaining = selected.remaining;
      if (level === leaves || bucketCount <= SMALL_BUCKET) {
        // The rows read on a guess beside this list, when they start at or before the
        // bucket and hold the page: the edges of the buckets between are skipped too.
        if (guess?.level === level) {
          let from = 0;
          while (from <= at && (direction === 'forward' ? list.prefix(from) < guess.prefix : list.prefix(from) > guess.prefix)) from++;
          if (from <= at) {
            const skip = remaining + countsOf(list, from, at);
            const read = await guess.rows;
            // (A page that starts the guessed bucket is read from the bucket before, below, to prove `hasPrevious`.)
            if (skip > 0 && (read.short || read.rows.length >= skip + size + 1)) return { key: guess.key, skip, read };
          }
        }
        // The page starts its bucket: start at the bucket before it instead (the last that
        // holds edges), when it is small, so that the edges skipped prove `hasPrevious`
        // without a probe beside the read.
        const { beforePrefix, beforeCount } = selected;
        if (remaining === 0 && beforePrefix !== undefined && beforeCount <= SMALL_BUCKET) return { key: this.edgeOf(level, beforePrefix, direction), skip: beforeCount };
        return { key: this.edgeOf(level, selected.prefix, direction), skip: remaining };
      }
      parent = selected.prefix;
      // Read the page on a guess beside the next list, when that list is a read (a wave):
      // its wave then brings the page too, when the list confirms the rows hold it.
      const guessed = buckets(level + 1, parent) instanceof Promise ? guessAt(list, level, bucketCount, remaining, size, order.random === true) : null;
      if (guessed) {
        const { lowest, highest } = childPrefixRange(level + 1, parent);
        const within = BigInt(guessed.child);
        const prefix = direction === 'forward' ? lowest + within : highest - within;
        const key = this.edgeOf(level + 1, prefix, direction);
        const rows = readRun(source, key, direction, guessed.ask).then((rows) => ({ rows, short: rows.length < guessed.ask }));
        rows.catch(() => {});
        guess = { level: level + 1, prefix, key, rows };
      }
    }
  }

  // Bucket lists read once per walk (a select under the cursor's own buckets reuses
  // them), from `cached` lists kept under settlement `trusted` where there are any.
  // `keep` is asked as a read starts, and given each list it brings when it comes back.
  // Level 0's list, when not kept, comes with the first read (`ListReads.first`: the top
  // of the index, or the lists the page asks for): a list asked for once that read is
  // back, that it holds (or of a level it holds whole), is taken from it.
  private listsOf({ first, keep, trusted, pendingTop, firstRead }: ListReads): Lists {
    const { options, topLists } = this;
    // Per level, by parent (a bigint is a Map key by value): no name made a lookup.
    const read: Array<Map<bigint | undefined, BucketList | Promise<BucketList>>> = [];
    let top: TopOfIndex | undefined;
    return (level, parent) => {
      const ofLevel = (read[level] ??= new Map());
      let found = ofLevel.get(parent);
      if (!found) {
        const kept = trusted === undefined ? undefined : options.cached!.cache.get(options.cached!.id, trusted, level, parent);
        const fromTop = top?.lists ? listIn(top, level, parent) : undefined;
        if (kept) found = kept;
        else if (fromTop) {
          top!.keeping(level, parent, fromTop);
          found = fromTop;
        } else if (level === 0 && options.top && !top) {
          const keeping = keep();
          const reading: TopOfIndex = (top = { keeping, whole: 0 });
          found = (pendingTop ?? first()).then(({ lists, settlement, whole }) => {
            reading.lists = lists;
            // Lists read with the settlement in one read are kept under it.
            const cached = options.cached;
            if (settlement !== undefined && cached) reading.keeping = (l, p, list) => cached.cache.put(cached.id, settlement, l, p, list);
            const keepTop = reading.keeping;
            // Every level before the last list's is whole; all of them when fewer came.
            reading.whole = whole ?? (lists.length < topLists ? RANK_LEVEL_SHIFTS.length : lists[lists.length - 1]!.level);
            const list = listIn(reading, 0, undefined) ?? NO_BUCKETS;
            keepTop(0, undefined, list);
            firstRead?.(lists, reading.whole);
            return list;
          });
        } else {
          const keeping = keep();
          found = options.buckets(level, parent).then((buckets) => {
            const list = bucketList(buckets);
            keeping(level, parent, list);
            return list;
          });
        }
        ofLevel.set(parent, found);
      }
      return found;
    };
  }

  // The lists a page from `from` (or from an end) reads first, level 0's first, where it
  // knows them before any read, in one read of several rows (`options.several`): the
  // lists `shape` puts the position under (`likelyLists`), and a cursor's lists down to
  // `RankOrder.cursorLevel`; where ranks are random, a cursor's even without a shape
  // (the top is level 0's list alone there). Where a cursor is ranked below the levels an
  // index's top holds (NEAR_LEVEL: a timeline's level 4), a cursor's page in a process
  // that knows no shape of the index names with its own lists, below level 1, the list
  // under the bucket after its own in the page's direction (`near`): a position near the
  // cursor lies under them where edges are dense (a timeline's 6.5 ms buckets), and
  // where they are sparse a walk stops at the upper levels, which the cursor's lists
  // hold; the top's twelve lists and a read of the cursor's list beside them were two
  // calls and four times the text. (Ranked at level 2, a cursor's lists above its own
  // come with the top, which holds a small index whole: suspensions and a list's items
  // keep it.) Null: the top (with the levels it holds whole, where a position without a
  // hint most likely lies).
  private firstLists(from: CursorKey | undefined, direction: Direction, offset: number, shape: IndexShape | undefined): { wanted: RankListName[]; near: boolean; path: number } | null {
    const { options, order } = this;
    if (!options.several) return null;
    const anchor = from === undefined ? undefined : order.rankOf(from);
    const likely = shape ? likelyLists(shape, anchor, direction, offset, order.random === true) : [];
    const near = anchor !== undefined && !shape && !order.random && cursorLevelOf(order) >= NEAR_LEVEL;
    if (likely.length === 0 && !(anchor !== undefined && (order.random || near))) return null;
    const wanted: RankListName[] = [{ level: 0, parent: undefined }];
    const path = options.lasting ? loneLevel(order, shape) : cursorLevelOf(order);
    if (anchor !== undefined) {
      const prefixes = rankPrefixes(anchor);
      for (let level = 1; level <= path; level++) wanted.push({ level, parent: prefixes[level - 1] });
      const step = direction === 'forward' ? 1n : -1n;
      if (near) for (let level = 2; level <= cursorLevelOf(order); level++) if (prefixes[level - 1]! + step >= 0n) wanted.push({ level, parent: prefixes[level - 1]! + step });
    }
    for (const l of likely) if (!wanted.some((w) => w.level === l.level && w.parent === l.parent)) wanted.push(l);
    return { wanted, near, path };
  }
  async locate<N>(source: OrderedSource<N>, from: CursorKey | undefined, direction: Direction, offset: number, size: number): Promise<Located> {
    const { options, topLists } = this;
    const cached = options.cached;
    const named = this.firstLists(from, direction, offset, cached?.cache.shape(cached.id));
    const first = (): Promise<IndexTop> => (named ? options.several!(named.wanted) : options.top!(topLists));
    const path = named !== null && from !== undefined ? named.path : undefined;
    if (!cached) return { position: await this.walk(source, from, direction, offset, size, this.listsOf({ first, keep: () => () => {} }), path) };
    const { cache, id } = cached;
    // (Lists named near a cursor tell nothing of where the index's edges end: no shape.)
    const firstRead = named?.near ? undefined : (lists: readonly RankList[], whole: number) => cache.noteShape(id, lists, whole);
    // The settlement known here before this page's reads: the kept lists it may use.
    const trusted = cache.settlement(id);
    let read: string | undefined;
    // Where the first read brings the settlement and this page makes it (level 0's list
    // is not kept), it is read first and the settlement with it.
    const pendingTop = cached.inTop && options.top && !(trusted !== undefined && cache.get(id, trusted, 0, undefined)) ? first() : undefined;
    pendingTop?.catch(() => {});
    const settlement = (pendingTop ? pendingTop.then((top) => top.settlement ?? '') : cached.settlement()).then((token) => {
      read = token;
      cache.settle(id, token);
      return token;
    });
    // A failed read of the settlement fails the page only where the page waits for it.
    settlement.catch(() => {});
    // A list read once the settlement is read is kept under it; one read alongside,
    // under the trusted settlement, if the read confirms it.
    const keep = (): Keep => {
      const under = read;
      return (level, parent, list) => {
        if (under !== undefined) cache.put(id, under, level, parent, list);
        else if (trusted !== undefined) settlement.then((token) => token === trusted && cache.put(id, token, level, parent, list), () => {});
      };
    };
    if (trusted === undefined) {
      // Nothing kept to trust: read as without a cache, and learn the settlement meanwhile.
      return { position: await this.walk(source, from, direction, offset, size, this.listsOf({ first, keep, pendingTop, firstRead }), path) };
    }
    const again = async (token: string) => ({ position: await this.walk(source, from, direction, offset, size, this.listsOf({ first, keep, trusted: token, firstRead }), path) });
    const position = await this.walk(source, from, direction, offset, size, this.listsOf({ first, keep, trusted, pendingTop, firstRead }), path);
    if (read !== undefined) return read === trusted ? { position } : again(read);
    return { position, recheck: settlement.then((token) => (token === trusted ? null : again(token))) };
  }
}

/**
 * The ranks of a connection ordered by one timeuuid, newest first (a timeline): the
 * rank counts down from the newest possible tick, so it ascends in connection order.
 */
export const timeuuidDescending: RankOrder = {
  rankOf: (key) => RANK_MAX - ticksOfTimeuuid(key[0] as string),
  // Newest first: a forward read starts at the tick's highest timeuuid, a backward one at its lowest.
  edgeKey: (rank, direction) => [timeuuidBoundOfTicks(RANK_MAX - rank, direction === 'forward' ? 'highest' : 'lowest')],
  // A level-4 bucket is 6.5 ms of one author's posts: a handful at most.
  cursorLevel: 4,
};
