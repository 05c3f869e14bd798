/**
 * The ledger list's reader (seed 002). Every change to a list is a transaction in the
 * list's log until the applier has applied it; a reader applies the pending ones, in
 * transaction-id order, to its local copy of what it read, exactly as the seed's
 * `get()` does:
 *   1. if the moved item has been soft deleted, the transaction is in flight (after the
 *      applier's step 1): skip it;
 *   2. try to remove the item from its old position; if it is missing the transaction
 *      is in flight (between steps 2 and 3): skip it;
 *   3. insert the item at its new position;
 *   4. filter out the soft deletes left by step 1;
 *   5. sort.
 * A page reads only part of the list, so the local copy is the page's slice plus the
 * stored rows at the current position and at the target of every item a pending
 * transaction touches (probed by key): enough to run the same steps exactly. Reads happen in this order:
 * transactions, index, probes, slice; with the applier running between any two of
 * them, every interleaving still yields the state after the transactions.
 */
import { compareValues } from '../../store/values.js';
import type { Row } from '../../store/table.js';
import type { ClusteringBound, Mutation, Store } from '../../store/port.js';
import { microsOfTimeuuid, timeuuidOfMicros } from '../../store/timeuuid.js';
import { newestOf, timestampAbove, type Clock } from '../../store/clock.js';
import { comparePositions, type Position } from './positions.js';
import { markMutation } from '../../background/windowed-job.js';

/** The applier's trailing job (marks and progress; applier.ts). */
export const LIST_JOB = 'lists';
import {
  listItemIndexTable,
  listItemsTable,
  listTransactionMarksTable,
  listTransactionsTable,
  pendingListTxsTable,
  pendingShardOf,
} from './lists-tables.js';

/**
 * A pending change to a list. `crowded`: the add or move landed in a crowded gap, so
 * the applier rebalances around the item once it has applied it. `rebalance`: the move
 * is part of such a rebalance.
 */
export type ListTx =
  | { readonly txId: string; readonly kind: 'add'; readonly itemId: string; readonly to: Position; readonly label: string; readonly crowded?: boolean }
  | { readonly txId: string; readonly kind: 'move'; readonly itemId: string; readonly to: Position; readonly crowded?: boolean; readonly rebalance?: boolean }
  | { readonly txId: string; readonly kind: 'rename'; readonly itemId: string; readonly label: string }
  | { readonly txId: string; readonly kind: 'remove'; readonly itemId: string };

/** A transaction before it has its id (`appendTransactions` gives it one). */
export type NewListTx = ListTx extends infer T ? (T extends ListTx ? Omit<T, 'txId'> : never) : never;

/** An item as the API shows it. */
export interface ListItem {
  readonly listId: string;
  readonly itemId: string;
  readonly label: string;
  readonly weight: bigint;
  readonly seq: bigint;
}

/** A stored `list_items` row as the reader holds it. */
interface LocalRow {
  readonly weight: bigint;
  readonly seq: bigint;
  readonly itemId: string;
  readonly deleted: boolean;
  label: string;
}

const rowKey = (p: Position, itemId: string, deleted: boolean) => `${p.weight}|${p.seq}|${itemId}|${deleted ? 1 : 0}`;

/** The payload JSON of a transaction (bigints as strings). */
export function txToRow(listId: string, tx: ListTx): Row {
  const { txId, kind, itemId, ...rest } = tx as ListTx & { to?: Position; label?: string; crowded?: boolean; rebalance?: boolean };
  const payload: Record<string, string> = {};
  if (rest.to) Object.assign(payload, { weight: rest.to.weight.toString(), seq: rest.to.seq.toString() });
  if (rest.label !== undefined) payload.label = rest.label;
  if (rest.crowded) payload.crowded = 'true';
  if (rest.rebalance) payload.rebalance = 'true';
  return { list_id: listId, tx_id: txId, kind, item_id: itemId, payload: JSON.stringify(payload) };
}

function txFromRow(row: Row): ListTx {
  const p = JSON.parse(row.payload as string) as { weight?: string; seq?: string; label?: string; crowded?: string; rebalance?: string };
  const base = { txId: row.tx_id as string, itemId: row.item_id as string };
  const to = p.weight !== undefined ? { weight: BigInt(p.weight), seq: BigInt(p.seq!) } : undefined;
  const flags = { ...(p.crowded ? { crowded: true } : {}), ...(p.rebalance ? { rebalance: true } : {}) };
  switch (row.kind) {
    case 'add':
      return { ...base, kind: 'add', to: to!, label: p.label!, ...flags };
    case 'move':
      return { ...base, kind: 'move', to: to!, ...flags };
    case 'rename':
      return { ...base, kind: 'rename', label: p.label! };
    default:
      return { ...base, kind: 'remove' };
  }
}

