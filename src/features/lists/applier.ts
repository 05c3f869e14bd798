/**
 * The ledger list's background applier (seed 002): applies each list's transactions
 * in id order, a move in the seed's three idempotent steps:
 *   1. soft delete the old item and insert the new one (one single-partition batch);
 *   2. hard delete the old item and the soft delete marker (with the item's index);
 *   3. delete the transaction.
 * Re-running a transaction from any point is harmless. One applier per list at a time:
 * within a process a per-list lock serialises it, and across processes a lease
 * (insert-if-not-exists with a TTL) does; a lease covers a bounded batch of
 * transactions, well inside its TTL. It runs on a timer over every pending list, and
 * `wake(listId)` settles one list soon after a change to it.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../../store/clock.js';
import { MonotonicClock } from '../../store/clock.js';
import type { Mutation, Store } from '../../store/port.js';
import { startPeriodicTask, type PeriodicTask } from '../../periodic-task.js';
import { KeyedLock } from '../../saga/keyed-lock.js';
import { readTransactions, type ListTx } from './ledger.js';
import {
  PENDING_SHARDS,
  listApplierLeasesTable,
  listItemIndexTable,
  listItemsTable,
  listTransactionsTable,
  pendingListsTable,
  pendingShardOf,
} from './lists-tables.js';

/** Applies pending list transactions. */
export class ListApplier {
  private readonly lock = new KeyedLock();
  private timer: PeriodicTask | null = null;
  private stopped = false;
  /** Lists woken and not yet started; at most one settle per list is queued. */
  private readonly woken = new Set<string>();
  /** Lists being settled after a wake. */
  private readonly settling = new Set<string>();
  private readonly clock: Clock;
  /** This applier's identity in leases. */
  private readonly owner = randomUUID();

  constructor(
    private readonly store: Store,
    private readonly options: { clock?: Clock; logger?: Logger; leaseSeconds?: number; batchSize?: number } = {},
  ) {
    this.clock = options.clock ?? new MonotonicClock();
  }

  /** Apply the oldest pending transaction of a list; false when there is none. */
  applyNext(listId: string): Promise<boolean> {
    return this.lock.with(listId, async () => {
      const [tx] = await readTransactions(this.store, listId, 1);
      if (!tx) return false;
      await this.apply(listId, tx);
      return true;
    });
  }

  /**
   * Apply the pending transactions of a list (at most a batch per lease); returns how
   * many, or 0 when another applier holds the list.
   */
  async drain(listId: string): Promise<number> {
    const batch = this.options.batchSize ?? 500;
    let n = 0;
    while (n % batch === 0) {
      if (!(await this.lease(listId))) return n;
      let applied = 0;
      try {
        while (applied < batch && (await this.applyNext(listId))) applied++;
      } finally {
        await this.release(listId);
      }
      n += applied;
      if (applied < batch) break;
    }
    return n;
  }

  private async lease(listId: string): Promise<boolean> {
    const claim = await this.store.insertIfNotExists(
      listApplierLeasesTable,
      { list_id: listId, owner: this.owner },
      { ttl: this.options.leaseSeconds ?? 60 },
    );
    return claim.applied || claim.existing?.owner === this.owner;
  }

  /** Only our own lease, and conditionally: it was written by a lightweight transaction. */
  private async release(listId: string): Promise<void> {
    await this.store.deleteIf(listApplierLeasesTable, { list_id: listId }, { owner: this.owner });
  }

  /** Drain every list marked as pending, and unmark the drained ones. */
  async runOnce(): Promise<number> {
    let applied = 0;
    for (let shard = 0; shard < PENDING_SHARDS; shard++) {
      const marks = await this.store.slice(pendingListsTable, { partition: { shard }, limit: 10_000 });
      for (const mark of marks) applied += await this.settle(mark.list_id as string);
    }
    return applied;
  }

  /** Drain one list, then unmark it if its log is empty; returns how many were applied. */
  async settle(listId: string): Promise<number> {
    const applied = await this.drain(listId);
    // Unmark with the time of a read that found the log empty: an append after that
    // re-marks with a later timestamp, and that mark survives this delete.
    const checkedAt = this.clock.nowMicros();
    const left = await readTransactions(this.store, listId, 1);
    if (left.length === 0) {
      await this.store.delete(pendingListsTable, { shard: pendingShardOf(listId), list_id: listId }, { timestamp: checkedAt });
    }
    return applied;
  }

