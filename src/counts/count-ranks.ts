/**
 * The counted index behind `offset` (paging/ranked-index.ts reads it): for a counted
 * connection whose items have a rank (a timeline: its posts' times), how many of its
 * items lie in each rank bucket at each level, kept by the same settlement as
 * `totalCount` (connection-counts.ts), from the same decided changes.
 *
 * The buckets of one parent are one list, stored as one row (one cell of packed
 * counts), so reading a level costs one row however many of its buckets hold items.
 * Each list row holds its buckets' counts through `settled_through` (a window start,
 * ms), written `USING TIMESTAMP settled_through` like the count's head, so a later
 * settlement always wins. A settlement from the head's bound T to T' rewrites, before
 * the head, every list its decided changes touch (read, add, write back whole): a
 * list's own bound T_b then tells which changes it already holds (those of windows
 * before T_b), and no change between a list's bound and the head's was decided that it
 * lacks. So verifiers that run together, one that crashes between its list writes and
 * its head, and one that settles again after another write the same values, as the
 * count's head does.
 * Nothing on the write path changes: the events already carry the item, and its rank
 * is a function of the item.
 *
 * A full settlement (`settleFully`, recounts) rebuilds every list from the ledger.
 *
 * Lists change only before a write of level 0's list that moves its bound (or its
 * total): that is what lets a process keep bucket lists across requests, checked
 * against that row (`readRankSettlement`, which the index's top brings too;
 * paging/ranked-index.ts `RankCache`). Anything else that writes lists must rewrite
 * level 0's after them.
 */
import { allRowsOf } from '../paging/partition-chunks.js';
import {
  bucketList,
  childPrefixRange,
  countBelowIn,
  rankPrefixes,
  rankedIndex,
  selectIn,
  type BucketList,
  type Buckets,
  type IndexTop,
  type RankBucket,
  type RankCache,
  type RankList,
  type RankListName,
  type RankOrder,
  type Selected,
} from '../paging/ranked-index.js';
import type { PositionIndex } from '../paging/types.js';
import type { Mutation, Store } from '../store/port.js';
import type { Row } from '../store/table.js';
import type { CountWriter } from './connection-counts.js';
import { countItemsTable, countRankListsTable } from './count-tables.js';

/** How a settlement spells the lists it writes (`packRankList`). */
export interface ListSpelling {
  /**
   * Write only the sparse spelling (COUNT_LISTS_SPARSE), which every build reads: while
   * servers of a build that cannot read the dense one run beside this one (a rolling
   * upgrade), or they would misread a dense list and write garbage back. Both are read.
   */
  readonly sparseLists?: boolean;
}

/**
 * The rank of an item in its connection, for the count keys that have an index; null
 * for the others. It carries how the lists are spelt (`ListSpelling`): every settlement
 * takes it already, and only the settlement writes lists.
 */
export interface RankOfItem extends ListSpelling {
  (countKey: string): ((item: string) => bigint) | null;
}

/** `rankOf`, writing lists as `spelling` says (the configured COUNT_LISTS_SPARSE). */
export function rankOfSpelt(rankOf: RankOfItem, spelling: ListSpelling): RankOfItem {
  return Object.assign((countKey: string) => rankOf(countKey), { sparseLists: spelling.sparseLists ?? false });
}

/**
 * The count key of the index entries of a connection whose items' ranks are not a
 * function of the items its `totalCount` counts (a suspension's rank is its time, not
 * its saga; a list item's rank moves with it). Its items are index entries
 * (`indexEntry`), counted by the same ledger and settlement as any count; only its
 * counted index is read, never its count.
 */
export function indexKeyOf(countKey: string): string {
  return `index:${countKey}`;
}

/** Whether `key` is a count key of index entries (`indexKeyOf`). */
export function isIndexKey(key: string): boolean {
  return key.startsWith('index:');
}

/** Hex digits of a rank in an index entry's name. */
const RANK_DIGITS = 15;

/**
 * The name of an index entry: its rank, then what makes it unique (`rest`). The name
 * carries the rank, so the settlement ranks it without reading anything else.
 */
export function indexEntry(rank: bigint, rest: string): string {
  return `${rank.toString(16).padStart(RANK_DIGITS, '0')}:${rest}`;
}

/** The rank an index entry's name carries (`indexEntry`). */
export function rankOfIndexEntry(entry: string): bigint {
  return BigInt(`0x${entry.slice(0, RANK_DIGITS)}`);
}

