/**
 * Writing and reading the change log (change-log-tables.ts). A feature describes a
 * change to one of its connections as a `Change` and appends the writer's mutations to
 * the logged batch (or saga step) that makes the change; pollers and resuming clients
 * read the log back from a position.
 *
 * Change ids are timeuuids from a hybrid logical clock per process (`ChangeClock`):
 * never below the process clock, strictly increasing per process, and above any id the
 * caller names (`after`), so a change to an item made after another change to it sorts
 * after it even when the two servers' clocks disagree (a post deleted on a server whose
 * clock is behind the one that created it). An id is thus at least its writer's clock
 * at the time of the write, which is what bounds how late a change can land behind the
 * ids already read (live-hub.ts).
 */
import { randomBytes } from 'node:crypto';
import type { Clock } from '../store/clock.js';
import type { IdSource } from '../store/id-source.js';
import type { Mutation, Store } from '../store/port.js';
import type { Row, TableSpec } from '../store/table.js';
import { microsOfTimeuuid, minTimeuuidOfMicros, timeuuidOfMicros } from '../store/timeuuid.js';
import { ReadCountingStore } from '../background/read-counting-store.js';
import { isMarkOf, markPartitionOf, splitMark, windowMarksTable, windowOf } from '../background/windowed-job.js';
import { COUNT_JOB } from '../counts/connection-counts.js';
import { allRowsOf } from '../paging/partition-chunks.js';
import { FEED_BUCKET_MS, POINTER_BUCKET_MS, POINTER_SHARDS, legacyLiveChangesTable, liveChangePointersTable, liveFeedChangesTable } from './change-log-tables.js';

/** A change to one connection, as it travels through the log. */
export interface Change {
  /** The feed: which connection changed (`posts:<authorId>`, `list:<listId>`, …). */
  readonly feed: string;
  /** Its position in the feed: a timeuuid from the writer's `ChangeClock`. */
  readonly id: string;
  /** What happened, in the feature's words (`added`, `deleted`, `MOVED`, …). */
  readonly kind: string;
  /**
   * The change's identity within its feed, the same for every attempt at the same
   * change (a retried or recovered write): a reader delivers one change per item.
   */
  readonly item: string;
  /** What a subscriber needs to render the change without reading anything else. */
  readonly payload: Readonly<Record<string, unknown>>;
}

/**
 * A process's hybrid logical clock for change ids (see the file comment). Its ids share
 * one random clock sequence and node, drawn once, as a version 1 uuid's do: its
 * microseconds never repeat, so neither do its ids, and another process's node differs.
 */
export class ChangeClock {
  private last = 0n;
  private readonly node: Buffer;

  constructor(private readonly clock: Clock) {
    this.node = randomBytes(8);
  }

  /** Microseconds for a new change id: above the last one, above `after`, never below the clock. */
  nextMicros(after?: bigint): bigint {
    let t = this.clock.nowMicros();
    if (t <= this.last) t = this.last + 1n;
    if (after !== undefined && t <= after) t = after + 1n;
    this.last = t;
    return t;
  }

  /** A new change id (timeuuid), above the change id `after` when given. */
  next(after?: string): string {
    return timeuuidOfMicros(this.nextMicros(after === undefined ? undefined : microsOfTimeuuid(after)), () => Buffer.from(this.node));
  }
}

/** The partition bucket (ms) of a change id's time in the retired `live_changes`. */
export function feedBucketOf(micros: bigint): bigint {
  const ms = micros / 1000n;
  return ms - (((ms % BigInt(FEED_BUCKET_MS)) + BigInt(FEED_BUCKET_MS)) % BigInt(FEED_BUCKET_MS));
}

/** The partition bucket (ms) of a change id's time in `live_change_pointers`: its hour. */
export function pointerBucketOf(micros: bigint): bigint {
  const ms = micros / 1000n;
  return ms - (((ms % BigInt(POINTER_BUCKET_MS)) + BigInt(POINTER_BUCKET_MS)) % BigInt(POINTER_BUCKET_MS));
}

/**
 * The partition of a change's pointer: the one of the mark that a count named as the
 * feed (`posts:<authorId>`) writes in the same batch, so the pointer rides in the mark's
 * mutation (change-log-tables.ts).
 */
export function pointerPartitionOf(feed: string, micros: bigint): { job: string; hour: bigint; shard: number } {
  return markPartitionOf(COUNT_JOB, feed, Number(micros / 1000n));
}

