/**
 * Exact connection sizes (`totalCount`) on many servers, without a scan, without Paxos
 * and without non-idempotent writes: seed 001's unique counter and the acceptance
 * verifier's closed windows, extended to items that are also removed.
 *
 * What is counted: the items of a connection (a user's posts, a list's items, the
 * suspended users, a meeting's acceptors), each named by a stable id (post id, item id,
 * the suspension's saga id, the acceptor's user id) under a count key (`posts:<user>`,
 * …). An item counts from its first addition until its first removal.
 *
 * Writes. Every change that adds or removes an item puts, in the logged batch (or saga
 * step) that makes the change, all idempotent upserts (`CountWriter`):
 * 1. the item's ledger cell (`count_items.added_at` or `removed_at`), the attempt's time
 *    t written `USING TIMESTAMP 2^63-1 - t`: whatever the order of arrival, the cell
 *    holds the earliest attempt (first write wins);
 * 2. an event row (window of t, item, sign) in the count's partition;
 * 3. the count's span (`first_window`, `last_window`) and a mark on the verifier's work
 *    list (windowed-job.ts);
 * 4. the live cell of this server's clock node in the window row: this process's own
 *    running total of its changes to that count in that window, with a timestamp from
 *    the process clock taken with the total, so its last value wins.
 * A retried batch rewrites the same cells with the same values. A change made twice
 * (a saga step run again by recovery, two servers deleting one post, a recount racing
 * a new post) writes two attempts; the ledger keeps one, and only it will count.
 *
 * Settling (the verifier, on every server, count-verifier.ts). A window is closed once
 * every server's clock has passed its end by the skew bound plus the write timeout:
 * every attempt stamped before its end has landed, so the ledger's winner among them is
 * final. For the events of a closed window w the verifier decides, from the ledger:
 * an addition counts if it is the item's first and lies in w, unless the item was
 * removed before it was added (a compensation that ran before its step landed); a
 * removal counts if it is the item's first, lies in w, and follows the first addition.
 * `settled_count` through T' is the count through T plus the decided changes of the
 * windows in between: a pure function of T', so any number of verifiers, in any order,
 * write the same pair, `USING TIMESTAMP T'` so a later settlement always wins. A full
 * recount (`settleFully`) sums the same rules over the whole ledger and gives the same
 * value for the same T'. Counter columns are never used: no write here can count twice.
 *
 * Reading. A count is `settled_count` plus the live cells of the windows from the
 * settlement on. The windows to add are known from the head (its span, its settlement)
 * and the verifier's progress (every count with changes before it is settled at least
 * that far): in the normal case they lie within the last ~20 s, which the read asks for
 * by key beside the heads: one `getMany` for every count of a request. Only when the
 * verifiers lag (or none runs) does a count need a slice of its window rows.
 *
 * Late changes (#35). A change whose batch lands after its window was settled (batchlog
 * replay, a hint) is missing from the settlement, and no reader adds its window's live
 * cells (they lie before the verifier's progress). It changes nothing the settlement
 * counted before its own window: the ledger's cells only move earlier, and an item's
 * contribution through T depends only on which of its first addition and first
 * removal lie before T and their order, which a change at or after T cannot alter. So
 * a settlement in full from the ledger through any bound is exact once the change has
 * landed. The verifier's trailing passes (windowed-job.ts) find its mark and write
 * `redoMutations`: a bound R above now plus the skew, on the head (`redo_through`,
 * stamped R so the highest stays), and a mark in R's window. A verifier that reads a
 * head settled below R settles in full instead of incrementally; every verifier that
 * read the head before R landed settles to a bound below R (its clock was at most the
 * skew ahead, its bound the skew plus the write timeout behind it); the pass that
 * visits R's mark settles to R or past it. So the head ends at a full settlement
 * through R or beyond, written after the late change landed, and no settlement that
 * missed it can win over it: the count, and its counted index (rebuilt in full), are
 * exact again. Two trailing passes write the same kind of cells twice: harmless.
 *
 * Exactness. Once writes have settled (their windows closed and visited) a count is
 * exact. Before, live cells stand in for the unsettled windows: each server's cell
 * counts its own attempts, so a count is off only by changes still in flight (a batch
 * not landed, a duplicate attempt not yet ruled out, a process restarted within one
 * window on the same clock node), and it is never shown below zero.
 */