/** Generations of an entry probed per read. */
const GENERATIONS = 4;

/**
 * The names under which the index entries `entries` of `countKey` stand now: each one's
 * first generation (`entry`, `entry#1`, …) whose ledger holds no removal. The ledger
 * counts a name once, from its first addition to its first removal, so an entry that
 * comes back after it was removed (a list item moved back to the very position it
 * left) takes the next generation; adding and removing one entry both name its current
 * generation, and a retried change names the same. One read (more only past
 * GENERATIONS removals of one entry).
 */
export async function currentEntries(store: Store, countKey: string, entries: readonly string[]): Promise<string[]> {
  const key = indexKeyOf(countKey);
  const named = (entry: string, generation: number) => (generation === 0 ? entry : `${entry}#${generation}`);
  const found: Array<string | undefined> = entries.map(() => undefined);
  for (let from = 0; found.includes(undefined); from += GENERATIONS) {
    const open = entries.flatMap((entry, i) => (found[i] === undefined ? [i] : []));
    const names = open.flatMap((i) => Array.from({ length: GENERATIONS }, (_, g) => named(entries[i]!, from + g)));
    const rows = await store.getMany(countItemsTable, names.map((item) => ({ count_key: key, item })));
    open.forEach((i, k) => {
      const free = rows.slice(k * GENERATIONS, (k + 1) * GENERATIONS).findIndex((row) => row?.removed_at == null);
      if (free >= 0) found[i] = named(entries[i]!, from + free);
    });
  }
  return found as string[];
}

/**
 * What adding (+1) or removing (-1) an index entry writes, in the batch of the change
 * it follows: the ledger cell, event, span and mark (`CountWriter.recorded`), no live
 * cell (nothing reads the entries' count before it is settled).
 */
export function indexChange(writer: CountWriter, countKey: string, entry: string, sign: 1 | -1): Mutation[] {
  return writer.recorded(writer.attempt({ key: indexKeyOf(countKey), item: entry, sign }));
}

/** A change the settlement decided counts (+1 or -1), in its window. */
export interface DecidedChange {
  readonly item: string;
  readonly sign: 1 | -1;
  readonly window: number;
}

/** Mutations per batch of list writes (one partition), and the packed text a batch carries at most (Cassandra fails batches past 50 kB). */
const BATCH = 200;
const BATCH_CHARS = 20_000;

/** The clustering `parent` of a list: level 0's one list has none and is stored under 0. */
const storedParent = (parent: bigint | undefined): bigint => parent ?? 0n;

/**
 * A list's buckets as stored in one cell, in one of two spellings (`PackedList` reads
 * both). Sparse: per bucket with items, its place under the parent (prefix minus the
 * parent's first child) and its count, base 36, in prefix order: "0:1a,3:4,ff:2".
 * Dense: "=" then one base-36 digit per child from the first up to the last with items,
 * "0" for an empty one: "=1004". Counts of 0 are left out of either. Dense is written
 * where every count is 1 to 35 and it is the shorter, unless `spelling.sparseLists`
 * (COUNT_LISTS_SPARSE: servers of a build that reads only the sparse one still run).
 * Why two: on Cassandra a read costs by the size of the rows it lands among, and a
 * list whose children mostly hold a few items (a random rank's level 1) is about a
 * quarter of the size dense (docs/benchmarks-history.md, "dense-lists").
 */
export function packRankList(level: number, parent: bigint | undefined, buckets: Iterable<RankBucket>, spelling: ListSpelling = {}): string {
  const { lowest } = childPrefixRange(level, storedParent(parent));
  const out: string[] = [];
  const places: number[] = [];
  const counts: number[] = [];
  let digits = !spelling.sparseLists;
  let last = -1;
  for (const b of buckets) {
    if (b.count === 0) continue;
    const place = b.prefix - lowest;
    out.push(`${place.toString(36)}:${b.count.toString(36)}`);
    if (!digits) continue;
    if (b.count < 0 || b.count > 35) digits = false;
    places.push(Number(place));
    counts.push(b.count);
    last = Math.max(last, Number(place));
  }
  const text = out.join(',');
  // "=" and a digit per child through the last place: chosen only where that is shorter.
  if (!digits || last < 0 || last + 2 >= text.length) return text;
  const dense = new Array<string>(last + 1).fill('0');
  places.forEach((place, i) => (dense[place] = counts[i]!.toString(36)));
  return `=${dense.join('')}`;
}

