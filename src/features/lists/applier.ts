/**
 * The ledger list's background applier (seed 002): applies each list's transactions
 * in id order, a move in the seed's idempotent steps:
 *   1. soft delete the old item and insert the new one (one single-partition batch);
 *   2. hard delete the old item and the soft delete marker (with the item's index);
 *   3. mark the transaction applied (a cell, not a delete).
 * Re-running a transaction from any point is harmless. One applier per list at a time:
 * within a process a per-list lock serialises it, and across processes a lease
 * (insert-if-not-exists with a short TTL, renewed while the applier works, kept and
 * reused by its owner and left to expire, so it never leaves a tombstone), so a crashed
 * applier holds its list for seconds only.
 *
 * `wake(listId)` drains one list soon after a change to it. The timer pass (`runOnce`)
 * works the queue tables the Cassandra way: it reads each `pending_list_txs` shard from
 * its mark, settles every list found there (applying any transaction that landed late,
 * below one already applied), and then cuts what is settled, in the list's log and in
 * the shard, with one range tombstone each, raising the marks. A cut only passes ids
 * older than the clock-skew bound plus the write timeout, by the applier's clock, read
 * before the read that found them applied: any transaction with such an id, sent by a
 * server whose clock is behind, had landed by then and was seen. Marks are transaction
 * ids written at their own time, so they never go back, whichever clock wrote them.
 *
 * Late transactions (#35). Cassandra does not promise that window: an append that timed
 * out can land later (batchlog replay, a hint), below the list's mark, where a cut's
 * range tombstone (stamped at the mark's time, above the transaction's own) would hide
 * it for good, though the client may have been told it took effect (its count moved in
 * the same batch). So, with trailing passes on (`LATE_WRITE_PASSES`):
 * - a cut raises the list's mark as before, but its range tombstone only covers ids
 *   older than the longest horizon as well: a late transaction stays readable for as
 *   long as a trailing pass looks for it (readers start at the mark, or read back from
 *   the newest transaction to the first applied one, and never walk the applied rows
 *   below the mark);
 * - every append marks each transaction on the trailing work list of the `lists` job
 *   (windowed-job.ts); the timer pass runs that job's pass first (it only records which
 *   marks it read: what landed in time is this pass's), and a cut never passes the
 *   job's progress, so a mark the job counted as read belongs to a transaction that
 *   landed before the cut passed it, which the cut's settle then applied;
 * - the job's trailing passes hand every list with a mark that landed after its window
 *   was read to `settleLate`, which applies, under the list's lease, every transaction
 *   from the horizon on not applied yet, in id order, as `settle` applies a late one
 *   above the mark (one can also land above the mark but below a transaction applied
 *   since, whose queue entry was cut: readers, who stop at the first applied one, would
 *   not see it either). A list held by another applier fails the pass, which the
 *   next one retries (its marks are then still unread).
 * Past the longest horizon a late transaction is hidden by the next cut, as before.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { DEFAULT_CLUSTER_SETTINGS, DEFAULT_LIVE_SETTINGS, latePassesOf, type ClusterSettings, type LatePass } from '../../config.js';
import { WindowedJob, type LatePassReport } from '../../background/windowed-job.js';
import { ChangeClock, createChangeWriter, readNewestChange, type ChangeWriter } from '../../live/change-log.js';
import type { Clock } from '../../store/clock.js';
import { MonotonicClock, timestampAbove } from '../../store/clock.js';
import type { ClusteringBound, Mutation, Store } from '../../store/port.js';
import type { TableSpec } from '../../store/table.js';
import { startPeriodicTask, type PeriodicTask } from '../../background/periodic-task.js';
import { KeyedLock } from '../../saga/keyed-lock.js';
import { microsOfTimeuuid, minTimeuuidOfMicros } from '../../store/timeuuid.js';
import { renewIfOwned } from '../../store/owned-rows.js';
import {
  LIST_JOB,
  appendTransactions,
  appliedMark,
  markApplied,
  readPendingTransactions,
  readTransactionMark,
  visitTransactionsAbove,
  visitTransactionsFrom,
  type ListTx,
} from './ledger.js';
import { itemsCountKey, listChangeOf, listFeedOf, placementEntry, readListItems } from './lists.js';
import { currentEntries, indexChange } from '../../counts/count-ranks.js';
import type { CountWriter } from '../../counts/connection-counts.js';
import { planRebalance } from './rebalance.js';
import {
  PENDING_SHARDS,
  listApplierLeasesTable,
  listItemIndexTable,
  listItemsTable,
  listTransactionMarksTable,
  listTransactionsTable,
  pendingListMarksTable,
  pendingListTxsTable,
  pendingListsTable,
  pendingShardOf,
} from './lists-tables.js';

/** TTL of an applier's lease on a list, in seconds. */
export const LEASE_SECONDS = 10;
/** How often a working applier renews its lease (well inside the TTL). */
export const LEASE_RENEW_MS = 3_000;
/** Queue entries read per page by the timer pass. */
const QUEUE_PAGE = 500;

