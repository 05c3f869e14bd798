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
 * seed 002's LedgerTransactions: every change to a list, in transaction-id order.
 * Readers apply the pending ones to what they read. A queue the Cassandra way: the
 * applier never deletes a transaction on its own; it sets `applied` (a plain cell, no
 * tombstone), and once every transaction up to an id is applied and no older one can
 * still land, it cuts them all with ONE range tombstone up to that id, remembered as
 * the list's mark (`list_transaction_marks`). Readers read backwards from the newest
 * transaction and stop at the first applied one, so no read starts at the partition's
 * head. Rows written before `applied` existed read as not applied, which they are: the
 * old applier deleted each one it applied.
 */
export const listTransactionsTable = defineTable({
  name: 'list_transactions',
  columns: { list_id: 'uuid', tx_id: 'timeuuid', kind: 'text', item_id: 'uuid', payload: 'text', applied: 'boolean' },
  partitionKey: ['list_id'],
  clustering: ['tx_id'],
});

/**
 * The low-water mark of each list's transactions: every transaction with an id up to
 * `mark` is applied and cut. Written with the mark's own time as its write timestamp,
 * so a later (higher) mark always wins, whichever server wrote it with whatever clock.
 */
export const listTransactionMarksTable = defineTable({
  name: 'list_transaction_marks',
  columns: { list_id: 'uuid', mark: 'timeuuid' },
  partitionKey: ['list_id'],
});

/** Where each applied item is stored (its list never changes; its position does). */
export const listItemIndexTable = defineTable({
  name: 'list_item_index',
  columns: { item_id: 'uuid', list_id: 'uuid', weight: 'bigint', seq: 'bigint', label: 'text' },
  partitionKey: ['item_id'],
});

/**
 * The lists with changes for the applier's timer pass, as a queue in a few partitions:
 * every append adds an entry `(shard, tx_id, list_id)`, written with its transaction's
 * time. The timer pass reads a shard from its mark onwards, settles the lists it finds,
 * and cuts the settled entries with one range tombstone (marks in `pending_list_marks`).
 */
export const pendingListTxsTable = defineTable({
  name: 'pending_list_txs',
  columns: { shard: 'int', tx_id: 'timeuuid', list_id: 'uuid' },
  partitionKey: ['shard'],
  clustering: ['tx_id', 'list_id'],
});

/** The low-water mark of each `pending_list_txs` shard (as `list_transaction_marks`). */
export const pendingListMarksTable = defineTable({
  name: 'pending_list_marks',
  columns: { shard: 'int', mark: 'timeuuid' },
  partitionKey: ['shard'],
});

/**
 * Before `pending_list_txs`: one row per list with pending transactions, deleted when
 * settled. Nothing writes it any more; the applier drains the lists still marked here
 * (data from before the queue) and stops reading it once it is empty.
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
 * crashed applier's claim expires by itself. The row is reused, never deleted: its
 * owner renews it while it lives, and otherwise lets it expire.
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
  listTransactionMarksTable,
  listItemIndexTable,
  pendingListTxsTable,
  pendingListMarksTable,
  pendingListsTable,
  listApplierLeasesTable,
  listsByOwnerTable,
];

/** Partitions of `pending_list_txs` (and of the old `pending_lists`). */
export const PENDING_SHARDS = 4;

/** The pending-lists shard of a list. */
export function pendingShardOf(listId: string): number {
  return parseInt(listId.slice(0, 2), 16) % PENDING_SHARDS;
}