/** A base-36 digit's value from its character code. */
const digitOf = (c: number): number => (c <= 57 ? c - 48 : c - 87);

/**
 * Reads of a packed list answered in its text before it is decoded (`PackedList`): a
 * list a page reads once (every visit a first one) is summed or searched where it lies,
 * with no array made; one kept across requests (`RankCache`) and read again is decoded.
 */
const IN_PLACE_READS = 2;

/**
 * A list stored by `packRankList`, in either spelling, decoded only as far as it is read
 * (a walk reads a list up to its cursor's or its position's bucket): places and counts
 * in two arrays, no object per bucket, a prefix made only when asked for. Its first
 * reads of a rank's sum or a select's bucket (`countBelow`, `select`) decode nothing:
 * they scan the text. Every read goes through `parse`, the one place that knows the
 * spellings apart.
 */
class PackedList implements BucketList {
  private readonly places: number[] = [];
  private readonly counts: number[] = [];
  /** Whether the text is the dense spelling; where its entries start and end (a dense text's trailing "0"s left out). */
  private readonly dense: boolean;
  private readonly start: number;
  private readonly end: number;
  /** How many buckets a dense text holds (its digits not "0"), counted when first asked (`rows`). */
  private denseRows: number | undefined;
  /** Where decoding goes on in the text. */
  private at: number;
  /** The entry `parse` read last: its place and count. */
  private place = 0;
  private count_ = 0;
  /** Reads left to answer in the text (`IN_PLACE_READS`). */
  private inPlace = IN_PLACE_READS;
  /**
   * Where the last sum in the text (`countBelow`) stopped, for a select after it in the
   * same list (a cursor's list is most often the one its position lies in): the entry's
   * offset in the text and its position, the sum of the counts before it, the highest
   * running sum up to it (a count may be negative), and the last entry before it with
   * edges (its place and count, or a place of -1).
   */
  private finger: { readonly at: number; readonly i: number; readonly sum: number; readonly most: number; readonly before: number; readonly beforeCount: number } | undefined;

  constructor(
    private readonly lowest: bigint,
    private readonly text: string,
  ) {
    this.dense = text.charCodeAt(0) === 61; /* = */
    let end = text.length;
    if (this.dense) while (end > 1 && text.charCodeAt(end - 1) === 48 /* 0 */) end--;
    this.start = this.dense ? 1 : 0;
    this.end = end;
    this.at = this.start;
  }

  /**
   * At most one bucket per 4 characters ("0:1,"); dense, its digits not "0", counted
   * once: a bound that never changes, as `RankCache` needs.
   */
  get rows(): number {
    if (!this.dense) return ((this.text.length + 1) >> 2) + 1;
    if (this.denseRows === undefined) {
      let rows = 0;
      for (let at = this.start; at < this.end; at++) if (this.text.charCodeAt(at) !== 48 /* 0 */) rows++;
      this.denseRows = rows;
    }
    return this.denseRows;
  }

  get length(): number {
    this.decodeThrough(Number.POSITIVE_INFINITY);
    return this.places.length;
  }

  has(i: number): boolean {
    return i < this.places.length || this.decodeThrough(i);
  }

  prefix(i: number): bigint {
    if (i >= this.places.length) this.decodeThrough(i);
    return this.lowest + BigInt(this.places[i]!);
  }

  count(i: number): number {
    if (i >= this.counts.length) this.decodeThrough(i);
    return this.counts[i]!;
  }

  below(prefix: bigint): number {
    const place = this.placeOf(prefix);
    if (place <= 0) return 0;
    const { places } = this;
    // Decoded in one go up to the first place at or above it, not an entry a call.
    if (places.length === 0 || places[places.length - 1]! < place) this.decodeThrough(Number.POSITIVE_INFINITY, place);
    let i = 0;
    while (i < places.length && places[i]! < place) i++;
    return i;
  }

  countBelow(prefix: bigint): number {
    if (!this.readInPlace()) return countBelowIn(this, prefix);
    const place = this.placeOf(prefix);
    const { end } = this;
    let sum = 0;
    let most = 0;
    let before = -1;
    let beforeCount = 0;
    let at = this.start;
    let i = 0;
    for (; at < end; i++) {
      const next = this.parse(at);
      if (this.place >= place) break;
      at = next;
      sum += this.count_;
      if (sum > most) most = sum;
      if (this.count_ > 0) {
        before = this.place;
        beforeCount = this.count_;
      }
    }
    this.finger = { at, i, sum, most, before, beforeCount };
    return sum;
  }