/** What settling a list came to. */
export interface Settled {
  /** Transactions applied. */
  readonly applied: number;
  /** Whether the list was settled in full (false: another applier holds it). */
  readonly complete: boolean;
}

/** Applies pending list transactions. */
export class ListApplier {
  private readonly lock = new KeyedLock();
  private timer: PeriodicTask | null = null;
  private stopped = false;
  /** Lists woken and not yet started; at most one drain per list is queued. */
  private readonly woken = new Set<string>();
  /** Lists being drained after a wake. */
  private readonly settling = new Set<string>();
  private readonly clock: Clock;
  /** This applier's identity in leases. */
  private readonly owner = randomUUID();
  /** Lists whose lease this applier holds, with when it claimed or renewed it (ms, its clock). */
  private readonly held = new Map<string, number>();
  /** Set once the old `pending_lists` table was found empty: it is never written again. */
  private legacyDrained = false;

  constructor(
    private readonly store: Store,
    private readonly options: {
      clock?: Clock;
      logger?: Logger;
      cluster?: ClusterSettings;
      /** TTL of a lease: how long a crashed applier can hold a list. */
      leaseSeconds?: number;
      /** Appends each applied change to the list's live feed (the process's writer; a writer of its own when absent). */
      changes?: ChangeWriter;
      /** Told how each timer pass ended (metrics). */
      onPass?: (ok: boolean) => void;
      /** Told each transaction applied here, with how long ago (by this applier's clock) it was made (metrics). */
      onApplied?: (delaySeconds: number) => void;
      /** Whether passes may run now (the process's presence holds its node); a wake while not is left to the timer. */
      runsWhen?: () => boolean;
      /** Told what each trailing pass cost and found (metrics). */
      onLatePass?: (report: LatePassReport) => void;
      /**
       * Records each item's placements in the counted index of its list's items (`offset`;
       * lists.ts, `placementEntry`); without it (tests of the applier alone) nothing is recorded.
       */
      counts?: CountWriter;
    } = {},
  ) {
    this.clock = options.clock ?? new MonotonicClock();
    this.changes = options.changes ?? createChangeWriter(new ChangeClock(this.clock), { retentionSeconds: DEFAULT_LIVE_SETTINGS.retentionSeconds });
    const cluster = options.cluster ?? DEFAULT_CLUSTER_SETTINGS;
    this.horizonMs = Math.max(0, ...latePassesOf(cluster).map((p) => p.horizonMs));
    this.trailing =
      this.horizonMs > 0
        ? new WindowedJob(
            store,
            {
              job: LIST_JOB,
              // What landed in time is the timer pass's (see the file comment).
              handle: async () => undefined,
              handleLate: async (listIds, context) => {
                for (const listId of listIds) this.lateApplied += await this.settleLate(listId, context.store, context.from);
              },
            },
            { clock: this.clock, cluster, logger: options.logger, onLatePass: options.onLatePass, runsWhen: options.runsWhen },
          )
        : null;
  }

