/** Tables of the ordered lists (seed 002's ledger list). */
import { defineTable } from '../../store/table.js';

/** One row per list. */
export const listsTable = defineTable({
  name: 'lists',
  columns: { list_id: 'uuid', title: 'text', owner_id: 'uuid', created_at: 'timestamp' },
  partitionKey: ['list_id'],
});

/**
 * seed 002's LedgerList: items in clustering order `(weight, seq, item_id, deleted)`, so
 * a page is one slice. `deleted = true` is the soft-delete marker the applier writes in
 * step 1 of a move, next to the original row it shadows.
 */
export const listItemsTable = defineTable({
  name: 'list_items',
  columns: { list_id: 'uuid', weight: 'bigint', seq: 'bigint', item_id: 'uuid', deleted: 'boolean', label: 'text' },
  partitionKey: ['list_id'],
  clustering: ['weight', 'seq', 'item_id', 'deleted'],
});

/**
 * seed 002's LedgerTransactions: every change to a list, in transaction-id order,
 * until the applier has applied it. Readers apply the pending ones to what they read.
 */
export const listTransactionsTable = defineTable({
  name: 'list_transactions',
  columns: { list_id: 'uuid', tx_id: 'timeuuid', kind: 'text', item_id: 'uuid', payload: 'text' },
  partitionKey: ['list_id'],
  clustering: ['tx_id'],
});

/** Where each applied item is stored (its list never changes; its position does). */
export const listItemIndexTable = defineTable({
  name: 'list_item_index',
  columns: { item_id: 'uuid', list_id: 'uuid', weight: 'bigint', seq: 'bigint', label: 'text' },
  partitionKey: ['item_id'],
});

/**
 * Lists with transactions waiting for the applier, spread over a few partitions. An
 * append re-marks its list; the applier unmarks a drained list with the timestamp of
 * the read that found it empty, so a later append's mark always survives.
 */
export const pendingListsTable = defineTable({
  name: 'pending_lists',
  columns: { shard: 'int', list_id: 'uuid' },
  partitionKey: ['shard'],
  clustering: ['list_id'],
});

/**
 * Who applies a list's transactions right now: claimed with insert-if-not-exists and a
 * TTL, so two appliers (two server processes) never interleave one list's steps, and a
 * crashed applier's claim expires by itself.
 */
export const listApplierLeasesTable = defineTable({
  name: 'list_applier_leases',
  columns: { list_id: 'uuid', owner: 'uuid' },
  partitionKey: ['list_id'],
});

/**
 * Reverse lookup for `User.lists`: the lists a user owns, one partition per owner, so a
 * page is one slice. Newest list first, as people expect of "my lists"; the list's
 * creation time never changes, so the row's key is fixed when the list is created and
 * never moves. `list_id` breaks ties between lists created in the same millisecond.
 */
export const listsByOwnerTable = defineTable({
  name: 'lists_by_owner',
  columns: { owner_id: 'uuid', created_at: 'timestamp', list_id: 'uuid' },
  partitionKey: ['owner_id'],
  clustering: [
    { column: 'created_at', order: 'DESC' },
    { column: 'list_id', order: 'DESC' },
  ],
});

/** Every table this feature owns. */
export const listTables = [
  listsTable,
  listItemsTable,
  listTransactionsTable,
  listItemIndexTable,
  pendingListsTable,
  listApplierLeasesTable,
  listsByOwnerTable,
];

/** Partitions of `pending_lists`. */
export const PENDING_SHARDS = 4;

/** The pending-lists shard of a list. */
export function pendingShardOf(listId: string): number {
  return parseInt(listId.slice(0, 2), 16) % PENDING_SHARDS;
}
