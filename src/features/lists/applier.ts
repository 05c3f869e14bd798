/**
 * The ledger list's background applier (seed 002): applies each list's transactions
 * in id order, a move in the seed's three idempotent steps:
 *   1. soft delete the old item and insert the new one (one single-partition batch);
 *   2. hard delete the old item and the soft delete marker (with the item's index);
 *   3. delete the transaction.
 * Re-running a transaction from any point is harmless. One applier per list at a time:
 * within a process a per-list lock serialises it, and across processes a lease
 * (insert-if-not-exists with a short TTL, renewed while the applier works), so a
 * crashed applier holds its list for seconds only. It runs on a timer over every
 * pending list, and `wake(listId)` settles one list soon after a change to it.
 *
 * Unmarking a drained list is a delete racing the next append's mark, possibly written
 * by a server whose clock is behind. So the unmark is stamped back by the clock-skew
 * bound plus the write timeout (see `settle`): it can then only hide marks whose
 * transactions had landed before the applier found the log empty.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { DEFAULT_CLUSTER_SETTINGS, type ClusterSettings } from '../../config.js';
import type { Clock } from '../../store/clock.js';
import { MonotonicClock } from '../../store/clock.js';
import type { Mutation, Store } from '../../store/port.js';
import { startPeriodicTask, type PeriodicTask } from '../../periodic-task.js';
import { KeyedLock } from '../../saga/keyed-lock.js';
import { microsOfTimeuuid } from '../../store/timeuuid.js';
import { deleteIfOwned, renewIfOwned } from '../../store/owned-rows.js';
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

/** TTL of an applier's lease on a list, in seconds. */
export const LEASE_SECONDS = 10;
/** How often a working applier renews its lease (well inside the TTL). */
export const LEASE_RENEW_MS = 3_000;

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
    private readonly options: {
      clock?: Clock;
      logger?: Logger;
      cluster?: ClusterSettings;
      /** TTL of a lease: how long a crashed applier can hold a list. */
      leaseSeconds?: number;
      batchSize?: number;
    } = {},
  ) {
    this.clock = options.clock ?? new MonotonicClock();
  }

  private get leaseSeconds(): number {
    return this.options.leaseSeconds ?? LEASE_SECONDS;
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
   * many, or 0 when another applier holds the list. The lease is renewed as it goes
   * (every LEASE_RENEW_MS), and the work stops if it was lost.
   */
  async drain(listId: string): Promise<number> {
    const batch = this.options.batchSize ?? 500;
    const key = { list_id: listId };
    let n = 0;
    while (n % batch === 0) {
      if (!(await this.lease(listId))) return n;
      let applied = 0;
      let renewedAt = this.nowMs();
      try {
        while (applied < batch) {
          if (this.nowMs() - renewedAt >= LEASE_RENEW_MS) {
            if (!(await renewIfOwned(this.store, listApplierLeasesTable, key, 'owner', this.owner, this.leaseSeconds))) return n + applied;
            renewedAt = this.nowMs();
          }
          if (!(await this.applyNext(listId))) break;
          applied++;
        }
      } finally {
        await deleteIfOwned(this.store, listApplierLeasesTable, key, 'owner', this.owner);
      }
      n += applied;
      if (applied < batch) break;
    }
    return n;
  }

  private nowMs(): number {
    return Number(this.clock.nowMicros() / 1000n);
  }

  private async lease(listId: string): Promise<boolean> {
    const claim = await this.store.insertIfNotExists(listApplierLeasesTable, { list_id: listId, owner: this.owner }, { ttl: this.leaseSeconds });
    return claim.applied || claim.existing?.owner === this.owner;
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
    // Unmark with the time of a read that found the log empty, moved back by the skew
    // bound S plus the write timeout T. The delete hides a mark only if the mark's
    // timestamp is at most that: the mark's server picked it at least S earlier on
    // this clock's scale, so at least T earlier in true time, so its transaction (sent
    // in the same batch) had landed and this read saw it. A later append's mark
    // survives, and the list stays marked (re-checked each pass) until then.
    const { clockSkewMs, writeTimeoutMs } = this.options.cluster ?? DEFAULT_CLUSTER_SETTINGS;
    const checkedAt = this.clock.nowMicros() - BigInt(clockSkewMs + writeTimeoutMs) * 1000n;
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

  /**
   * Apply one transaction. Its writes and deletes of the item's rows all carry one
   * timestamp T, above the write time of the item's index row, which every earlier
   * transaction of the item wrote (with its own T) next to the item's rows. So T beats
   * every row this transaction deletes, whichever server wrote it with whatever clock:
   * a move applied on a server whose clock is behind still removes the old position.
   */
  private async apply(listId: string, tx: ListTx): Promise<void> {
    const { store } = this;
    const cells = await store.readCells(listItemIndexTable, { item_id: tx.itemId }, ['label']);
    const index = cells.row;
    const now = this.clock.nowMicros();
    const last = cells.writetime.label ?? null;
    const stamp = { timestamp: last !== null && last >= now ? last + 1n : now };
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
    const batch = (mutations: Mutation[]) => store.batch(mutations.map((m) => ({ ...m, options: stamp })));
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
    // 3. Delete the transaction, at the timestamp it was written with (its id's time).
    await store.delete(listTransactionsTable, { list_id: listId, tx_id: tx.txId }, { timestamp: microsOfTimeuuid(tx.txId) });
  }
}