  /** The longest trailing horizon (ms), 0 without trailing passes: the cut's tombstone stays that far behind. */
  private readonly horizonMs: number;
  /** The `lists` job: its marks tell which transactions landed late (see the file comment); null without trailing passes. */
  private readonly trailing: WindowedJob | null;
  /** Late transactions this applier's trailing passes applied. */
  lateApplied = 0;

  /** One trailing pass over the last `horizonMs` (the timers run them; tests call it). */
  runLate(horizonMs: number): Promise<LatePassReport> {
    return this.trailing ? this.trailing.runLate(horizonMs) : Promise.resolve({ horizonMs, reads: 0, late: 0 });
  }

  /** One trailing pass as its timer runs it (reported to `onLatePass`): what a simulated process runs instead of the timer. */
  trailingPass(pass: LatePass): Promise<LatePassReport> {
    return this.trailing ? this.trailing.trailingPass(pass) : Promise.resolve({ horizonMs: pass.horizonMs, reads: 0, late: 0 });
  }

  /**
   * Apply, under the list's lease, every transaction from `fromMs` on not applied yet
   * (late ones, below the list's mark or below a transaction applied since), in id
   * order; returns how many. Throws when another applier holds the list: the trailing
   * pass is then retried.
   */
  async settleLate(listId: string, reads: Store, fromMs: number): Promise<number> {
    const outcome = await this.leased(listId, async (keep) => {
      let applied = 0;
      await visitTransactionsFrom(reads, listId, minTimeuuidOfMicros(BigInt(fromMs) * 1000n), async (page) => {
        for (const { tx, applied: done } of page) {
          if (done) continue;
          if (!(await keep())) return false;
          await this.lock.with(listId, () => this.applyAndMark(listId, tx));
          applied++;
        }
        return true;
      });
      if (!(await keep())) throw new Error(`list ${listId} was taken by another applier during a trailing pass; the next pass retries it`);
      return applied;
    });
    if (outcome === null) throw new Error(`list ${listId} is held by another applier; the next trailing pass retries it`);
    return outcome;
  }

  private readonly changes: ChangeWriter;
  /**
   * The id of the last change this applier announced per list it holds: the next one
   * goes above it, so a list's changes reach subscribers in the order it applied them.
   * Read back from the feed whenever the lease is claimed anew (another server's
   * applier may have announced changes since, with a clock ahead of ours).
   */
  private readonly lastChange = new Map<string, string | null>();

  private get leaseSeconds(): number {
    return this.options.leaseSeconds ?? LEASE_SECONDS;
  }

  /** How often a lease is renewed: LEASE_RENEW_MS, or a third of a shorter lease. */
  private get renewMs(): number {
    return Math.min(LEASE_RENEW_MS, (this.leaseSeconds * 1000) / 3);
  }

  /** Apply the oldest pending transaction of a list; false when there is none. */
  applyNext(listId: string): Promise<boolean> {
    return this.lock.with(listId, async () => {
      const [tx] = await readPendingTransactions(this.store, listId);
      if (!tx) return false;
      await this.applyAndMark(listId, tx);
      return true;
    });
  }

  /**
   * Apply the pending transactions of a list; returns how many, or 0 when another
   * applier holds the list. The lease is renewed as it goes (every `renewMs`),
   * and the work stops if it was lost.
   */
  async drain(listId: string): Promise<number> {
    return (await this.leased(listId, (keep) => this.drainLeased(listId, keep))) ?? 0;
  }

