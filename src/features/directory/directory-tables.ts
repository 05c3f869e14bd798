/** Tables of the user directory: hand-built composite indexes (seed 004). */
import { defineTable } from '../../store/table.js';

/**
 * The index: entries `{value, user_id, ts}` in clustering order, as seed 004's
 * composite columns. Partitioning: seed 004 keeps one row (partition) per index, which
 * makes each index a single hot partition that grows with the user base. Here a
 * partition is (index, bucket):
 * - last_name: the bucket is the first two characters of the lower-cased name. Prefix
 *   order of buckets equals value order, so a walk over the registered buckets in
 *   order serves prefix queries in name order; at millions of users the largest
 *   two-letter prefix holds a few per cent of users, tens of thousands of ~80-byte rows,
 *   well under Cassandra's ~100 MB partition guidance.
 * - location: the bucket is the location plus one of 4 shards by the user id's first
 *   hex digit (0-3, 4-7, 8-b, c-f), so even a city of 4 million users stays near a
 *   million rows per partition, and a walk over the 4 shards in order is user-id order.
 */
export const userIndexTable = defineTable({
  name: 'user_index',
  columns: { index_name: 'text', bucket: 'text', value: 'text', user_id: 'uuid', ts: 'timeuuid' },
  partitionKey: ['index_name', 'bucket'],
  clustering: ['value', 'user_id', 'ts'],
});

/**
 * seed 004's Users_Index_Entries: per user, the index values it currently has, so an
 * update finds the old entries to delete without reading the user row, and concurrent
 * updates need no lock. The name index lists each of its versions here too (index
 * `name`, `ts` the version's time, `value` the profile its entries were written from).
 */
export const userIndexEntriesTable = defineTable({
  name: 'user_index_entries',
  columns: { user_id: 'uuid', index_name: 'text', ts: 'timeuuid', value: 'text', bucket: 'text' },
  partitionKey: ['user_id'],
  clustering: ['index_name', 'ts'],
});

/**
 * The last-name buckets that hold entries, in order: written and pruned only by Paxos
 * rounds (features/bucket-registry.ts), so a bucket a rename emptied is dropped.
 */
export const userIndexBucketsTable = defineTable({
  name: 'user_index_buckets',
  columns: { index_name: 'text', bucket: 'text' },
  partitionKey: ['index_name'],
  clustering: ['bucket'],
});

/**
 * The name index (name-index.ts): per folded prefix of a name part (its first one, two
 * or three characters), the users whose name has such a part, in result order (folded
 * last name, folded first name, user id, then the entry's version), each entry holding
 * what a result page shows, so a page is one slice. Sizing: a one-character partition
 * holds every part starting with that letter; at a million users the largest (s, about
 * a tenth of all parts) holds some 250,000 entries of ~150 bytes, ~40 MB, under
 * Cassandra's ~100 MB guidance; two- and three-character partitions hold a few per
 * cent and a fraction of a per cent. Beyond that, shard the one-character partitions.
 */
export const userNameIndexTable = defineTable({
  name: 'user_name_index',
  columns: {
    prefix: 'text',
    last_key: 'text',
    first_key: 'text',
    user_id: 'uuid',
    version: 'bigint',
    parts: 'text',
    username: 'text',
    display_name: 'text',
    location: 'text',
    first_name: 'text',
    last_name: 'text',
    created_at: 'timestamp',
  },
  partitionKey: ['prefix'],
  clustering: ['last_key', 'first_key', 'user_id', 'version'],
});

/** Every table this feature owns. */
export const directoryTables = [userIndexTable, userIndexEntriesTable, userIndexBucketsTable, userNameIndexTable];
