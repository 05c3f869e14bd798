/**
 * Removing a row that a process claimed with insert-if-not-exists (a username, a
 * suspension's reverse lookup, an applier lease), without racing anyone else's claim.
 *
 * Such a row carries the Paxos ballot's timestamp, chosen by the coordinator, not the
 * caller. A plain delete stamped with this server's clock can lose to it (a clock
 * behind the coordinator's), and one stamped later than a new owner's claim would hide
 * that claim. So the delete is stamped with the write time of the very cell read back:
 * a tombstone hides what was written at or below its timestamp, and wins a tie, so it
 * removes exactly the version read (ours) and nothing written after it; a new claim
 * takes a later ballot and survives. Between the read and the delete nobody else can
 * claim the row, since it exists.
 */
import type { Store } from './port.js';
import type { CqlValue, Row, TableSpec } from './table.js';

/**
 * Delete the row at `key` if its `column` holds `owner`; true when it did. Use for
 * every row written with insert-if-not-exists.
 */
export async function deleteIfOwned(store: Store, table: TableSpec, key: Row, column: string, owner: CqlValue): Promise<boolean> {
  const writetime = await ownedWritetime(store, table, key, column, owner);
  if (writetime === null) return false;
  // The store's conditional delete (`DELETE … IF column = owner`) can replace these two
  // calls once the port has it: the same effect in one round trip, linearizable.
  await store.delete(table, key, { timestamp: writetime });
  return true;
}

/** The write time of `column` at `key` if it holds `owner`, else null. */
async function ownedWritetime(store: Store, table: TableSpec, key: Row, column: string, owner: CqlValue): Promise<bigint | null> {
  const cells = await store.readCells(table, key, [column]);
  const writetime = cells.writetime[column];
  return cells.row?.[column] === owner && writetime !== null && writetime !== undefined ? writetime : null;
}

/**
 * Extend the TTL of a row this process claimed (a lease) if it still holds it; false
 * when it no longer does. The rewrite is stamped just above the claim's own write
 * time, so it wins over the claim whatever this server's clock says, yet loses to a
 * later claim by someone else (a later ballot) made after the row expired.
 */
export async function renewIfOwned(
  store: Store,
  table: TableSpec,
  key: Row,
  column: string,
  owner: CqlValue,
  ttlSeconds: number,
): Promise<boolean> {
  const writetime = await ownedWritetime(store, table, key, column, owner);
  if (writetime === null) return false;
  await store.upsert(table, { ...key, [column]: owner }, { timestamp: writetime + 1n, ttl: ttlSeconds });
  return true;
}

/**
 * Add cells to a row this process claimed, stamped with the claim's own write time, so
 * that deleting the claim (`deleteIfOwned`, at that same time) removes them too. For
 * cells the claim did not write; false when the row is not (or no longer) ours.
 */
export async function amendIfOwned(store: Store, table: TableSpec, key: Row, column: string, owner: CqlValue, cells: Row): Promise<boolean> {
  const writetime = await ownedWritetime(store, table, key, column, owner);
  if (writetime === null) return false;
  await store.upsert(table, { ...key, ...cells }, { timestamp: writetime });
  return true;
}