  /**
   * Settle one list in full: apply every transaction above its mark not applied yet,
   * late ones included, then cut what no late transaction can join any more.
   */
  async settle(listId: string): Promise<Settled> {
    const outcome = await this.leased(listId, async (keep): Promise<Settled> => {
      const bound = this.cutBound();
      const mark = await readTransactionMark(this.store, listId);
      let applied = 0;
      let cut: string | null = null;
      let contiguous = true;
      let held = true;
      await visitTransactionsAbove(this.store, listId, mark, async (page) => {
        for (const { tx, applied: done } of page) {
          if (!done) {
            if (!(held = await keep())) return false;
            await this.lock.with(listId, () => this.applyAndMark(listId, tx));
            applied++;
          }
          if (contiguous && microsOfTimeuuid(tx.txId) <= bound) cut = tx.txId;
          else contiguous = false;
        }
        return true;
      });
      if (!held) return { applied, complete: false };
      // Anything appended meanwhile (a rebalance, say): apply it too.
      applied += await this.drainLeased(listId, keep);
      if (!(await keep())) return { applied, complete: false };
      if (cut !== null && cut !== mark) await this.cutLog(listId, cut);
      return { applied, complete: true };
    });
    return outcome ?? { applied: 0, complete: false };
  }

  private async drainLeased(listId: string, keep: () => Promise<boolean>): Promise<number> {
    let n = 0;
    for (;;) {
      const txs = await this.lock.with(listId, () => readPendingTransactions(this.store, listId));
      if (txs.length === 0) return n;
      for (const tx of txs) {
        if (!(await keep())) return n;
        await this.lock.with(listId, () => this.applyAndMark(listId, tx));
        n++;
      }
    }
  }

  /**
   * Run `work` holding the list's lease (null when another applier holds it). `keep()`
   * renews the lease every `renewMs` and says whether it is still held. The lease is
   * kept when the work is done, not deleted (a delete is a tombstone): while this
   * applier renewed it less than `renewMs` ago it holds it without asking, and
   * another server's applier gets the list once it has expired.
   */
  private async leased<T>(listId: string, work: (keep: () => Promise<boolean>) => Promise<T>): Promise<T | null> {
    const key = { list_id: listId };
    const since = this.held.get(listId);
    if (since === undefined || this.nowMs() - since >= this.renewMs) {
      this.held.delete(listId);
      if (!(await this.claim(listId))) return null;
      this.held.set(listId, this.nowMs());
      this.lastChange.delete(listId);
    }
    const keep = async () => {
      const at = this.held.get(listId);
      if (at !== undefined && this.nowMs() - at >= this.renewMs) {
        const renewedAt = this.nowMs();
        if (await renewIfOwned(this.store, listApplierLeasesTable, key, 'owner', this.owner, this.leaseSeconds)) this.held.set(listId, renewedAt);
        else this.held.delete(listId);
      }
      return this.held.has(listId);
    };
    return work(keep);
  }

  private nowMs(): number {
    return Number(this.clock.nowMicros() / 1000n);
  }

  /**
   * Claim a list's lease: a new claim, or our own claim still alive, reused and
   * renewed (stamped from its own write time, see owned-rows.ts).
   */
  private async claim(listId: string): Promise<boolean> {
    const claim = await this.store.insertIfNotExists(listApplierLeasesTable, { list_id: listId, owner: this.owner }, { ttl: this.leaseSeconds });
    if (claim.applied) return true;
    if (claim.existing?.owner !== this.owner) return false;
    return renewIfOwned(this.store, listApplierLeasesTable, { list_id: listId }, 'owner', this.owner, this.leaseSeconds);
  }

  /**
   * The newest id a cut may pass: older than the clock-skew bound plus the write
   * timeout by this clock, taken before the read that finds the entries applied, and
   * below the trailing job's progress (see the file comment).
   */
  private cutBound(): bigint {
    const bound = this.windowBound();
    if (!this.trailing) return bound;
    // Never past what the trailing job has read (see the file comment).
    const read = this.trailing.progress();
    if (read === null) return -1n;
    const readMicros = BigInt(read) * 1000n - 1n;
    return readMicros < bound ? readMicros : bound;
  }