/** Appends changes to the log: what a feature's write path is given. */
export interface ChangeWriter {
  /** A new change id from the process's change clock, above the change id `after` when given. */
  nextId(after?: string): string;
  /**
   * The mutations that append `change` to its feed, and its pointer, to go in the
   * write's logged batch. A feed named as the count the batch also changes costs the
   * batch no partition: its row shares the count's key (change-log-tables.ts). `batch`:
   * the rest of the logged batch, drawn after this change's id. When it writes the mark
   * of the count named as the feed (`posts:<authorId>`), the mark stands in for the
   * pointer, and none is written (unless `LIVE_COUNTED_POINTERS`).
   */
  mutations(change: Change, batch?: readonly Mutation[]): Mutation[];
}

/**
 * A writer over the process's change clock, with the retention as every row's TTL.
 * `countedPointers` (`LIVE_COUNTED_POINTERS`): write the pointer of a counted feed's
 * change too, for servers of an earlier build, which read pointers only.
 */
export function createChangeWriter(clock: ChangeClock, options: { retentionSeconds: number; countedPointers?: boolean }): ChangeWriter {
  const ttl = options.retentionSeconds;
  const countedPointers = options.countedPointers ?? false;
  return {
    nextId: (after) => clock.next(after),
    mutations(change, batch = []): Mutation[] {
      const row: Mutation = {
        kind: 'upsert',
        table: liveFeedChangesTable,
        row: { feed: change.feed, change_id: change.id, kind: change.kind, item: change.item, payload: JSON.stringify(change.payload) },
        options: { ttl },
      };
      // The count's mark names the feed, in the partition the pointer would go to, at a
      // time drawn after the change's id: readers find the change through it (readFeedMarks).
      if (!countedPointers && batch.some((m) => isMarkOf(m, COUNT_JOB, change.feed))) return [row];
      const micros = microsOfTimeuuid(change.id);
      return [row, { kind: 'upsert', table: liveChangePointersTable, row: { ...pointerPartitionOf(change.feed, micros), change_id: change.id, feed: change.feed }, options: { ttl } }];
    },
  };
}

/** A change from a row of a feed's table. */
export function changeFromRow(row: Row): Change {
  return {
    feed: row.feed as string,
    id: row.change_id as string,
    kind: row.kind as string,
    item: row.item as string,
    payload: JSON.parse(row.payload as string) as Record<string, unknown>,
  };
}

/** What a read of the log returned. */
export interface LogRead {
  /**
   * The changes read, in id order, each below `completeBelow`: what a partition held
   * beyond the point where another stopped at its limit is left for the next read, so
   * no change is passed over by one read and then delivered after a later one.
   */
  readonly changes: Change[];
  /**
   * Every change with an id below this (µs) that existed when the read began is among
   * `changes`: the end of the range asked for, or where a read stopped at its limit.
   */
  readonly completeBelow: bigint;
}

/** The buckets (ms) from the one holding `from` through the one holding `through`, both µs, `width` ms apart. */
function bucketsBetween(from: bigint, through: bigint, bucketOf: (micros: bigint) => bigint, width: number): bigint[] {
  const out: bigint[] = [];
  for (let b = bucketOf(from); b <= bucketOf(through); b += BigInt(width)) out.push(b);
  return out;
}

/**
 * One partition's changes from `from` (µs, inclusive) on, below `below` when given, up
 * to `limit`: what it read, and below which id it is complete.
 */
async function readPartition(store: Store, table: TableSpec, partition: Row, from: bigint, limit: number, bucketEnd: bigint, below?: bigint): Promise<LogRead> {
  const read = await readRows(store, table, partition, from, limit, bucketEnd, below);
  return { changes: read.rows.map(changeFromRow), completeBelow: read.completeBelow };
}