/**
 * The pending transactions of a list, oldest first: read backwards from the newest and
 * stopping at the first applied one (the applier applies in id order), so the read
 * never walks the applied history, nor the tombstones before it. One round trip when a
 * few are pending. A transaction that landed late, below one already applied, is not
 * seen here: the applier's timer pass finds it (`readUnapplied`) and applies it.
 */
export async function readPendingTransactions(store: Store, listId: string): Promise<ListTx[]> {
  return (await readTransactionRows(store, listId)).pending.map(txFromRow);
}

/**
 * The pending transactions of a list (`readPendingTransactions`), and every transaction
 * the same read passed, applied ones included (at least the newest few): where items
 * were put lately. An applied transaction's rows may not be visible yet (the batch that
 * applied it is not isolated across partitions, so its mark can be seen first), but
 * its target bounds where an item may stand.
 */
export async function readRecentTransactions(store: Store, listId: string): Promise<RecentTransactions> {
  const { pending, recent, newest } = await readTransactionRows(store, listId);
  return { pending: pending.map(txFromRow), recent: recent.map(txFromRow), newest };
}

/** The rows `readRecentTransactions` reads, oldest first, not yet parsed (readers parse only the pending ones). */
async function readTransactionRows(store: Store, listId: string): Promise<{ pending: Row[]; recent: Row[]; newest: bigint | null }> {
  const pending: Row[] = [];
  const recent: Row[] = [];
  let upper: ClusteringBound | undefined;
  for (let limit = 8; ; limit = Math.min(limit * 2, 1_024)) {
    const rows = await store.slice(listTransactionsTable, { partition: { list_id: listId }, reverse: true, limit, ...(upper && { upper }) });
    recent.push(...rows);
    const firstApplied = rows.findIndex((r) => r.applied === true);
    pending.push(...(firstApplied < 0 ? rows : rows.slice(0, firstApplied)));
    if (firstApplied >= 0 || rows.length < limit) {
      const newest = recent.length > 0 ? microsOfTimeuuid(recent[0]!.tx_id as string) : null;
      return { pending: pending.reverse(), recent: recent.reverse(), newest };
    }
    upper = { values: [rows[rows.length - 1]!.tx_id!], inclusive: false };
  }
}

/** What `readRecentTransactions` read. */
export interface RecentTransactions {
  readonly pending: ListTx[];
  readonly recent: ListTx[];
  /** The time (µs) of the list's newest transaction row, applied or not; null when it has none (all cut, or none yet). */
  readonly newest: bigint | null;
}

/** A transaction with whether the applier has applied it. */
export interface StoredTx {
  readonly tx: ListTx;
  readonly applied: boolean;
}

/** The list's mark: every transaction up to it is applied and cut (null: none yet). */
export async function readTransactionMark(store: Store, listId: string): Promise<string | null> {
  return ((await store.get(listTransactionMarksTable, { list_id: listId }))?.mark as string | undefined) ?? null;
}

/**
 * Every transaction above the list's mark, applied or not, oldest first, a page at a
 * time (`visit` returns false to stop). For the applier's timer pass and for checks.
 */
export function visitTransactionsAbove(
  store: Store,
  listId: string,
  mark: string | null,
  visit: (page: StoredTx[]) => Promise<boolean> | boolean,
  pageSize = 500,
): Promise<void> {
  return visitTransactionRange(store, listId, mark ? { values: [mark], inclusive: false } : undefined, visit, pageSize);
}

/**
 * The transactions of a list from `lower` on (an id, inclusive), applied or not, oldest
 * first, a page at a time (`visit` returns false to stop): what a trailing pass reads,
 * below the list's mark too (applier.ts).
 */
export function visitTransactionsFrom(
  store: Store,
  listId: string,
  lower: string,
  visit: (page: StoredTx[]) => Promise<boolean> | boolean,
  pageSize = 500,
): Promise<void> {
  return visitTransactionRange(store, listId, { values: [lower], inclusive: true }, visit, pageSize);
}

/** The transactions of a list from a bound on, oldest first, a page at a time. */
async function visitTransactionRange(
  store: Store,
  listId: string,
  lower: ClusteringBound | undefined,
  visit: (page: StoredTx[]) => Promise<boolean> | boolean,
  pageSize: number,
): Promise<void> {
  for (;;) {
    const rows = await store.slice(listTransactionsTable, { partition: { list_id: listId }, limit: pageSize, ...(lower && { lower }) });
    if (rows.length && !(await visit(rows.map((r) => ({ tx: txFromRow(r), applied: r.applied === true }))))) return;
    if (rows.length < pageSize) return;
    lower = { values: [rows[rows.length - 1]!.tx_id!], inclusive: false };
  }
}