  /** Older than the clock-skew bound plus the write timeout, by this clock. */
  private windowBound(): bigint {
    const { clockSkewMs, writeTimeoutMs } = this.options.cluster ?? DEFAULT_CLUSTER_SETTINGS;
    return this.clock.nowMicros() - BigInt(clockSkewMs + writeTimeoutMs) * 1000n;
  }

  /**
   * Cut a list's log up to `mark`: the mark raised, and the range tombstone kept the
   * longest trailing horizon behind (see the file comment), covering only ids below
   * both, stamped with its bound's time as a cut is.
   */
  private async cutLog(listId: string, mark: string): Promise<void> {
    const partition = { list_id: listId };
    const markMicros = microsOfTimeuuid(mark);
    const behind = this.clock.nowMicros() - BigInt(this.horizonMs) * 1000n;
    if (this.horizonMs === 0 || markMicros <= behind) return this.cut(listTransactionsTable, listTransactionMarksTable, partition, mark);
    await this.store.deleteRange(listTransactionsTable, partition, { upper: { values: [minTimeuuidOfMicros(behind)], inclusive: false } }, { timestamp: behind - 1n });
    await this.store.upsert(listTransactionMarksTable, { ...partition, mark }, { timestamp: markMicros });
  }

  /**
   * Cut a queue up to `mark`, inclusive: one range tombstone from the partition's head
   * (so it also covers rows left by an older layout), then the mark itself. Both are
   * stamped with the mark's time: above every row they cover, which were written at
   * their own ids' times, and ordered with every other server's cuts.
   */
  private async cut(queue: TableSpec, marks: TableSpec, partition: Record<string, string | number>, mark: string): Promise<void> {
    const timestamp = microsOfTimeuuid(mark);
    await this.store.deleteRange(queue, partition, { upper: { values: [mark], inclusive: true } }, { timestamp });
    await this.store.upsert(marks, { ...partition, mark }, { timestamp });
  }

  /**
   * The timer pass: settle every list queued in `pending_list_txs`, shard by shard, and
   * cut the entries whose lists are settled; then the lists the old `pending_lists`
   * table still marks. Returns how many transactions were applied.
   */
  async runOnce(): Promise<number> {
    let applied = 0;
    this.passPending = null;
    try {
      // The trailing job's own pass first: the cuts below never pass it.
      await this.trailing?.runOnce();
      for (let shard = 0; shard < PENDING_SHARDS; shard++) applied += await this.runShard(shard);
      if (!this.legacyDrained) applied += await this.runLegacy();
    } finally {
      this.lastPending = this.passPending;
    }
    return applied;
  }

  /** The oldest transaction (µs) the running pass found and could not settle. */
  private passPending: bigint | null = null;
  /** The same, of the last finished pass. */
  private lastPending: bigint | null = null;

  /**
   * The applier's lag, in seconds: the age of the oldest queued transaction the last
   * timer pass left pending (its list held by another applier, or the pass failed on
   * it); 0 when that pass settled every list it found.
   */
  lagSeconds(): number {
    if (this.lastPending === null) return 0;
    return Math.max(0, Number(this.clock.nowMicros() - this.lastPending) / 1e6);
  }

  private notePending(txId: string): void {
    const micros = microsOfTimeuuid(txId);
    if (this.passPending === null || micros < this.passPending) this.passPending = micros;
  }