/** `readPartition`'s rows, as they are (a pointer's or a change's), each with its change id. */
async function readRows(
  store: Store,
  table: TableSpec,
  partition: Row,
  from: bigint,
  limit: number,
  bucketEnd: bigint,
  below?: bigint,
): Promise<{ rows: Row[]; completeBelow: bigint }> {
  const upper = below !== undefined && below < bucketEnd ? { values: [minTimeuuidOfMicros(below)], inclusive: false } : undefined;
  const rows = await store.slice(table, { partition, lower: { values: [minTimeuuidOfMicros(from)], inclusive: true }, ...(upper ? { upper } : {}), limit });
  if (rows.length < limit) return { rows, completeBelow: upper ? below! : bucketEnd };
  // Cut at its limit: rows sharing the last one's microsecond may lie beyond it.
  const completeBelow = microsOfTimeuuid(rows[rows.length - 1]!.change_id as string);
  return { rows: rows.filter((r) => microsOfTimeuuid(r.change_id as string) < completeBelow), completeBelow };
}

/**
 * A feed's changes with ids from `from` through `through` (µs), in id order: one slice
 * of its partition, up to `limit` rows. The read is complete below `completeBelow`,
 * which is past `through` unless the slice filled its limit. `below` (µs, exclusive)
 * bounds the slice itself, for a range that ends before the newest changes (a trailing
 * pass's); without it the partition is read to its end. `legacy` also reads the retired
 * `live_changes` (a resuming subscriber's catch-up, whose cursor may predate the
 * upgrade): the two reads merged, complete below the lower of their bounds.
 */
export async function readFeed(
  store: Store,
  feed: string,
  from: bigint,
  through: bigint,
  limit: number,
  below?: bigint,
  options: { legacy?: boolean } = {},
): Promise<LogRead & { reads: number }> {
  const read = await readPartition(store, liveFeedChangesTable, { feed }, from, limit, UNBOUNDED, below);
  const last = read.changes.at(-1);
  // Read to the partition's end: complete through `through`, and past every row read.
  const end = last && microsOfTimeuuid(last.id) >= through ? microsOfTimeuuid(last.id) + 1n : through + 1n;
  const current = { changes: read.changes, completeBelow: read.completeBelow === UNBOUNDED ? end : read.completeBelow, reads: 1 };
  if (!options.legacy) return current;
  const legacy = await readLegacyFeed(store, feed, from, through, limit, below);
  const completeBelow = current.completeBelow < legacy.completeBelow ? current.completeBelow : legacy.completeBelow;
  const changes = [...current.changes, ...legacy.changes].filter((c) => microsOfTimeuuid(c.id) < completeBelow).sort(compareChanges);
  return { changes, completeBelow, reads: current.reads + legacy.reads };
}

/** Past any change id (µs): the bound of a partition read to its end. */
const UNBOUNDED = 1n << 62n;

/** `readFeed` over the retired `live_changes`: one slice per hour bucket (normally one). */
async function readLegacyFeed(store: Store, feed: string, from: bigint, through: bigint, limit: number, below?: bigint): Promise<LogRead & { reads: number }> {
  const changes: Change[] = [];
  let reads = 0;
  for (const bucket of bucketsBetween(from, through, feedBucketOf, FEED_BUCKET_MS)) {
    const bucketEnd = (bucket + BigInt(FEED_BUCKET_MS)) * 1000n;
    const read = await readPartition(store, legacyLiveChangesTable, { feed, bucket }, from, limit - changes.length, bucketEnd, below);
    reads++;
    changes.push(...read.changes);
    if (read.completeBelow < bucketEnd || changes.length >= limit) {
      return { changes, completeBelow: read.completeBelow < bucketEnd ? read.completeBelow : bucketEnd, reads };
    }
  }
  return { changes, completeBelow: (feedBucketOf(through) + BigInt(FEED_BUCKET_MS)) * 1000n, reads };
}

/** A change's pointer (`live_change_pointers`): its feed and id. */
export interface Pointer {
  readonly feed: string;
  readonly id: string;
}

/**
 * Every feed's pointers with ids from `from` through `through` (µs): the pointer
 * partitions of each hour in between (POINTER_SHARDS an hour) read side by side, each up
 * to `limit` rows, merged in id order. Complete below the lowest point where a partition
 * stopped at its limit.
 */