  select(remaining: number): Selected | null {
    if (!this.readInPlace()) return selectIn(this, remaining);
    const { end } = this;
    let at = this.start;
    let i = 0;
    let before = -1;
    let beforeCount = 0;
    // From where the last sum stopped, when the running sum passes none of the buckets before it.
    const { finger } = this;
    if (finger && remaining >= finger.most) {
      ({ at, i, before, beforeCount } = finger);
      remaining -= finger.sum;
    }
    for (; at < end; i++) {
      at = this.parse(at);
      const count = this.count_;
      if (remaining < count) {
        const beforePrefix = before >= 0 ? this.lowest + BigInt(before) : undefined;
        return { at: i, prefix: this.lowest + BigInt(this.place), count, remaining, beforePrefix, beforeCount };
      }
      remaining -= count;
      if (count > 0) {
        before = this.place;
        beforeCount = count;
      }
    }
    return null;
  }

  /** Whether a read is answered in the text: none is decoded yet, and it has reads left to answer there. */
  private readInPlace(): boolean {
    if (this.places.length > 0 || this.inPlace <= 0) return false;
    this.inPlace--;
    return true;
  }

  /** The place under the parent of `prefix`, clamped to 0 below the parent's first child. */
  private placeOf(prefix: bigint): number {
    const target = prefix - this.lowest;
    if (target <= 0n) return 0;
    return target > MAX_PLACE ? Number.POSITIVE_INFINITY : Number(target);
  }

  /**
   * Decode entries until the one at `i`, or one at place `reach` or beyond, or the
   * text's end: whether there is one at `i`.
   */
  private decodeThrough(i: number, reach = Number.POSITIVE_INFINITY): boolean {
    const { places, counts, end } = this;
    let at = this.at;
    while (places.length <= i && at < end && !(places.length > 0 && places[places.length - 1]! >= reach)) {
      at = this.parse(at);
      places.push(this.place);
      counts.push(this.count_);
    }
    this.at = at;
    return places.length > i;
  }

  /**
   * The entry that starts at `at` in the text (before `end`): its place and count into
   * `place` and `count_`; where the next one starts. Sparse, digit by digit (base 36, a
   * count may be negative): no substring per entry. Dense, the next digit that is not
   * "0" (there is one: `end` is past the last), its place its offset after the "=".
   */
  private parse(at: number): number {
    const { text } = this;
    if (this.dense) {
      while (text.charCodeAt(at) === 48 /* 0 */) at++;
      this.place = at - 1;
      this.count_ = digitOf(text.charCodeAt(at));
      return at + 1;
    }
    const end = text.length;
    let place = 0;
    let c = text.charCodeAt(at);
    for (; at < end && c !== 58 /* : */; c = text.charCodeAt(++at)) place = place * 36 + digitOf(c);
    c = text.charCodeAt(++at);
    const sign = c === 45 /* - */ ? -1 : 1;
    if (sign < 0) c = text.charCodeAt(++at);
    let count = 0;
    for (; at < end && c !== 44 /* , */; c = text.charCodeAt(++at)) count = count * 36 + digitOf(c);
    this.place = place;
    this.count_ = sign * count;
    return at + 1;
  }
}

/** The largest place a list's text is read with as a number. */
const MAX_PLACE = BigInt(Number.MAX_SAFE_INTEGER);

/** The list of `level` under `parent` stored by `packRankList` as `text`, decoded as it is read. */
export function packedRankList(level: number, parent: bigint | undefined, text: string | null | undefined): BucketList {
  return new PackedList(childPrefixRange(level, storedParent(parent)).lowest, text ?? '');
}

/** The buckets of a list stored by `packRankList`, in prefix order. */
export function unpackRankList(level: number, parent: bigint | undefined, text: string | null | undefined): RankBucket[] {
  const list = packedRankList(level, parent, text);
  const out: RankBucket[] = [];
  for (let i = 0; list.has(i); i++) out.push({ prefix: list.prefix(i), count: list.count(i) });
  return out;
}

/** The list of `level` under `parent` to write: its buckets' counts by prefix. */
interface ListWrite {
  readonly level: number;
  readonly parent: bigint | undefined;
  readonly counts: Map<bigint, number>;
}

/**
 * Write lists as settled through `through`, a batch at a time, level 0's last and
 * alone: it is the index's settlement (`readRankSettlement`), which moves only once
 * every list it settles is written.
 */