  private async runShard(shard: number): Promise<number> {
    const bound = this.cutBound();
    const mark = ((await this.store.get(pendingListMarksTable, { shard }))?.mark as string | undefined) ?? null;
    const settled = new Map<string, Settled>();
    let applied = 0;
    let cut: string | null = null;
    let contiguous = true;
    let lower: ClusteringBound | undefined = mark ? { values: [mark], inclusive: false } : undefined;
    for (;;) {
      const entries = await this.store.slice(pendingListTxsTable, { partition: { shard }, limit: QUEUE_PAGE, ...(lower && { lower }) });
      for (const entry of entries) {
        const listId = entry.list_id as string;
        const txId = entry.tx_id as string;
        let outcome = settled.get(listId);
        if (!outcome) {
          try {
            outcome = await this.settle(listId);
          } catch (err) {
            this.notePending(txId);
            throw err;
          }
          settled.set(listId, outcome);
          applied += outcome.applied;
        }
        if (!outcome.complete) this.notePending(txId);
        if (contiguous && outcome.complete && microsOfTimeuuid(txId) <= bound) cut = txId;
        else contiguous = false;
      }
      if (entries.length < QUEUE_PAGE || this.stopped) break;
      const last = entries[entries.length - 1]!;
      lower = { values: [last.tx_id!, last.list_id!], inclusive: false };
    }
    if (cut !== null) await this.cut(pendingListTxsTable, pendingListMarksTable, { shard }, cut);
    return applied;
  }

  /**
   * Lists marked in the old `pending_lists` (before the queue): settle each and unmark
   * it as the old applier did, with the time of a read that found it drained, moved
   * back by the skew bound plus the write timeout.
   */
  private async runLegacy(): Promise<number> {
    let applied = 0;
    let found = false;
    for (let shard = 0; shard < PENDING_SHARDS; shard++) {
      const marks = await this.store.slice(pendingListsTable, { partition: { shard }, limit: QUEUE_PAGE });
      for (const mark of marks) {
        found = true;
        const listId = mark.list_id as string;
        const checkedAt = this.windowBound();
        const outcome = await this.settle(listId);
        applied += outcome.applied;
        if (outcome.complete) {
          await this.store.delete(pendingListsTable, { shard: pendingShardOf(listId), list_id: listId }, { timestamp: checkedAt });
        }
      }
    }
    if (!found) this.legacyDrained = true;
    return applied;
  }

  /**
   * Drain `listId` soon (after a change was appended to it). Wakes coalesce per list:
   * while one is queued, more wakes add nothing; a wake while the list is being
   * drained queues one more pass, which sees every change appended meanwhile.
   */
  wake(listId: string): void {
    if (this.stopped || this.woken.has(listId) || this.options.runsWhen?.() === false) return;
    this.woken.add(listId);
    if (!this.settling.has(listId)) setImmediate(() => void this.settleWoken(listId));
  }

  private async settleWoken(listId: string): Promise<void> {
    this.woken.delete(listId);
    if (this.stopped) return;
    this.settling.add(listId);
    try {
      await this.drain(listId);
    } catch (err) {
      this.options.logger?.error({ err, listId }, 'list applier pass failed; the timer will retry');
    } finally {
      this.settling.delete(listId);
      if (this.woken.has(listId)) setImmediate(() => void this.settleWoken(listId));
    }
  }

  /** Run `runOnce` every `intervalMs`, and the trailing passes on their own timers, until stopped. */
  start(intervalMs: number): void {
    if (this.timer) return;
    this.trailing?.startTrailing();
    this.timer = startPeriodicTask({
      intervalMs,
      runsWhen: this.options.runsWhen,
      pass: async () => {
        await this.runOnce();
        this.options.onPass?.(true);
      },
      onError: (err) => {
        this.options.onPass?.(false);
        this.options.logger?.error({ err }, 'list applier pass failed; will retry');
      },
    });
  }

  /** Stop the timer and ignore later wakes. */
  stop(): void {
    this.stopped = true;
    this.trailing?.stop();
    this.timer?.stop();
    this.timer = null;
  }