export async function readPointers(store: Store, from: bigint, through: bigint, limit: number, below?: bigint): Promise<{ pointers: Pointer[]; completeBelow: bigint; reads: number }> {
  const buckets = bucketsBetween(from, through, pointerBucketOf, POINTER_BUCKET_MS);
  const reads = await Promise.all(
    Array.from({ length: POINTER_SHARDS }, (_, shard) =>
      Promise.all(
        buckets.map((hour) =>
          readRows(store, liveChangePointersTable, { job: COUNT_JOB, hour, shard }, from, limit, (hour + BigInt(POINTER_BUCKET_MS)) * 1000n, below),
        ),
      ),
    ),
  );
  let completeBelow = (pointerBucketOf(through) + BigInt(POINTER_BUCKET_MS)) * 1000n;
  const pointers: Pointer[] = [];
  for (const shard of reads) {
    for (const [i, read] of shard.entries()) {
      for (const r of read.rows) pointers.push({ feed: r.feed as string, id: r.change_id as string });
      const bucketEnd = (buckets[i]! + BigInt(POINTER_BUCKET_MS)) * 1000n;
      // A bucket cut short: nothing of this shard is known past its last row.
      if (read.completeBelow < bucketEnd && read.completeBelow < completeBelow) completeBelow = read.completeBelow;
    }
  }
  return { pointers: pointers.filter((p) => microsOfTimeuuid(p.id) < completeBelow), completeBelow, reads: POINTER_SHARDS * buckets.length };
}

/**
 * A count's mark that names a feed (windowed-job.ts, job `counts`): a change to the feed
 * written in the 5-s window from `window` (ms), with no pointer of its own (a counted
 * feed, `createChangeWriter`). `tag`: the count's event (`countMarkTag`), or null.
 */
export interface FeedMark {
  readonly feed: string;
  readonly window: number;
  readonly tag: string | null;
}

/** Rows per slice of a mark partition. */
const MARK_READ_CHUNK = 1_000;

/**
 * The count marks naming any of `feeds` in the windows from the one holding `fromMs` on:
 * the mark partitions of every hour from there through the one holding `through` (µs),
 * POINTER_SHARDS an hour, each read to its end a slice at a time (a mark says only
 * which feed changed, so nothing is left for a later read). `rows`: every mark read.
 */
export async function readFeedMarks(store: Store, feeds: ReadonlySet<string>, fromMs: number, through: bigint): Promise<{ marks: FeedMark[]; rows: number; reads: number }> {
  const from = BigInt(windowOf(fromMs));
  const counting = new ReadCountingStore(store);
  const hours = bucketsBetween(from * 1000n, through, pointerBucketOf, POINTER_BUCKET_MS);
  const partitions = await Promise.all(
    hours.flatMap((hour) =>
      Array.from({ length: POINTER_SHARDS }, (_, shard) =>
        allRowsOf(counting, windowMarksTable, { job: COUNT_JOB, hour, shard }, { lower: { values: [from], inclusive: true }, chunk: MARK_READ_CHUNK }),
      ),
    ),
  );
  const marks: FeedMark[] = [];
  let rows = 0;
  for (const partition of partitions) {
    rows += partition.length;
    for (const r of partition) {
      const { subject, tag } = splitMark(r.subject as string);
      if (feeds.has(subject)) marks.push({ feed: subject, window: Number(r.window_start as bigint), tag });
    }
  }
  return { marks, rows, reads: counting.reads };
}

/** Feeds read at once by `readPointedFeeds`. */
const POINTED_READ_CONCURRENCY = 32;

/** What `readPointedFeeds` reads besides the pointers. */
export interface PointedReadOptions {
  /** Bounds the feed reads (µs, exclusive), for a range that ends before the newest changes. */
  readonly below?: bigint;
  /**
   * Pointers whose changes the caller needs no more (a poll's subscribers all have
   * them): a feed whose pointers are all settled is not read for them.
   */
  readonly settled?: (pointer: Pointer) => boolean;
  /**
   * Read the count marks too (`readFeedMarks`) from `fromMs`: each of the feeds that a
   * mark not `settled` names is read from the range's start. Their changes carry no
   * pointer; a change's id is at most the clock skew past its mark's time, so a
   * caller asks from that far before the range.
   */
  readonly marks?: { readonly fromMs: number; readonly settled?: (mark: FeedMark) => boolean };
  /** Feeds to read from the range's start whatever the pointers say (those a trailing pass found marked). */
  readonly alsoRead?: ReadonlySet<string>;
}

/**
 * The changes of `feeds` with ids from `from` through `through` (µs), in id order,
 * found through the pointers (`readPointers`) and, when asked, the count marks
 * (`options.marks`): then each of `feeds` that a pointer names is read from its first
 * pointer on, and each that a mark names from `from`, below where the pointers are
 * complete (a change whose pointer has not landed yet lies within the window the next
 * read covers again). A feed whose pointers and marks are all settled is not read, and
 * its changes are left out. `pointers`: the pointer and mark rows read; `ourPointers`:
 * those of `feeds`; `feedsRead`: the feeds read for their payloads.
 */