import type { ClusterSettings } from '../config.js';
import { allRowsOf } from '../paging/partition-chunks.js';
import type { Clock } from '../store/clock.js';
import { MAX_TIMESTAMP, type Mutation, type Store } from '../store/port.js';
import type { Row } from '../store/table.js';
import { JOB_WINDOW_MS, markMutation, windowOf, type WindowedJobSpec } from '../background/windowed-job.js';
import { rebuildRanks, settleRanks, type DecidedChange, type RankOfItem } from './count-ranks.js';
import { HEAD_SLOT, NODE_COLUMNS, connectionCountsTable, countEventsTable, countItemsTable, nodeColumn } from './count-tables.js';

/** Event and window rows outlive their settlement (a few seconds) by two days. */
export const EVENT_TTL_SECONDS = 2 * 86_400;
/** The verifier's job name (marks and progress). */
export const COUNT_JOB = 'counts';

/** An item added (+1) to or removed (-1) from a counted connection. */
export interface CountChange {
  /** The counted connection (`posts:<userId>`, …). */
  readonly key: string;
  /** The item's stable id within it. */
  readonly item: string;
  readonly sign: 1 | -1;
}

/**
 * The tag of the mark a change to a count writes (`+item` or `-item`): also what tells
 * the live hub which change a count's mark stands for (live-hub.ts, `FeedSpec.markTag`).
 */
export function countMarkTag(change: Pick<CountChange, 'item' | 'sign'>): string {
  return `${change.sign > 0 ? '+' : '-'}${change.item}`;
}

/** One attempt at a change: when (µs, the process clock) and so in which window. */
export interface CountAttempt extends CountChange {
  readonly micros: bigint;
  readonly window: number;
}

/** A page of a connection with the key its `totalCount` is read by. */
export interface Counted {
  readonly countKey: string;
}

/** A window row's key. */
function windowKey(key: string, window: number): Row {
  return { count_key: key, slot: BigInt(window) };
}

/** The head row's key. */
function headKey(key: string): Row {
  return { count_key: key, slot: HEAD_SLOT };
}

/**
 * The head's span of windows with changes, widened to `window`: the earliest window has
 * the highest timestamp, so it stays; the latest window likewise.
 */
function spanOf(key: string, window: number): Mutation[] {
  const micros = BigInt(window) * 1000n;
  return [
    { kind: 'upsert', table: connectionCountsTable, row: { ...headKey(key), first_window: BigInt(window) }, options: { timestamp: MAX_TIMESTAMP - micros } },
    { kind: 'upsert', table: connectionCountsTable, row: { ...headKey(key), last_window: BigInt(window) }, options: { timestamp: micros } },
  ];
}

/**
 * This process's running totals, one per (count, window): the values of its live cells.
 * Only the windows still open matter; older ones are dropped as new ones start.
 */
class LiveTally {
  private readonly totals = new Map<string, bigint>();
  private newest = 0;

  next(key: string, window: number, delta: bigint): bigint {
    if (window > this.newest) {
      this.newest = window;
      // Windows more than a minute old are settled or about to be: forget them.
      for (const k of this.totals.keys()) if (Number(k.slice(0, k.indexOf('|'))) < window - 60_000) this.totals.delete(k);
    }
    return this.set(key, window, (this.totals.get(`${window}|${key}`) ?? 0n) + delta);
  }

  set(key: string, window: number, total: bigint): bigint {
    this.totals.set(`${window}|${key}`, total);
    return total;
  }
}

/** Writes the counts' side of every change (see the file comment); one per process. */
export class CountWriter {
  private readonly tally = new LiveTally();
  private readonly column: string;

  /** `node`: this process's clock node (presence.ts), which owns one live cell per window. */
  constructor(
    private readonly clock: Clock,
    node: number,
  ) {
    this.column = nodeColumn(node);
  }

  /** Everything `change` writes, live cell included: add it to the write's logged batch. */
  mutations(change: CountChange): Mutation[] {
    const attempt = this.attempt(change);
    return [...this.recorded(attempt), this.live(attempt)];
  }

  /** An attempt at `change`, made now (or at `micros`, the write's own time). */
  attempt(change: CountChange, micros: bigint = this.clock.nowMicros()): CountAttempt {
    return { ...change, micros, window: windowOf(Number(micros / 1000n)) };
  }

  /**
   * What decides and settles an attempt (ledger cell, event, span, mark), without the
   * live cell: for a write that learns only afterwards whether it counts (an acceptance
   * reads back whether its write won), which then writes `live`.
   */
  recorded(attempt: CountAttempt): Mutation[] {
    const { key, item, sign, micros, window } = attempt;
    return [
      {
        kind: 'upsert',
        table: countItemsTable,
        row: { count_key: key, item, [sign > 0 ? 'added_at' : 'removed_at']: micros },
        // seed 001: the earlier the attempt, the higher its timestamp: the first one stays.
        options: { timestamp: MAX_TIMESTAMP - micros },
      },
      {
        kind: 'upsert',
        table: countEventsTable,
        row: { count_key: key, slot: BigInt(window), item, sign },
        options: { ttl: EVENT_TTL_SECONDS },
      },
      ...spanOf(key, window),
      // Tagged with the event: a late one beside an in-time one of the count is found.
      markMutation(COUNT_JOB, key, window, countMarkTag(attempt)),
    ];
  }