  /**
   * Apply one transaction and mark it applied; then, if it landed in a crowded gap,
   * rebalance around its item (a transaction of its own, applied after it).
   */
  private async applyAndMark(listId: string, tx: ListTx): Promise<void> {
    // A change in one batch carries its own mark; a move's mark is its step 3.
    if (!(await this.apply(listId, tx))) await markApplied(this.store, listId, tx.txId);
    this.options.onApplied?.(Number(this.clock.nowMicros() - microsOfTimeuuid(tx.txId)) / 1e6);
    if ((tx.kind === 'add' || tx.kind === 'move') && tx.crowded) {
      const [item] = await readListItems(this.store, listId, [tx.itemId]);
      const moves = item ? await planRebalance(this.store, listId, item, this.clock.nowMicros()) : [];
      if (moves.length) await appendTransactions(this.store, this.clock, listId, moves);
    }
  }

  /**
   * The change that announces an applied transaction to the list's feed: its id goes
   * above the last change announced for the list (read back from the feed when this
   * applier has none: the lease was claimed anew).
   */
  private async announce(listId: string, tx: ListTx, item: { label: string; weight: bigint; seq: bigint } | null): Promise<Mutation[]> {
    let last = this.lastChange.get(listId);
    if (last === undefined) {
      const { clockSkewMs, writeTimeoutMs } = this.options.cluster ?? DEFAULT_CLUSTER_SETTINGS;
      const now = this.clock.nowMicros();
      // A change of the last holder's, made with a clock up to the skew ahead, and its
      // lease lapsed at least LEASE_SECONDS ago: it lies within this range.
      const reach = BigInt(2 * clockSkewMs + writeTimeoutMs + this.leaseSeconds * 1000) * 1000n;
      last = (await readNewestChange(this.store, listFeedOf(listId).feed, now - reach, now + BigInt(clockSkewMs) * 1000n))?.id ?? null;
    }
    const previousItemId = item && (tx.kind === 'add' || tx.kind === 'move') ? await this.itemBefore(listId, { ...tx.to, itemId: tx.itemId }) : null;
    const change = listChangeOf(listId, this.changes.nextId(last ?? undefined), tx, item, previousItemId);
    this.lastChange.set(listId, change.id);
    return this.changes.mutations(change);
  }

  /**
   * The item right before a position as the applied rows stand (the item moving there
   * and soft-deleted rows left out): where a subscriber places an added or moved item.
   */
  private async itemBefore(listId: string, at: { weight: bigint; seq: bigint; itemId: string }): Promise<string | null> {
    let upper: ClusteringBound = { values: [at.weight, at.seq, at.itemId], inclusive: false };
    for (let limit = 8; ; limit = Math.min(limit * 4, 1_024)) {
      const rows = await this.store.slice(listItemsTable, { partition: { list_id: listId }, upper, reverse: true, limit });
      // Newest first in reverse: a soft-delete marker comes right before the row it shadows.
      const shadowed = new Set<string>();
      for (const row of rows) {
        const id = row.item_id as string;
        const key = `${row.weight}|${row.seq}|${id}`;
        if (row.deleted === true) shadowed.add(key);
        else if (id !== at.itemId && !shadowed.has(key)) return id;
      }
      if (rows.length < limit) return null;
      const last = rows[rows.length - 1]!;
      upper = { values: [last.weight!, last.seq!, last.item_id!, last.deleted!], inclusive: false };
    }
  }

