/** Tables of the connection counts (`totalCount`; see connection-counts.ts for the design). */
import { NODE_COUNT } from '../store/clock.js';
import { defineTable, type CqlType } from '../store/table.js';

/** The column of clock node `node`'s live cell in a window row. */
export function nodeColumn(node: number): string {
  return `node_${String(node).padStart(2, '0')}`;
}

/** Every node's live-cell column. */
export const NODE_COLUMNS: readonly string[] = Array.from({ length: NODE_COUNT }, (_, n) => nodeColumn(n));

/** The clustering slot of a count's head row (settlement and span); windows use their start (ms). */
export const HEAD_SLOT = -1n;

/**
 * One partition per counted connection (`count_key`), read by key, every count of a
 * request in one `getMany`. In clustering order:
 * - the head (`slot` = HEAD_SLOT): `settled_count` items counted through `settled_through`
 *   (ms, a window start), written `USING TIMESTAMP settled_through` so a later settlement
 *   always wins; and the span of windows that had changes (`first_window`, written at
 *   2^63-1 minus the window so the earliest stays, `last_window` at the window so the
 *   latest stays), so a reader knows which windows to add without a slice; and
 *   `redo_through`, the bound a late change makes the count be settled in full past
 *   (connection-counts.ts, "Late changes");
 * - one window row per 5-second window with changes (`slot` = window start): a live cell
 *   per clock node (`node_00` … `node_63`), each server's running total of the changes it
 *   made in that window, so a count is current before it is settled. Window rows expire
 *   after two days, long after their window is settled; the head never does.
 */
export const connectionCountsTable = defineTable({
  name: 'connection_counts',
  columns: {
    count_key: 'text',
    slot: 'bigint',
    settled_through: 'bigint',
    settled_count: 'bigint',
    first_window: 'bigint',
    last_window: 'bigint',
    redo_through: 'bigint',
    ...(Object.fromEntries(NODE_COLUMNS.map((c) => [c, 'bigint'])) as Record<string, CqlType>),
  },
  partitionKey: ['count_key'],
  clustering: ['slot'],
});

/**
 * The changes of each counted connection, by window: one row per attempt at a change
 * (`slot` the window, `item`, `sign` +1 or -1), the settlement's work. Kept apart from
 * the wide rows above (writes cost what a row is wide on the embedded store), expiring
 * after two days, long after their window is settled.
 */
export const countEventsTable = defineTable({
  name: 'count_events',
  columns: { count_key: 'text', slot: 'bigint', item: 'text', sign: 'int' },
  partitionKey: ['count_key'],
  clustering: ['slot', 'item', 'sign'],
});

/**
 * The item ledger: per counted connection and item, when it was first added and first
 * removed (µs, each cell written `USING TIMESTAMP 2^63-1 - t`: seed 001's first write
 * wins). It decides which change counts when a change was made twice (a retried step,
 * two servers deleting the same post), and it is what a full recount sums. Never
 * deleted.
 */
export const countItemsTable = defineTable({
  name: 'count_items',
  columns: { count_key: 'text', item: 'text', added_at: 'bigint', removed_at: 'bigint' },
  partitionKey: ['count_key'],
  clustering: ['item'],
});

/**
 * The counted index of a ranked count (count-ranks.ts; what `offset` reads): one
 * partition per count (`count_key`), a row per bucket that has children with items, in
 * clustering order `(level, parent)`: in `counts`, how many items lie under each child
 * bucket of `parent` at `level` (level 0's one list has parent 0), packed
 * (count-ranks.ts `packRankList`), through `settled_through`, written `USING TIMESTAMP
 * settled_through`. A whole list is one cell: a level costs one row to read however
 * many of its buckets hold items. Never deleted (an emptied list is empty text).
 * Replaces `count_ranks` (a row per bucket), which nothing reads any more.
 * Compacted leveled on Cassandra: every settlement rewrites level 0's row and the lists
 * it touches, and every `offset` page reads them, so a read must not merge the versions
 * each memtable flush left in an SSTable of its own (docs/how-it-works.md, "Compaction").
 */
export const countRankListsTable = defineTable({
  name: 'count_rank_lists',
  columns: { count_key: 'text', level: 'int', parent: 'bigint', settled_through: 'bigint', counts: 'text' },
  partitionKey: ['count_key'],
  clustering: ['level', 'parent'],
  leveledCompaction: true,
});

/** Every table of the counts. */
export const countTables = [connectionCountsTable, countEventsTable, countItemsTable, countRankListsTable];
