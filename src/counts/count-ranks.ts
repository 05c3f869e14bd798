/**
 * The counted index behind `offset` (paging/ranked-index.ts reads it): for a counted
 * connection whose items have a rank (a timeline: its posts' times), how many of its
 * items lie in each rank bucket at each level, kept by the same settlement as
 * `totalCount` (connection-counts.ts), from the same decided changes.
 *
 * Each bucket row holds `count` items through `settled_through` (a window start, ms),
 * written `USING TIMESTAMP settled_through` like the count's head, so a later
 * settlement always wins. A settlement from the head's bound T to T' writes, before the
 * head, every bucket its decided changes touch: a bucket's own bound T_b then tells
 * which changes it already holds (those of windows before T_b), and no change between
 * a bucket's bound and the head's was decided that it lacks. So verifiers that run
 * together, one that crashes between its bucket writes and its head, and one that
 * settles again after another write the same values, as the count's head does.
 * Nothing on the write path changes: the events already carry the item, and its rank
 * is a function of the item.
 *
 * A full settlement (`settleFully`, recounts) rebuilds every bucket from the ledger.
 *
 * Buckets change only before a head write that moves the head's bound (or its count):
 * that is what lets a process keep bucket lists across requests, checked against the
 * head (`readRankSettlement`, paging/ranked-index.ts `RankCache`). Anything else that
 * writes buckets must move the head after them too.
 */
import { allRowsOf } from '../paging/partition-chunks.js';
import { childPrefixRange, levelWidth, rankPrefixes, rankedIndex, type LevelBucket, type RankBucket, type RankCache, type RankOrder } from '../paging/ranked-index.js';
import type { PositionIndex } from '../paging/types.js';
import type { Mutation, Store } from '../store/port.js';
import type { CountWriter } from './connection-counts.js';
import type { Row } from '../store/table.js';
import { HEAD_SLOT, connectionCountsTable, countItemsTable, countRanksTable } from './count-tables.js';

/** The rank of an item in its connection, for the count keys that have an index; null for the others. */
export type RankOfItem = (countKey: string) => ((item: string) => bigint) | null;

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

/** Mutations per batch of bucket writes (one partition). */
const BATCH = 200;

/** The rows of one bucket key, for writing. */
function bucketKey(key: string, level: number, prefix: bigint): Row {
  return { count_key: key, level, prefix };
}

/** Write buckets (`[level, prefix, count]`) as settled through `through`, a batch at a time. */
async function writeBuckets(store: Store, key: string, through: number, buckets: Array<[number, bigint, bigint]>): Promise<void> {
  const timestamp = BigInt(through) * 1000n;
  const mutations: Mutation[] = buckets.map(([level, prefix, count]) => ({
    kind: 'upsert',
    table: countRanksTable,
    row: { ...bucketKey(key, level, prefix), count, settled_through: BigInt(through) },
    options: { timestamp },
  }));
  for (let at = 0; at < mutations.length; at += BATCH) await store.batch(mutations.slice(at, at + BATCH));
}

/**
 * Add the changes decided from the head's bound up to `through` to the buckets they
 * touch (see the file comment); call before the head is written.
 */
export async function settleRanks(store: Store, key: string, rankOf: (item: string) => bigint, through: number, decided: readonly DecidedChange[]): Promise<void> {
  if (decided.length === 0) return;
  // Per bucket, its changes: [level, prefix] -> changes.
  const touched = new Map<string, { level: number; prefix: bigint; changes: DecidedChange[] }>();
  for (const change of decided) {
    rankPrefixes(rankOf(change.item)).forEach((prefix, level) => {
      const id = `${level}:${prefix}`;
      let bucket = touched.get(id);
      if (!bucket) touched.set(id, (bucket = { level, prefix, changes: [] }));
      bucket.changes.push(change);
    });
  }
  const list = [...touched.values()];
  const rows = await store.getMany(countRanksTable, list.map((b) => bucketKey(key, b.level, b.prefix)));
  const writes: Array<[number, bigint, bigint]> = [];
  list.forEach((bucket, i) => {
    const own = rows[i]?.settled_through as bigint | null | undefined;
    const bound = own == null ? -Infinity : Number(own);
    if (bound >= through) return;
    let count = (rows[i]?.count as bigint | null | undefined) ?? 0n;
    for (const c of bucket.changes) if (c.window >= bound) count += BigInt(c.sign);
    writes.push([bucket.level, bucket.prefix, count]);
  });
  await writeBuckets(store, key, through, writes);
}

/**
 * Rebuild every bucket from the items counted through `through` (a full settlement):
 * each bucket gets its count, and a bucket that no longer holds any gets 0.
 */
export async function rebuildRanks(store: Store, key: string, rankOf: (item: string) => bigint, through: number, items: readonly string[]): Promise<void> {
  const counts = new Map<string, [number, bigint, bigint]>();
  for (const row of await allRowsOf(store, countRanksTable, { count_key: key })) {
    counts.set(`${row.level as number}:${row.prefix as bigint}`, [row.level as number, row.prefix as bigint, 0n]);
  }
  for (const item of items) {
    rankPrefixes(rankOf(item)).forEach((prefix, level) => {
      const id = `${level}:${prefix}`;
      const bucket = counts.get(id) ?? [level, prefix, 0n];
      bucket[2] += 1n;
      counts.set(id, bucket);
    });
  }
  await writeBuckets(store, key, through, [...counts.values()]);
}

/**
 * The buckets of `key`'s index at `level` under `parent` (every bucket of level 0
 * without one), in prefix order: one slice. What `rankedIndex` reads.
 */
export async function readRankBuckets(store: Store, key: string, level: number, parent: bigint | undefined): Promise<RankBucket[]> {
  const range = parent === undefined ? null : childPrefixRange(level, parent);
  const width = levelWidth(level);
  const rows = await store.slice(countRanksTable, {
    partition: { count_key: key },
    lower: { values: range ? [level, range.lowest] : [level], inclusive: true },
    upper: { values: range ? [level, range.highest] : [level], inclusive: true },
    limit: 2 ** width + 1,
  });
  return rows.map((r) => ({ prefix: r.prefix as bigint, count: Number(r.count as bigint) }));
}

/** The first `limit` buckets of `key`'s index, of every level, in level then prefix order: one slice. */
export async function readRankTop(store: Store, key: string, limit: number): Promise<LevelBucket[]> {
  const rows = await store.slice(countRanksTable, { partition: { count_key: key }, limit });
  return rows.map((r) => ({ level: r.level as number, prefix: r.prefix as bigint, count: Number(r.count as bigint) }));
}

/**
 * The settlement of `key`'s index as one token: the head's bound and count, which every
 * settlement that changes a bucket moves (see the file comment). One read.
 */
export async function readRankSettlement(store: Store, key: string): Promise<string> {
  const head = await store.get(connectionCountsTable, { count_key: key, slot: HEAD_SLOT });
  return `${(head?.settled_through as bigint | null | undefined) ?? ''}/${(head?.settled_count as bigint | null | undefined) ?? ''}`;
}

/**
 * The counted index of count `key`, for the paging engine's `offset`; with the
 * process's `cache`, its bucket lists are kept across requests (`RankCache`).
 */
export function countedIndex(store: Store, key: string, order: RankOrder, cache?: RankCache): PositionIndex {
  return rankedIndex({
    order,
    buckets: (level, parent) => readRankBuckets(store, key, level, parent),
    top: (limit) => readRankTop(store, key, limit),
    ...(cache && { cached: { cache, id: key, settlement: () => readRankSettlement(store, key) } }),
  });
}