  /**
   * The live cell of this process's node in the attempt's window, with its new running
   * total. The total and the cell's timestamp are taken together from one process, so
   * the later total always carries the later timestamp and wins.
   */
  live(attempt: CountAttempt): Mutation {
    return this.liveCell(attempt.key, attempt.window, this.tally.next(attempt.key, attempt.window, BigInt(attempt.sign)));
  }

  /** This node's live cell of `key` in `window`, holding `total`. */
  private liveCell(key: string, window: number, total: bigint): Mutation {
    return {
      kind: 'upsert',
      table: connectionCountsTable,
      row: { ...windowKey(key, window), [this.column]: total },
      options: { timestamp: this.clock.nowMicros(), ttl: EVENT_TTL_SECONDS },
    };
  }

  /**
   * A correction of this node's live cell in the current window by `delta`, from the
   * value `stored` there (what a reconciliation read): the cell the unsettled windows
   * lack (or hold too many). From the stored value rather than this process's running
   * total, which may count a live write that failed.
   */
  correction(key: string, delta: bigint, stored: (window: number, column: string) => bigint): Mutation[] {
    const window = windowOf(Number(this.clock.nowMicros() / 1000n));
    return [this.liveCell(key, window, this.tally.set(key, window, stored(window, this.column) + delta)), ...spanOf(key, window)];
  }
}

/** What reading counts needs besides the store. */
export interface CountReadOptions {
  /** The reader's clock (ms). */
  readonly nowMs: number;
  readonly cluster: ClusterSettings;
  /** The verifier's progress as this process last confirmed it (windowed-job.ts), or null. */
  readonly progress: number | null;
}

/** The sum of a window row's live cells. */
function liveSum(row: Row | null | undefined): bigint {
  let sum = 0n;
  if (row) for (const c of NODE_COLUMNS) sum += (row[c] as bigint | null | undefined) ?? 0n;
  return sum;
}

/**
 * Counts by key, in order (0 for a key never counted): one `getMany` for all of them in
 * the normal case, plus a slice per count whose unsettled windows lie beyond the ones
 * read by key (its verifiers lag). Never below zero.
 */
export async function readConnectionCounts(store: Store, keys: readonly string[], options: CountReadOptions): Promise<number[]> {
  const { nowMs, cluster } = options;
  // The windows a settled count can still need: from this process's verifier progress
  // (every count is settled at least that far), or without one, back to where the
  // verifiers' progress lags (skew, write timeout, a window, a pass interval, and our
  // clock ahead by the skew); forward to where a clock ahead of ours can write.
  const guess = windowOf(nowMs - 2 * cluster.clockSkewMs - cluster.writeTimeoutMs - 3 * JOB_WINDOW_MS);
  const lowest = options.progress !== null && options.progress > guess ? options.progress : guess;
  const highest = windowOf(nowMs + cluster.clockSkewMs);
  const windows: number[] = [];
  for (let w = lowest; w <= highest; w += JOB_WINDOW_MS) windows.push(w);
  const perKey = 1 + windows.length;
  const rows = await store.getMany(
    connectionCountsTable,
    keys.flatMap((key) => [headKey(key), ...windows.map((w) => windowKey(key, w))]),
  );
  return Promise.all(
    keys.map(async (key, i) => {
      const head = rows[i * perKey];
      const settled = (head?.settled_count as bigint | null | undefined) ?? 0n;
      const first = head?.first_window as bigint | null | undefined;
      const last = head?.last_window as bigint | null | undefined;
      if (first == null || last == null) return Number(settled);
      // Windows before the settlement are in it; before the verifiers' progress, this
      // count had no change the settlement does not hold (windowed-job.ts).
      let from = Number(first);
      const through = head!.settled_through as bigint | null | undefined;
      if (through != null) from = Math.max(from, Number(through));
      if (options.progress !== null) from = Math.max(from, options.progress);
      let live = 0n;
      if (from > Number(last)) live = 0n;
      else if (from >= lowest && Number(last) <= highest) {
        for (let w = from; w <= Number(last); w += JOB_WINDOW_MS) live += liveSum(rows[i * perKey + 1 + (w - lowest) / JOB_WINDOW_MS]);
      } else {
        const slice = await allRowsOf(store, connectionCountsTable, { count_key: key }, { lower: { values: [BigInt(from)], inclusive: true } });
        for (const r of slice) live += liveSum(r);
      }
      const count = settled + live;
      return count > 0n ? Number(count) : 0;
    }),
  );
}