async function writeLists(store: Store, key: string, through: number, lists: readonly ListWrite[], spelling: ListSpelling): Promise<void> {
  const timestamp = BigInt(through) * 1000n;
  let batch: Mutation[] = [];
  let chars = 0;
  const last = lists.filter((l) => l.level === 0);
  for (const list of [...lists.filter((l) => l.level !== 0), ...last]) {
    const buckets = [...list.counts].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([prefix, count]) => ({ prefix, count }));
    const counts = packRankList(list.level, list.parent, buckets, spelling);
    if (batch.length > 0 && (batch.length >= BATCH || chars + counts.length > BATCH_CHARS || list.level === 0)) {
      await store.batch(batch);
      batch = [];
      chars = 0;
    }
    batch.push({
      kind: 'upsert',
      table: countRankListsTable,
      row: { count_key: key, level: list.level, parent: storedParent(list.parent), counts, settled_through: BigInt(through) },
      options: { timestamp },
    });
    chars += counts.length;
  }
  if (batch.length > 0) await store.batch(batch);
}

/** The list of every level that holds a bucket of `rank`, with that bucket's prefix: [level, parent, prefix]. */
function listsOfRank(rank: bigint): Array<[number, bigint | undefined, bigint]> {
  const prefixes = rankPrefixes(rank);
  return prefixes.map((prefix, level) => [level, level === 0 ? undefined : prefixes[level - 1], prefix]);
}

/**
 * Add the changes decided from the head's bound up to `through` to the lists they
 * touch (see the file comment), spelt as `spelling` says; call before the head is written.
 */
export async function settleRanks(
  store: Store,
  key: string,
  rankOf: (item: string) => bigint,
  through: number,
  decided: readonly DecidedChange[],
  spelling: ListSpelling,
): Promise<void> {
  if (decided.length === 0) return;
  // Per list, its changes with the prefix of the bucket each touches.
  const touched = new Map<string, { level: number; parent: bigint | undefined; changes: Array<[bigint, DecidedChange]> }>();
  for (const change of decided) {
    for (const [level, parent, prefix] of listsOfRank(rankOf(change.item))) {
      const id = `${level}:${parent ?? ''}`;
      let list = touched.get(id);
      if (!list) touched.set(id, (list = { level, parent, changes: [] }));
      list.changes.push([prefix, change]);
    }
  }
  const lists = [...touched.values()];
  const rows = await store.getMany(countRankListsTable, lists.map((l) => ({ count_key: key, level: l.level, parent: storedParent(l.parent) })));
  const writes: ListWrite[] = [];
  lists.forEach((list, i) => {
    const own = rows[i]?.settled_through as bigint | null | undefined;
    const bound = own == null ? -Infinity : Number(own);
    if (bound >= through) return;
    const counts = new Map(unpackRankList(list.level, list.parent, rows[i]?.counts as string | null | undefined).map((b) => [b.prefix, b.count]));
    for (const [prefix, c] of list.changes) if (c.window >= bound) counts.set(prefix, (counts.get(prefix) ?? 0) + c.sign);
    writes.push({ level: list.level, parent: list.parent, counts });
  });
  await writeLists(store, key, through, writes, spelling);
}

/**
 * Rebuild every list from the items counted through `through` (a full settlement),
 * spelt as `spelling` says: each list gets its buckets' counts, and a list that no
 * longer holds any is emptied.
 */
export async function rebuildRanks(
  store: Store,
  key: string,
  rankOf: (item: string) => bigint,
  through: number,
  items: readonly string[],
  spelling: ListSpelling,
): Promise<void> {
  const lists = new Map<string, ListWrite>();
  const listOf = (level: number, parent: bigint | undefined) => {
    const id = `${level}:${parent ?? ''}`;
    let list = lists.get(id);
    if (!list) lists.set(id, (list = { level, parent, counts: new Map() }));
    return list;
  };
  for (const row of await allRowsOf(store, countRankListsTable, { count_key: key })) {
    const level = row.level as number;
    listOf(level, level === 0 ? undefined : (row.parent as bigint));
  }
  for (const item of items) {
    for (const [level, parent, prefix] of listsOfRank(rankOf(item))) {
      const { counts } = listOf(level, parent);
      counts.set(prefix, (counts.get(prefix) ?? 0) + 1);
    }
  }
  await writeLists(store, key, through, [...lists.values()], spelling);
}