export async function readPointedFeeds(
  store: Store,
  feeds: ReadonlySet<string>,
  from: bigint,
  through: bigint,
  limit: number,
  options: PointedReadOptions = {},
): Promise<LogRead & { reads: number; pointers: number; ourPointers: number; feedsRead: number }> {
  const { below, settled = () => false, marks } = options;
  const [read, marked] = await Promise.all([readPointers(store, from, through, limit, below), marks ? readFeedMarks(store, feeds, marks.fromMs, through) : null]);
  const first = new Map<string, bigint>();
  for (const feed of options.alsoRead ?? []) if (feeds.has(feed)) first.set(feed, from);
  let ourPointers = marked?.marks.length ?? 0;
  for (const mark of marked?.marks ?? []) if (!marks!.settled?.(mark)) first.set(mark.feed, from);
  for (const p of read.pointers) {
    if (!feeds.has(p.feed)) continue;
    ourPointers++;
    if (settled(p)) continue;
    const at = microsOfTimeuuid(p.id);
    const known = first.get(p.feed);
    if (known === undefined || at < known) first.set(p.feed, at);
  }
  let completeBelow = read.completeBelow;
  const changes: Change[] = [];
  const queue = [...first];
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const [feed, at] = next;
      const part = await readPartition(store, liveFeedChangesTable, { feed }, at, limit, UNBOUNDED, read.completeBelow);
      changes.push(...part.changes);
      if (part.completeBelow < completeBelow) completeBelow = part.completeBelow;
    }
  };
  await Promise.all(Array.from({ length: Math.min(POINTED_READ_CONCURRENCY, queue.length) }, worker));
  changes.sort(compareChanges);
  return {
    changes: changes.filter((c) => microsOfTimeuuid(c.id) < completeBelow),
    completeBelow,
    reads: read.reads + (marked?.reads ?? 0) + first.size,
    pointers: read.pointers.length + (marked?.rows ?? 0),
    ourPointers,
    feedsRead: first.size,
  };
}

/** Order of two changes: by id time, then by id (any fixed order serves for ties). */
export function compareChanges(a: Change, b: Change): number {
  const ta = microsOfTimeuuid(a.id);
  const tb = microsOfTimeuuid(b.id);
  return ta < tb ? -1 : ta > tb ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * The newest change of a feed with an id from `from` on, up to `through` (µs) or past
 * it (a writer's clock ahead), or null: the newest row of its partition, or of the
 * retired `live_changes` (newest bucket first, one row each) when that one is newer, as
 * one written by a server not yet upgraded would be.
 */
export async function readNewestChange(store: Store, feed: string, from: bigint, through: bigint): Promise<Change | null> {
  const newest = async (table: TableSpec, partition: Row): Promise<Change | null> => {
    const [row] = await store.slice(table, {
      partition,
      lower: { values: [minTimeuuidOfMicros(from)], inclusive: true },
      reverse: true,
      limit: 1,
    });
    return row ? changeFromRow(row) : null;
  };
  const current = await newest(liveFeedChangesTable, { feed });
  let legacy: Change | null = null;
  for (const bucket of bucketsBetween(from, through, feedBucketOf, FEED_BUCKET_MS).reverse()) {
    if ((legacy = await newest(legacyLiveChangesTable, { feed, bucket }))) break;
  }
  return current && (!legacy || compareChanges(current, legacy) > 0) ? current : legacy;
}

/**
 * `writer` for one request: while the request runs a mutation's plan (an idempotency
 * key's, store/id-source.ts), change ids come from the plan, so a redo announces the
 * same change (the same row) instead of a second one; otherwise from the process clock.
 */
export function plannedChangeWriter(writer: ChangeWriter, ids: IdSource): ChangeWriter {
  return {
    nextId(after) {
      const micros = ids.plannedMicros(after === undefined ? undefined : microsOfTimeuuid(after));
      return micros === null ? writer.nextId(after) : timeuuidOfMicros(micros, (n) => ids.bytes(n));
    },
    mutations: (change, batch) => writer.mutations(change, batch),
  };
}
