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
import type { Row } from '../store/table.js';
import { HEAD_SLOT, connectionCountsTable, countRanksTable } from './count-tables.js';

/** The rank of an item in its connection, for the count keys that have an index; null for the others. */
export type RankOfItem = (countKey: string) => ((item: string) => bigint) | null;

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