/** The buckets of `key`'s index at `level` under `parent` (level 0's without one), in prefix order: one read. What `rankedIndex` reads. */
export async function readRankBuckets(store: Store, key: string, level: number, parent: bigint | undefined): Promise<BucketList> {
  const row = await store.get(countRankListsTable, { count_key: key, level, parent: storedParent(parent) });
  return packedRankList(level, parent, row?.counts as string | null | undefined);
}

/**
 * The first `limit` lists of `key`'s index, in level then parent order, and its
 * settlement (`readRankSettlement`): one slice. Each list's text is unpacked only when
 * its buckets are asked for (a walk uses few).
 */
export async function readRankTop(store: Store, key: string, limit: number): Promise<IndexTop> {
  const rows = await store.slice(countRankListsTable, { partition: { count_key: key }, limit });
  const lists = rows.map((r) => new RowList(r.level as number, r.level === 0 ? undefined : (r.parent as bigint), r));
  // Level 0's list comes first (clustering order), and with it the settlement, its
  // total summed from the buckets a walk reads anyway (unpacked once, not twice).
  return { lists, settlement: rows[0]?.level === 0 ? settlementOf(rows[0], lists[0]!.buckets) : settlementOf(null) };
}

/**
 * The lists `wanted` of `key`'s index, each of them (empty where the index has none),
 * in one read of several rows of its partition (`Store.getInPartition`); with level 0's
 * among them, the settlement too (`readRankSettlement`). What a page from a cursor
 * reads first: level 0's list and the lists of its cursor's buckets, and those a hint
 * puts its position under.
 */
export async function readRankLists(store: Store, key: string, wanted: readonly RankListName[]): Promise<IndexTop> {
  const rows = await store.getInPartition(countRankListsTable, { count_key: key }, wanted.map(({ level, parent }) => ({ level, parent: storedParent(parent) })));
  const lists = wanted.map(({ level, parent }, i) => new RowList(level, parent, rows[i]));
  const zero = wanted.findIndex((w) => w.level === 0);
  return { lists, whole: 0, ...(zero >= 0 && { settlement: settlementOf(rows[zero], lists[zero]!.buckets) }) };
}

/**
 * The list of `level` under `parent` a row holds (none: empty), its text unpacked only
 * when its buckets are asked for (a walk uses few). A class, not an object with a getter
 * closure: a page's first read makes up to a dozen.
 */
class RowList implements RankList {
  private unpacked: BucketList | undefined;

  constructor(
    readonly level: number,
    readonly parent: bigint | undefined,
    private readonly row: Row | null | undefined,
  ) {}

  get buckets(): BucketList {
    return (this.unpacked ??= packedRankList(this.level, this.parent, this.row?.counts as string | null | undefined));
  }
}

/**
 * The settlement of an index as a token, from its level-0 list's row (and its buckets,
 * where they are unpacked already): its bound and its total. Every settlement that
 * changes a list writes that row, last (`writeLists`: every change touches level 0), so
 * the token moves once the lists it settles are written.
 */
function settlementOf(row: Row | null | undefined, buckets?: Buckets): string {
  if (!row) return '';
  const list = buckets ? bucketList(buckets) : packedRankList(0, undefined, row.counts as string | null | undefined);
  let total = 0;
  for (let i = 0; list.has(i); i++) total += list.count(i);
  return `${row.settled_through as bigint}/${total}`;
}

/** The settlement of `key`'s index (see `settlementOf`). One read. */
export async function readRankSettlement(store: Store, key: string): Promise<string> {
  return settlementOf(await store.get(countRankListsTable, { count_key: key, level: 0, parent: storedParent(undefined) }));
}

/**
 * The counted index of count `key`, for the paging engine's `offset`; with the
 * process's `cache`, its bucket lists are kept across requests (`RankCache`); `lasting`
 * where the connection's edges are never removed (`RankedIndexOptions.lasting`).
 */
export function countedIndex(store: Store, key: string, order: RankOrder, cache?: RankCache, lasting = false): PositionIndex {
  return rankedIndex({
    order,
    lasting,
    buckets: (level, parent) => readRankBuckets(store, key, level, parent),
    top: (limit) => readRankTop(store, key, limit),
    several: (wanted) => readRankLists(store, key, wanted),
    ...(cache && { cached: { cache, id: key, settlement: () => readRankSettlement(store, key), inTop: true } }),
  });
}
