/**
 * The change log behind live connections: every write that changes a connection also
 * appends a change row here, in the same logged batch or saga step. Two layouts hold
 * the same rows:
 * - `live_feed_changes`, one partition per feed: a server with subscribers to a feed
 *   polls that feed alone, and a client resuming from a cursor reads it back. Its
 *   partition key is the feed's name alone, a text, so a feed named as the count its
 *   write also changes (`posts:<authorId>`) shares the count's partition key value:
 *   Cassandra applies a logged batch as one mutation per partition key value (whatever
 *   the tables), so the change row adds no partition to `createPost`'s batch (issue 39).
 *   A partition holds the feed's last `LIVE_RETENTION_S` of changes, the older ones
 *   expired (below every read's lower bound, so no read passes over them);
 * - `live_change_shards`, partitioned by (shard, 5-minute bucket): a few partitions
 *   that hold every feed's changes, so a server with many active feeds reads a fixed
 *   number of partitions per poll instead of one per feed (live-hub.ts chooses).
 * Rows are written with a TTL (the retention, `LIVE_RETENTION_S`) and never deleted: a
 * TTL'd time series, compacted by time window so whole SSTables drop once expired
 * (Cassandra's TimeWindowCompactionStrategy), with a short grace period since no
 * deletion needs to outlive a late write.
 */
import { defineTable } from '../store/table.js';

/** Width of a feed's partition in the retired `live_changes` (ms): an hour of one feed's changes. */
export const FEED_BUCKET_MS = 3_600_000;
/** Width of a shard's partition in `live_change_shards` (ms): five minutes of every feed's changes. */
export const SHARD_BUCKET_MS = 300_000;
/** How many shards share every feed's changes (a constant: every server must agree on it). */
export const CHANGE_SHARDS = 8;
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

/** Every feed's changes, spread over CHANGE_SHARDS shards, five minutes per partition. */
export const liveChangeShardsTable = defineTable({
  name: 'live_change_shards',
  columns: { shard: 'int', bucket: 'bigint', change_id: 'timeuuid', feed: 'text', kind: 'text', item: 'text', payload: 'text' },
  partitionKey: ['shard', 'bucket'],
  clustering: ['change_id', 'feed'],
  gcGraceSeconds: CHANGE_LOG_GC_GRACE_SECONDS,
  timeWindowMinutes: 60,
});

/** Every table of the change log. */
export const liveTables = [liveFeedChangesTable, liveChangeShardsTable, legacyLiveChangesTable];