/** Every transaction of the list not applied yet, oldest first, late ones included. */
export async function readTransactions(store: Store, listId: string): Promise<ListTx[]> {
  const out: ListTx[] = [];
  await visitTransactionsAbove(store, listId, await readTransactionMark(store, listId), (page) => {
    out.push(...page.filter((t) => !t.applied).map((t) => t.tx));
    return true;
  });
  return out;
}

/**
 * The newest transaction id a list has ever had (µs), as far as the store shows it: its
 * newest transaction row, or, once every row was cut, its mark. `seen` is what a read
 * made since the change began found of the rows (`RecentTransactions.newest`): the rows
 * are then not read again, and the mark only when there were none (rows above the mark
 * survive its cut, so the newest row is above it). Without it, both are read at once.
 */
async function newestTransactionMicros(store: Store, listId: string, seen: bigint | null | undefined): Promise<bigint | null> {
  const markOf = async () => {
    const mark = await readTransactionMark(store, listId);
    return mark === null ? null : microsOfTimeuuid(mark);
  };
  if (seen !== undefined) return seen ?? (await markOf());
  const [[newest], mark] = await Promise.all([store.slice(listTransactionsTable, { partition: { list_id: listId }, reverse: true, limit: 1 }), markOf()]);
  return newestOf([newest && microsOfTimeuuid(newest.tx_id as string), mark]);
}

/**
 * Append transactions to a list and queue the list for the applier's timer pass, in
 * one logged batch; returns them with their ids.
 *
 * Ids come from a hybrid logical clock: above the list's newest transaction (or its
 * mark), read since the change began (`seen`: by the reads the change made anyway, see
 * `newestTransactionMicros`; else now), and never below `clock`. So a transaction sorts after every
 * transaction acknowledged before it began, whatever the clocks of the servers that
 * made them: the applier applies them in that order, and readers, who read back from
 * the newest transaction to the first applied one, see it pending until it is applied
 * (an item can be renamed, moved or removed as soon as its add is acknowledged, on any
 * server). An id never falls below the mark, under the cut's range tombstone.
 *
 * Each transaction row is stamped with its id's time, as is the queue entry (the last
 * id's), so the range deletes that cut them, stamped with the mark's time, hide them
 * whichever server's clock is ahead. Several transactions in one batch land in one
 * partition together: readers see all of them or none. `extra` travels in the same
 * batch (the count of the items the transactions add or remove).
 */
export async function appendTransactions(
  store: Store,
  clock: Clock,
  listId: string,
  fresh: readonly NewListTx[],
  extra: readonly Mutation[] = [],
  seen?: bigint | null,
): Promise<ListTx[]> {
  let floor = await newestTransactionMicros(store, listId, seen);
  const txs = fresh.map((tx) => {
    floor = timestampAbove(clock, floor);
    return { ...tx, txId: timeuuidOfMicros(floor) } as ListTx;
  });
  await writeTransactions(store, listId, txs, extra);
  return txs;
}

/**
 * The logged batch of `appendTransactions`, for transactions whose ids are chosen
 * already (tests use it to land a transaction late, below one already applied).
 */
export function writeTransactions(store: Store, listId: string, txs: readonly ListTx[], extra: readonly Mutation[] = []): Promise<void> {
  const last = txs[txs.length - 1]!.txId;
  const mutations: Mutation[] = txs.map((tx) => ({
    kind: 'upsert',
    table: listTransactionsTable,
    row: txToRow(listId, tx),
    options: { timestamp: microsOfTimeuuid(tx.txId) },
  }));
  mutations.push({
    kind: 'upsert',
    table: pendingListTxsTable,
    row: { shard: pendingShardOf(listId), tx_id: last, list_id: listId },
    options: { timestamp: microsOfTimeuuid(last) },
  });
  // A mark per transaction on the applier's trailing work list: one that lands after
  // the applier's cut passed it is found there and applied (applier.ts).
  for (const tx of txs) mutations.push(markMutation(LIST_JOB, listId, Number(microsOfTimeuuid(tx.txId) / 1000n), tx.txId));
  return store.batch([...mutations, ...extra]);
}

/**
 * Record that a transaction is applied: one cell, written at the transaction's own
 * timestamp, so the range delete that later cuts it hides the cell too.
 */