/** A ledger row's two cells. */
interface Ledger {
  readonly added: bigint | null;
  readonly removed: bigint | null;
}

function ledgerOf(row: Row | null | undefined): Ledger {
  return { added: (row?.added_at as bigint | null | undefined) ?? null, removed: (row?.removed_at as bigint | null | undefined) ?? null };
}

const windowOfMicros = (micros: bigint) => windowOf(Number(micros / 1000n));

/** Whether an item's first addition counts: it came first (a removal before it undid nothing). */
function additionCounts({ added, removed }: Ledger): boolean {
  return added !== null && (removed === null || removed > added);
}

/** Whether an item's first removal counts: it follows the first addition. */
function removalCounts({ added, removed }: Ledger): boolean {
  return added !== null && removed !== null && removed > added;
}

/**
 * What the changes of the windows from `from` to `through` (ms, exclusive) add to a
 * count, each event judged against the item's ledger (see the file comment), and the
 * changes that count.
 */
async function netChange(store: Store, key: string, from: number, through: number | null): Promise<{ net: bigint; decided: DecidedChange[] }> {
  const events = await allRowsOf(store, countEventsTable, { count_key: key }, {
    lower: { values: [BigInt(from)], inclusive: true },
    ...(through !== null && { upper: { values: [BigInt(through)], inclusive: false } }),
  });
  const decided: DecidedChange[] = [];
  if (events.length === 0) return { net: 0n, decided };
  const items = [...new Set(events.map((e) => e.item as string))];
  const ledgers = new Map<string, Ledger>();
  const rows = await store.getMany(countItemsTable, items.map((item) => ({ count_key: key, item })));
  items.forEach((item, i) => ledgers.set(item, ledgerOf(rows[i])));
  let net = 0n;
  for (const e of events) {
    const item = e.item as string;
    const ledger = ledgers.get(item)!;
    const window = Number(e.slot as bigint);
    if (e.sign === 1 && ledger.added !== null && windowOfMicros(ledger.added) === window && additionCounts(ledger)) decided.push({ item, sign: 1, window });
    if (e.sign === -1 && ledger.removed !== null && windowOfMicros(ledger.removed) === window && removalCounts(ledger)) decided.push({ item, sign: -1, window });
  }
  for (const d of decided) net += BigInt(d.sign);
  return { net, decided };
}

/** Store a settlement: `count` items through `through` (ms), stamped so a later one wins. */
function writeSettlement(store: Store, key: string, through: number, count: bigint): Promise<void> {
  return store.upsert(
    connectionCountsTable,
    { ...headKey(key), settled_through: BigInt(through), settled_count: count },
    { timestamp: BigInt(through) * 1000n },
  );
}

/**
 * Settle a count through `through` (a closed window's end, ms) from its last
 * settlement: add the decided changes of the windows in between. Idempotent (see the
 * file comment). Returns the settled count.
 */
export async function settleIncrementally(store: Store, key: string, through: number, rankOf: RankOfItem = noRanks): Promise<number> {
  const head = await store.get(connectionCountsTable, headKey(key));
  const base = head?.settled_through as bigint | null | undefined;
  const settled = (head?.settled_count as bigint | null | undefined) ?? 0n;
  if (base != null && Number(base) >= through) return Number(settled);
  // A late change was found (redoMutations): settle in full until past its bound.
  const redo = head?.redo_through as bigint | null | undefined;
  if (redo != null && (base == null || Number(base) < Number(redo))) return settleFully(store, key, through, rankOf);
  const first = head?.first_window as bigint | null | undefined;
  const from = base != null ? Number(base) : first != null ? Number(first) : through;
  const { net, decided } = await netChange(store, key, from, through);
  // The counted index first: its buckets must hold every change the head says is settled.
  const ranks = rankOf(key);
  if (ranks) await settleRanks(store, key, ranks, through, decided, rankOf);
  const count = settled + net;
  await writeSettlement(store, key, through, count);
  return Number(count);
}

/**
 * Settle a count through `through` (a closed window's end, ms) from its whole ledger,
 * whatever its settlements so far: the same value `settleIncrementally` reaches, for a
 * count whose work list expired (every verifier down for a day) or whose settlements
 * are in doubt. Reads the ledger partition; for recounts, not requests.
 */
