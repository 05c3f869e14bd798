/** Tables of the suspended-users feature (seed 000). */
import { defineTable } from '../../store/table.js';

/**
 * seed 000's sorted set: `PRIMARY KEY ((bucket, status), occurred_on, user_id) WITH
 * CLUSTERING ORDER BY (occurred_on DESC)`. `user_id` stays ASC, so the clustering key
 * mixes orders and "rows after this key" is split into single-range reads.
 */
export const usersByStatusTable = defineTable({
  name: 'users_by_status',
  columns: { bucket: 'text', status: 'text', occurred_on: 'timestamp', user_id: 'uuid', reason: 'text' },
  partitionKey: ['bucket', 'status'],
  clustering: [
    { column: 'occurred_on', order: 'DESC' },
    { column: 'user_id', order: 'ASC' },
  ],
});

/**
 * seed 000's reverse lookup: from a user alone to `occurred_on` and the bucket, so an
 * unsuspension needs no secondary index. `saga_id` marks which suspension owns the row,
 * so a compensation never deletes another saga's lookup. `confirmed` is set by the
 * suspension's last step: until then (and if it never comes) reads do not show it.
 * `change_id` is the live change that announced the suspension (set with `confirmed`):
 * the unsuspension's change goes above it, so subscribers see the two in order.
 */
export const suspendedUsersTable = defineTable({
  name: 'suspended_users',
  columns: {
    user_id: 'uuid',
    occurred_on: 'timestamp',
    bucket: 'text',
    reason: 'text',
    saga_id: 'timeuuid',
    confirmed: 'boolean',
    change_id: 'timeuuid',
  },
  partitionKey: ['user_id'],
});

/**
 * The buckets that hold rows of a status, newest first: paging reads these lazily
 * instead of probing every month since the beginning of time. Written and pruned only
 * by Paxos rounds (features/bucket-registry.ts): an unsuspension drops the bucket it
 * emptied.
 */
export const statusBucketsTable = defineTable({
  name: 'status_buckets',
  columns: { status: 'text', bucket: 'text' },
  partitionKey: ['status'],
  clustering: [{ column: 'bucket', order: 'DESC' }],
});

/** Every table this feature owns. */
export const suspensionTables = [usersByStatusTable, suspendedUsersTable, statusBucketsTable];

/** The status this feature writes. */
export const SUSPENDED = 'SUSPENDED';