export function markApplied(store: Store, listId: string, txId: string): Promise<void> {
  const { row, options } = appliedMark(listId, txId);
  return store.upsert(listTransactionsTable, row, options);
}

/** `markApplied` as a mutation, to go in the batch that applies the transaction. */
export function appliedMark(listId: string, txId: string): Mutation & { kind: 'upsert' } {
  return {
    kind: 'upsert',
    table: listTransactionsTable,
    row: { list_id: listId, tx_id: txId, applied: true },
    options: { timestamp: microsOfTimeuuid(txId) },
  };
}

/** Order of live items: position, then item id (uuid order, as the clustering key). */
export function compareItems(a: { weight: bigint; seq: bigint; itemId: string }, b: { weight: bigint; seq: bigint; itemId: string }): number {
  return comparePositions(a, b) || compareValues('uuid', a.itemId, b.itemId);
}

/** What one ledger read asks for: items by id, and/or a slice from a position. */
export interface LedgerQuery {
  readonly itemIds?: readonly string[];
  readonly slice?: {
    readonly from?: { weight: bigint; seq: bigint; itemId: string };
    readonly direction: 'forward' | 'backward';
    readonly limit: number;
  };
}

/** The effective state read: live items in order, and where each touched item stands. */
export interface LedgerView {
  /** Live items in list order, restricted to what the slice covered (all items asked for otherwise). */
  readonly items: ListItem[];
  /** Effective state of every item asked for or touched by a pending transaction (null: absent). */
  readonly byId: ReadonlyMap<string, ListItem | null>;
  /** The time (µs) of the list's newest transaction row as read (`RecentTransactions.newest`). */
  readonly newestTx: bigint | null;
}

/** What `readLedger` reads first: a list's pending transactions, oldest first, and its newest transaction's time. */
export interface LedgerTransactions {
  readonly pending: readonly ListTx[];
  readonly newest: bigint | null;
}

/**
 * The first read of `readLedger` (`LedgerTransactions`), for ledger reads that share
 * one: each of them is then the read it would be had its own first read come back
 * earlier, exact by the same argument (everything it reads after comes later still).
 */
export async function readLedgerTransactions(store: Store, listId: string): Promise<LedgerTransactions> {
  const read = await readTransactionRows(store, listId);
  return { pending: read.pending.map(txFromRow), newest: read.newest };
}

/**
 * Read a list's effective state: stored rows with the pending transactions applied;
 * with `transactions`, those of a read already made (`readLedgerTransactions`).
 */
export async function readLedger(store: Store, listId: string, query: LedgerQuery, transactions?: Promise<LedgerTransactions>): Promise<LedgerView> {
  // 1. Transactions first: a transaction the applier finishes after this read is seen
  //    either still pending (and applied here) or already applied in the rows below.
  return readLedgerAfter(store, listId, query, await (transactions ?? readLedgerTransactions(store, listId)));
}

/** No pending transaction: `readLedgerAfter` then reads the rows as stored, its slice started at once. */
export const NONE_PENDING: LedgerTransactions = { pending: [], newest: null };