export async function settleFully(store: Store, key: string, through: number, rankOf: RankOfItem = noRanks): Promise<number> {
  let count = 0n;
  const counted: string[] = [];
  for (const row of await allRowsOf(store, countItemsTable, { count_key: key })) {
    const ledger = ledgerOf(row);
    const added = additionCounts(ledger) && windowOfMicros(ledger.added!) < through;
    const removed = removalCounts(ledger) && windowOfMicros(ledger.removed!) < through;
    if (added) count += 1n;
    if (removed) count -= 1n;
    if (added && !removed) counted.push(row.item as string);
  }
  const ranks = rankOf(key);
  if (ranks) await rebuildRanks(store, key, ranks, through, counted, rankOf);
  await writeSettlement(store, key, through, count);
  return Number(count);
}

/**
 * Make a count right now, whatever its settlements and live cells say (reconcileMeeting,
 * recounts): settle it in full through the closed windows, then judge the changes of
 * the windows still open against the ledger as it stands, and correct this node's live
 * cell by what the open windows' cells lack. Safe while changes go on: the settlement
 * is exact and final; the correction is undone by nothing and needed by nothing once
 * its window is settled (cells before a settlement are never read). Changes still in
 * flight are settled by the verifier afterwards. Returns the count.
 */
export async function reconcileCount(store: Store, writer: CountWriter, key: string, through: number, rankOf: RankOfItem = noRanks): Promise<number> {
  const settled = await settleFully(store, key, through, rankOf);
  const [{ net: decided }, cells] = await Promise.all([
    netChange(store, key, through, null),
    allRowsOf(store, connectionCountsTable, { count_key: key }, { lower: { values: [BigInt(through)], inclusive: true } }),
  ]);
  let live = 0n;
  const windowRows = cells;
  for (const r of windowRows) live += liveSum(r);
  const stored = (window: number, column: string) => (windowRows.find((r) => r.slot === BigInt(window))?.[column] as bigint | null | undefined) ?? 0n;
  // One partition: the batch is cheap, and the cell never lands without its span.
  if (decided !== live) await store.batch(writer.correction(key, decided - live, stored));
  const count = BigInt(settled) + decided;
  return count > 0n ? Number(count) : 0;
}

/**
 * Count items that exist but were never counted (written before counts existed): an
 * addition, made now, for each of `items` whose ledger has none. Racing a real
 * addition of the same item is harmless: the ledger keeps one of the two. Returns how
 * many were added.
 */
export async function backfillItems(store: Store, writer: CountWriter, key: string, items: readonly string[]): Promise<number> {
  if (items.length === 0) return 0;
  const rows = await store.getMany(countItemsTable, items.map((item) => ({ count_key: key, item })));
  const missing = items.filter((_, i) => rows[i]?.added_at == null);
  for (let start = 0; start < missing.length; start += 50) {
    await store.batch(missing.slice(start, start + 50).flatMap((item) => writer.mutations({ key, item, sign: 1 })));
  }
  return missing.length;
}

/** No count has a counted index. */
export const noRanks: RankOfItem = () => null;

/**
 * What a trailing pass writes for a count with a change that landed late, perhaps in
 * a window its settlement has passed (see "Late changes" in the file comment): the
 * bound `redo_through` the count must be settled in full past, and a mark in the
 * window before it, so a verifier does so.
 */
export function redoMutations(key: string, nowMs: number, cluster: ClusterSettings): Mutation[] {
  // Above every bound a verifier that read the head before this lands can settle to.
  const redo = windowOf(nowMs + cluster.clockSkewMs) + JOB_WINDOW_MS;
  return [
    { kind: 'upsert', table: connectionCountsTable, row: { ...headKey(key), redo_through: BigInt(redo) }, options: { timestamp: BigInt(redo) * 1000n } },
    markMutation(COUNT_JOB, key, redo - JOB_WINDOW_MS, 'redo'),
  ];
}

/**
 * The verifier's work: settle every count marked in the closed windows (run by a
 * `WindowedJob`); a count found marked late is settled in full by the next pass past
 * now (`redoMutations`).
 */
export function countVerifierJob(store: Store, rankOf: RankOfItem = noRanks): WindowedJobSpec {
  return {
    job: COUNT_JOB,
    async handle(keys, through) {
      for (const key of keys) await settleIncrementally(store, key, through, rankOf);
    },
    async handleLate(keys, { nowMs, cluster }) {
      for (const key of keys) await store.batch(redoMutations(key, nowMs, cluster));
    },
  };
}