  /**
   * Apply one transaction. Its writes and deletes of the item's rows all carry one
   * timestamp T, above the write time of the item's index row, which every earlier
   * transaction of the item wrote (with its own T) next to the item's rows. So T beats
   * every row this transaction deletes, whichever server wrote it with whatever clock:
   * a move applied on a server whose clock is behind still removes the old position.
   * A change applied in one batch is marked applied in that batch (true returned).
   * The batch that makes the change (a move's step 2) also announces it to the list's
   * live feed; a step run again after a failure announces it again, which subscribers
   * receive once (a change is identified by its transaction).
   */
  private async apply(listId: string, tx: ListTx): Promise<boolean> {
    const { store } = this;
    // Every kind reads where its item stands: an add too, since its item may be in the
    // list already (see the add case).
    const cells = await store.readCells(listItemIndexTable, { item_id: tx.itemId }, ['label']);
    const index = cells.row;
    const stamp = { timestamp: timestampAbove(this.clock, cells.writetime.label ?? null) };
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
    const stamped = (mutations: Mutation[]) => mutations.map((m) => ({ ...m, options: stamp }));
    // The item's placement entering (+1) or leaving (-1) the counted index, in the batch
    // that makes the position permanent (or ends it), with the count's own timestamps;
    // each entry under its current generation (`currentEntries`: one read).
    const { counts } = this.options;
    const touched: Array<{ weight: bigint; seq: bigint }> = [];
    if (tx.kind === 'add' && !at) touched.push(tx.to);
    if (tx.kind === 'move' && at && (at.weight !== tx.to.weight || at.seq !== tx.to.seq)) touched.push(at, tx.to);
    if (tx.kind === 'remove' && at) touched.push(at);
    const countKey = itemsCountKey(listId);
    const entries = counts && touched.length > 0 ? await currentEntries(store, countKey, touched.map((p) => placementEntry(tx.itemId, p))) : [];
    const placed = (p: { weight: bigint; seq: bigint }, sign: 1 | -1): Mutation[] =>
      counts ? indexChange(counts, countKey, entries[touched.indexOf(p)]!, sign) : [];
    const finalBatch = async (mutations: Mutation[], announced: Mutation[]) => {
      await store.batch([...stamped(mutations), ...announced, appliedMark(listId, tx.txId)]);
      return true;
    };
    switch (tx.kind) {
      case 'add':
        // An add of an item the list already holds: the same item added again by a redo
        // under its idempotency key (which draws the same item id), or the first attempt's
        // add landing after it. The item stays where it is, once; only the mark is written.
        if (at) return finalBatch([], []);
        return finalBatch(
          [
            { kind: 'upsert', table: listItemsTable, row: { ...row(tx.to, false), label: tx.label } },
            { kind: 'upsert', table: listItemIndexTable, row: indexRow(tx.to, tx.label) },
          ],
          [...(await this.announce(listId, tx, { label: tx.label, ...tx.to })), ...placed(tx.to, 1)],
        );
      case 'move': {
        // A move of an item that no longer exists, or one already through step 2: nothing to do.
        if (!at || (at.weight === tx.to.weight && at.seq === tx.to.seq)) break;
        // 1. Soft delete the old item and insert the new one.
        await store.batch(
          stamped([
            { kind: 'upsert', table: listItemsTable, row: { ...row(at, true), label } },
            { kind: 'upsert', table: listItemsTable, row: { ...row(tx.to, false), label } },
          ]),
        );
        // 2. Hard delete the old item and the soft delete marker.
        await store.batch([
          ...stamped([
            { kind: 'delete', table: listItemsTable, key: row(at, false) },
            { kind: 'delete', table: listItemsTable, key: row(at, true) },
            { kind: 'upsert', table: listItemIndexTable, row: indexRow(tx.to, label) },
          ]),
          ...(await this.announce(listId, tx, { label, ...tx.to })),
          ...placed(at, -1),
          ...placed(tx.to, 1),
        ]);
        break;
      }
      case 'rename':
        if (!at) break;
        return finalBatch(
          [
            { kind: 'upsert', table: listItemsTable, row: { ...row(at, false), label: tx.label } },
            { kind: 'upsert', table: listItemIndexTable, row: indexRow(at, tx.label) },
          ],
          await this.announce(listId, tx, { label: tx.label, ...at }),
        );
      case 'remove':
        if (!at) break;
        return finalBatch(
          [
            { kind: 'delete', table: listItemsTable, key: row(at, false) },
            { kind: 'delete', table: listItemsTable, key: row(at, true) },
            { kind: 'delete', table: listItemIndexTable, key: { item_id: tx.itemId } },
          ],
          [...(await this.announce(listId, tx, null)), ...placed(at, -1)],
        );
    }
    return false;
  }
}