/** `readLedger` once its transactions are read (`NONE_PENDING`: the rows as stored). */
export async function readLedgerAfter(store: Store, listId: string, query: LedgerQuery, transactions: LedgerTransactions): Promise<LedgerView> {
  const { pending: txs, newest: newestTx } = transactions;
  const ids = [...new Set([...(query.itemIds ?? []), ...txs.map((t) => t.itemId)])];
  // 2. Where each touched item is stored.
  const indexRows = ids.length ? await store.getMany(listItemIndexTable, ids.map((item_id) => ({ item_id }))) : [];
  const position = new Map<string, Position | null>();
  ids.forEach((id, i) => {
    const r = indexRows[i];
    position.set(id, r && r.list_id === listId ? { weight: r.weight as bigint, seq: r.seq as bigint } : null);
  });
  // 3. The stored rows at those positions (original and soft-delete marker).
  const local = new Map<string, LocalRow>();
  const probeKeys: Row[] = [];
  const probe = (id: string, p: Position) => {
    for (const deleted of [false, true]) probeKeys.push({ list_id: listId, weight: p.weight, seq: p.seq, item_id: id, deleted });
  };
  for (const [id, p] of position) if (p) probe(id, p);
  // Targets too: the applier may have moved an item there since the index was read.
  for (const tx of txs) if (tx.kind === 'add' || tx.kind === 'move') probe(tx.itemId, tx.to);
  const put = (r: Row) => {
    const row: LocalRow = {
      weight: r.weight as bigint,
      seq: r.seq as bigint,
      itemId: r.item_id as string,
      deleted: r.deleted as boolean,
      label: r.label as string,
    };
    local.set(rowKey(row, row.itemId, row.deleted), row);
  };
  if (probeKeys.length) for (const r of await store.getMany(listItemsTable, probeKeys)) if (r) put(r);
  // 4. The slice, widened by what pending transactions can hide (a row and a marker each).
  let covers: (item: { weight: bigint; seq: bigint; itemId: string }) => boolean = () => true;
  if (query.slice) {
    const { from, direction, limit } = query.slice;
    const want = limit + 2 * txs.length + 1;
    const bound = from ? { values: [from.weight, from.seq, from.itemId], inclusive: true } : undefined;
    const rows = await store.slice(listItemsTable, {
      partition: { list_id: listId },
      limit: want,
      reverse: direction === 'backward',
      ...(direction === 'forward' ? { lower: bound } : { upper: bound }),
    });
    rows.forEach(put);
    const sign = direction === 'forward' ? 1 : -1;
    const last = rows.length === want ? rows[rows.length - 1]! : undefined;
    const lastKey = last && { weight: last.weight as bigint, seq: last.seq as bigint, itemId: last.item_id as string };
    // Only what lies between the start and the last row read is known completely.
    covers = (item) =>
      (!from || sign * compareItems(item, from) >= 0) && (!lastKey || sign * compareItems(item, lastKey) <= 0);
  }

  // A move whose target is where the index already puts its item has been applied
  // through step 2, and so has every earlier transaction of that item (the applier
  // goes in order; each move's position is unique). The transactions were read before
  // the index, so the applier may have got that far in between: applying them again
  // would move the item's current row back to a stale place (and, on Cassandra, where
  // step 2's batch is not isolated, onto its soft-delete marker, hiding it).
  const appliedThrough = new Map<string, number>();
  txs.forEach((tx, i) => {
    const p = position.get(tx.itemId);
    if (tx.kind === 'move' && p && p.weight === tx.to.weight && p.seq === tx.to.seq) appliedThrough.set(tx.itemId, i);
  });

  // The seed's steps, transaction by transaction, on the local copy.
  for (const [i, tx] of txs.entries()) {
    if (i <= (appliedThrough.get(tx.itemId) ?? -1)) continue;
    const at = position.get(tx.itemId) ?? null;
    switch (tx.kind) {
      case 'add': {
        // An item the list holds already is not added twice (the applier skips it too).
        if (at) break;
        const existing = local.get(rowKey(tx.to, tx.itemId, false));
        if (!existing) local.set(rowKey(tx.to, tx.itemId, false), { ...tx.to, itemId: tx.itemId, deleted: false, label: tx.label });
        position.set(tx.itemId, tx.to);
        break;
      }
      case 'move': {
        if (!at) break; // the item does not exist (removed): nothing to move
        position.set(tx.itemId, tx.to);
        // 1. soft deleted: in flight after the applier's step 1, the new row is stored.
        if (local.has(rowKey(at, tx.itemId, true))) break;
        // 2. missing from its old position: in flight between steps 2 and 3.
        const original = local.get(rowKey(at, tx.itemId, false));
        if (!original) break;
        local.delete(rowKey(at, tx.itemId, false));
        // 3. insert at the new position.
        local.set(rowKey(tx.to, tx.itemId, false), { ...tx.to, itemId: tx.itemId, deleted: false, label: original.label });
        break;
      }
      case 'rename': {
        const row = at && local.get(rowKey(at, tx.itemId, false));
        if (row) row.label = tx.label;
        break;
      }
      case 'remove': {
        if (!at) break;
        local.delete(rowKey(at, tx.itemId, false));
        local.delete(rowKey(at, tx.itemId, true));
        position.set(tx.itemId, null);
        break;
      }
    }
  }
  // 4. Filter the soft deletes (each marker and the row it shadows).
  for (const row of [...local.values()]) {
    if (row.deleted) {
      local.delete(rowKey(row, row.itemId, true));
      local.delete(rowKey(row, row.itemId, false));
    }
  }
  // 5. Sort.
  const live = [...local.values()]
    .map((r): ListItem => ({ listId, itemId: r.itemId, label: r.label, weight: r.weight, seq: r.seq }))
    .sort(compareItems);
  const byId = new Map<string, ListItem | null>();
  for (const id of position.keys()) byId.set(id, null);
  for (const item of live) if (byId.has(item.itemId) && position.get(item.itemId) !== null) byId.set(item.itemId, item);
  const items = live.filter(covers);
  if (query.slice?.direction === 'backward') items.reverse();
  return { items: query.slice ? items.slice(0, query.slice.limit) : items, byId, newestTx };
}
