/**
 * Rows a process claimed with insert-if-not-exists (a username, a suspension's reverse
 * lookup, an applier lease): removed, renewed and amended only by their owner, without
 * racing anyone else's claim.
 *
 * Such a row carries the Paxos ballot's timestamp, chosen by the coordinator, not the
 * caller (the embedded store models it with its own clock). A plain delete stamped
 * with this server's clock can lose to it (a clock behind the coordinator's), and one
 * stamped ahead would hide a new owner's later claim, whose ballot may still be below
 * this server's clock. So a claim is removed only with the store's conditional delete
 * (`DELETE … IF column = owner`): a Paxos round of its own, ordered after the claim's
 * ballot and before any later one, so it removes exactly our version and never a new
 * owner's.
 *
 * The store has no conditional update, so renewing or amending a claim stays a plain
 * write, stamped from the claim's own write time (read back first), never from this
 * server's clock: just above it to outlive the claim's TTL, or at it to be removed with
 * it. A later claim by someone else takes a later ballot and wins over either; the
 * conditional delete, also a later ballot, removes both.
 */
import type { Store } from './port.js';
import type { CqlValue, Row, TableSpec } from './table.js';

/**
 * Delete the row at `key` if its `column` holds `owner` (one conditional delete); true
 * when it did. Use for every row written with insert-if-not-exists.
 */
export function deleteIfOwned(store: Store, table: TableSpec, key: Row, column: string, owner: CqlValue): Promise<boolean> {
  return store.deleteIf(table, key, { [column]: owner });
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
 * that the conditional delete that removes the claim (`deleteIfOwned`, a later ballot)
 * removes them too. For cells the claim did not write; false when the row is not (or
 * no longer) ours.
 */
export async function amendIfOwned(store: Store, table: TableSpec, key: Row, column: string, owner: CqlValue, cells: Row): Promise<boolean> {
  const writetime = await ownedWritetime(store, table, key, column, owner);
  if (writetime === null) return false;
  await store.upsert(table, { ...key, ...cells }, { timestamp: writetime });
  return true;
}