  /**
   * Settle `listId` soon (after a change was appended to it). Wakes coalesce per list:
   * while one is queued, more wakes add nothing; a wake while the list is being
   * settled queues one more pass, which sees every change appended meanwhile.
   */
  wake(listId: string): void {
    if (this.stopped || this.woken.has(listId)) return;
    this.woken.add(listId);
    if (!this.settling.has(listId)) setImmediate(() => void this.settleWoken(listId));
  }

  private async settleWoken(listId: string): Promise<void> {
    this.woken.delete(listId);
    if (this.stopped) return;
    this.settling.add(listId);
    try {
      await this.settle(listId);
    } catch (err) {
      this.options.logger?.error({ err, listId }, 'list applier pass failed; the timer will retry');
    } finally {
      this.settling.delete(listId);
      if (this.woken.has(listId)) setImmediate(() => void this.settleWoken(listId));
    }
  }

  /** Run `runOnce` every `intervalMs` until stopped. */
  start(intervalMs: number): void {
    if (this.timer) return;
    this.timer = startPeriodicTask({
      intervalMs,
      pass: async () => void (await this.runOnce()),
      onError: (err) => this.options.logger?.error({ err }, 'list applier pass failed; will retry'),
    });
  }

  /** Stop the timer and ignore later wakes. */
  stop(): void {
    this.stopped = true;
    this.timer?.stop();
    this.timer = null;
  }

  private async apply(listId: string, tx: ListTx): Promise<void> {
    const { store } = this;
    const index = await store.get(listItemIndexTable, { item_id: tx.itemId });
    const at = index && index.list_id === listId ? { weight: index.weight as bigint, seq: index.seq as bigint } : null;
    const label = (index?.label as string | undefined) ?? '';
    const row = (p: { weight: bigint; seq: bigint }, deleted: boolean) => ({
      list_id: listId,
      weight: p.weight,
      seq: p.seq,
      item_id: tx.itemId,
      deleted,
    });
    const indexRow = (p: { weight: bigint; seq: bigint }, l: string) => ({
      item_id: tx.itemId,
      list_id: listId,
      weight: p.weight,
      seq: p.seq,
      label: l,
    });
    const batch = (mutations: Mutation[]) => store.batch(mutations);
    switch (tx.kind) {
      case 'add':
        await batch([
          { kind: 'upsert', table: listItemsTable, row: { ...row(tx.to, false), label: tx.label } },
          { kind: 'upsert', table: listItemIndexTable, row: indexRow(tx.to, tx.label) },
        ]);
        break;
      case 'move': {
        // A move of an item that no longer exists, or one already through step 2: nothing to do.
        if (!at || (at.weight === tx.to.weight && at.seq === tx.to.seq)) break;
        // 1. Soft delete the old item and insert the new one.
        await batch([
          { kind: 'upsert', table: listItemsTable, row: { ...row(at, true), label } },
          { kind: 'upsert', table: listItemsTable, row: { ...row(tx.to, false), label } },
        ]);
        // 2. Hard delete the old item and the soft delete marker.
        await batch([
          { kind: 'delete', table: listItemsTable, key: row(at, false) },
          { kind: 'delete', table: listItemsTable, key: row(at, true) },
          { kind: 'upsert', table: listItemIndexTable, row: indexRow(tx.to, label) },
        ]);
        break;
      }
      case 'rename':
        if (!at) break;
        await batch([
          { kind: 'upsert', table: listItemsTable, row: { ...row(at, false), label: tx.label } },
          { kind: 'upsert', table: listItemIndexTable, row: indexRow(at, tx.label) },
        ]);
        break;
      case 'remove':
        if (!at) break;
        await batch([
          { kind: 'delete', table: listItemsTable, key: row(at, false) },
          { kind: 'delete', table: listItemsTable, key: row(at, true) },
          { kind: 'delete', table: listItemIndexTable, key: { item_id: tx.itemId } },
        ]);
        break;
    }
    // 3. Delete the transaction.
    await store.delete(listTransactionsTable, { list_id: listId, tx_id: tx.txId });
  }
}
