/**
 * The change log behind live connections: every write that changes a connection also
 * appends a change row here, in the same logged batch or saga step, in two tables:
 * - `live_feed_changes`, one partition per feed: a server with subscribers to a feed
 *   polls that feed alone, and a client resuming from a cursor reads it back. Its
 *   partition key is the feed's name alone, a text, so a feed named as the count its
 *   write also changes (`posts:<authorId>`) shares the count's partition key value:
 *   Cassandra applies a logged batch as one mutation per partition key value (whatever
 *   the tables), so the change row adds no partition to `createPost`'s batch (issue 39).
 *   A partition holds the feed's last `LIVE_RETENTION_S` of changes, the older ones
 *   expired (below every read's lower bound, so no read passes over them);
 * - `live_change_pointers`, a pointer (feed, change id) to each change, no payload, in
 *   partitions keyed as the count verifier's marks are (job, hour, one of 4 shards by
 *   the feed's name). A change to a counted feed (`posts:<authorId>`, whose batch
 *   writes the count's mark, `window_marks`, under that very key with the feed's name
 *   as subject) writes no pointer: the mark stands in for it, one statement and row
 *   fewer a post (issue 39; `LIVE_COUNTED_POINTERS` writes it anyway, for servers of
 *   the build before, which read pointers only). A server with many active feeds reads
 *   these few partitions and the marks' beside them per poll, then only the feeds that
 *   changed, instead of every feed (live-hub.ts chooses). A partition holds an hour of
 *   a quarter of the pointers of every feed but the counted ones: rows the size of the
 *   marks beside them.
 *   It replaces `live_change_shards` (full rows by (shard, 5-minute bucket): one more
 *   partition and a second copy of every payload in every batch), which nothing reads
 *   or writes any more (docs/operations.md, "Upgrading": drop it).
 * Rows are written with a TTL (the retention, `LIVE_RETENTION_S`) and never deleted: a
 * TTL'd time series, compacted by time window so whole SSTables drop once expired
 * (Cassandra's TimeWindowCompactionStrategy), with a short grace period since no
 * deletion needs to outlive a late write.
 */
import { MARK_PARTITION_MS, MARK_PARTITIONS_PER_HOUR } from '../background/windowed-job.js';
import { defineTable } from '../store/table.js';

/** Width of a feed's partition in the retired `live_changes` (ms): an hour of one feed's changes. */
export const FEED_BUCKET_MS = 3_600_000;
/** Partitions of one hour of `live_change_pointers` (the count verifier's marks' shards: every server must agree). */
export const POINTER_SHARDS = MARK_PARTITIONS_PER_HOUR;
/** Width of a partition of `live_change_pointers` (ms): an hour, as the marks'. */
export const POINTER_BUCKET_MS = MARK_PARTITION_MS;
/**
 * Grace period of the change log (s): its rows are only ever TTL'd, never deleted, so
 * no tombstone has to hide a late write; three hours outlives Cassandra's default hint
 * window, so an expired cell is never resurrected by a replica that missed its write.
 */
const CHANGE_LOG_GC_GRACE_SECONDS = 10_800;

/** One feed's changes, in change-id (time) order: the feed's partition (see the file comment). */
export const liveFeedChangesTable = defineTable({
  name: 'live_feed_changes',
  columns: { feed: 'text', change_id: 'timeuuid', kind: 'text', item: 'text', payload: 'text' },
  partitionKey: ['feed'],
  clustering: ['change_id'],
  gcGraceSeconds: CHANGE_LOG_GC_GRACE_SECONDS,
  timeWindowMinutes: 60,
});

/**
 * The per-feed layout before issue 39, an hour per partition: no longer written, still
 * read by a resuming subscriber's catch-up and by `readNewestChange`, so that a cursor
 * given before the upgrade, and a change written by a server not yet upgraded, are
 * found. Drop it one release later (docs/operations.md, "Upgrading").
 */
export const legacyLiveChangesTable = defineTable({
  name: 'live_changes',
  columns: { feed: 'text', bucket: 'bigint', change_id: 'timeuuid', kind: 'text', item: 'text', payload: 'text' },
  partitionKey: ['feed', 'bucket'],
  clustering: ['change_id'],
  gcGraceSeconds: CHANGE_LOG_GC_GRACE_SECONDS,
  timeWindowMinutes: 60,
});

/**
 * A pointer to every change: partitioned as the count verifier's marks (windowed-job.ts
 * `markPartitionOf`, job `counts`, the feed's name as subject), clustered by change id.
 * Only key columns: the payload is read from the feed's own partition.
 */
export const liveChangePointersTable = defineTable({
  name: 'live_change_pointers',
  columns: { job: 'text', hour: 'bigint', shard: 'int', change_id: 'timeuuid', feed: 'text' },
  partitionKey: ['job', 'hour', 'shard'],
  clustering: ['change_id', 'feed'],
  gcGraceSeconds: CHANGE_LOG_GC_GRACE_SECONDS,
  timeWindowMinutes: 60,
});

/** Every table of the change log. */
export const liveTables = [liveFeedChangesTable, liveChangePointersTable, legacyLiveChangesTable];
