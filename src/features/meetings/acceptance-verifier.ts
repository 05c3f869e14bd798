/**
 * Exact acceptance counts on many servers, without Paxos on the hot path (seed 001).
 *
 * First write wins: each acceptance is written `USING TIMESTAMP (2^63-1 - t)`, t being
 * the accepting server's clock, and the request that reads its own write back as the
 * winner increments the counter. On one server that is exact. On several it is not:
 * a server whose clock is behind writes a higher timestamp and wins after another has
 * counted; a write that picked its timestamp first can land after a later one has read
 * itself as the winner; a crash can lose an increment. The set of acceptances settles
 * all the same; only the counter drifts. So:
 *
 * - The counter is split into windows of ACCEPTANCE_WINDOW_MS by t: a request
 *   increments the window of its own timestamp.
 * - A window is closed once the verifier's clock has passed its end by the clock-skew
 *   bound S plus the write timeout T. Every acceptance with t before the end was then
 *   chosen (by a clock at most S ahead of ours) and has landed (within T), and no later
 *   write can win against it (later writes have a larger t). So the number of
 *   acceptors whose winning write has t before the end is final.
 * - The verifier counts those acceptors (`accepted_at` is the winner's t) and writes
 *   the pair (settled_through, settled_count) `USING TIMESTAMP settled_through`. The
 *   count replaces every window before settled_through; windows from there on are
 *   still read from the counter.
 *
 * Safe when several servers run it at once, with no lease: a settlement is a pure
 * function of `through` once `through` is closed, so two verifiers settling the same
 * `through` write the same pair, and a later `through` carries a higher timestamp and
 * wins whatever the order of arrival. The same holds for the progress row. Counter
 * increments are not idempotent, so the verifier never touches the counter.
 *
 * Work list: every acceptance writes a mark (window, meeting) in its logged batch, so
 * even an acceptance whose request died before counting is visited. Marks expire after
 * a day and are never deleted.
 *
 * Reading a count costs two round trips for any number of meetings (a page of meetings
 * pays a fixed price, not one slice per meeting): the same batch records, beside the
 * settlement, the span of windows the meeting's acceptances may have counted in
 * (`first_window`, `last_window`). Each is a cell of its own whose timestamp orders it
 * (the earliest window writes the highest timestamp, the latest window the highest
 * other one), so any number of servers widen the span and none narrows it. The counter
 * windows to add are then known by key: from the settlement (or the first window) to the
 * last window, one `getMany` for every meeting of the page. A span wider than
 * MAX_WINDOWS_BY_KEY (only when every verifier has been down for minutes) is read by a
 * slice instead.
 */
import type { Logger } from 'pino';
import { DEFAULT_CLUSTER_SETTINGS, type ClusterSettings } from '../../config.js';
import { startPeriodicTask, type PeriodicTask } from '../../periodic-task.js';
import type { Clock } from '../../store/clock.js';
import { MAX_TIMESTAMP, type Mutation, type Store } from '../../store/port.js';
import type { Row } from '../../store/table.js';
import { allRowsOf, partitionChunks } from '../../paging/partition-chunks.js';
import {
  acceptanceVerifierProgressTable,
  acceptanceWindowMarksTable,
  meetingAcceptanceSettledTable,
  meetingAcceptanceWindowsTable,
  meetingUsersTable,
} from './meetings-tables.js';

/** Width of a counter window, in ms. */
export const ACCEPTANCE_WINDOW_MS = 5_000;
/** Partitions of one window's marks. */
const MARK_SHARDS = 4;
/** Marks outlive any verifier outage shorter than a day. */
const MARK_TTL_SECONDS = 86_400;
/** A first verifier (no progress yet) starts this far back. */
const FIRST_RUN_HORIZON_MS = 60_000;
const PROGRESS_KEY = { name: 'acceptances' };
/** Unsettled windows per meeting read by key; a wider span is read by a slice. */
const MAX_WINDOWS_BY_KEY = 24;

/** The start of the window holding `ms`. */
export function windowOf(ms: number): number {
  return ms - (((ms % ACCEPTANCE_WINDOW_MS) + ACCEPTANCE_WINDOW_MS) % ACCEPTANCE_WINDOW_MS);
}

/**
 * What an acceptance made at `ms` writes in its logged batch besides itself: the mark
 * that puts the meeting on the verifier's list for that window, and the window in the
 * meeting's span of counted windows (see the file comment).
 */
export function marksOf(meetingId: string, ms: number): Mutation[] {
  const window = BigInt(windowOf(ms));
  const micros = window * 1000n;
  return [
    {
      kind: 'upsert',
      table: acceptanceWindowMarksTable,
      row: { window_start: window, shard: parseInt(meetingId.slice(0, 2), 16) % MARK_SHARDS, meeting_id: meetingId },
      options: { ttl: MARK_TTL_SECONDS },
    },
    // The earliest window has the highest timestamp, so it stays.
    { kind: 'upsert', table: meetingAcceptanceSettledTable, row: { meeting_id: meetingId, first_window: window }, options: { timestamp: MAX_TIMESTAMP - micros } },
    // The latest window has the highest timestamp, so it stays.
    { kind: 'upsert', table: meetingAcceptanceSettledTable, row: { meeting_id: meetingId, last_window: window }, options: { timestamp: micros } },
  ];
}

/** The counter row a winning acceptance made at `ms` increments. */
export function counterKeyOf(meetingId: string, ms: number): Row {
  return { meeting_id: meetingId, window_start: BigInt(windowOf(ms)) };
}

/**
 * Acceptance counts by meeting id, in order: the settled count plus the counter windows
 * from the settlement on. Two round trips for any number of meetings (see the file
 * comment), plus one slice per meeting whose span is too wide to read by key.
 */
export async function readAcceptanceCounts(store: Store, ids: readonly string[]): Promise<number[]> {
  const heads = await store.getMany(meetingAcceptanceSettledTable, ids.map((meeting_id) => ({ meeting_id })));
  const spans = heads.map((head) => {
    const last = head?.last_window as bigint | null | undefined;
    if (last == null) return { from: 0n, to: -1n }; // never counted in a window
    const through = head!.settled_through as bigint | null | undefined;
    const first = head!.first_window as bigint;
    return { from: through == null || through < first ? first : through, to: last };
  });
  const step = BigInt(ACCEPTANCE_WINDOW_MS);
  const wide = (span: { from: bigint; to: bigint }) => (span.to - span.from) / step + 1n > BigInt(MAX_WINDOWS_BY_KEY);
  const keys: Row[] = [];
  const owners: number[] = [];
  spans.forEach((span, i) => {
    if (wide(span)) return;
    for (let w = span.from; w <= span.to; w += step) {
      keys.push({ meeting_id: ids[i]!, window_start: w });
      owners.push(i);
    }
  });
  const counts = heads.map((head) => (head?.settled_count as bigint | null | undefined) ?? 0n);
  const [byKey, sliced] = await Promise.all([
    keys.length > 0 ? store.getMany(meetingAcceptanceWindowsTable, keys) : Promise.resolve([]),
    Promise.all(
      spans.map((span, i) =>
        wide(span)
          ? allRowsOf(store, meetingAcceptanceWindowsTable, { meeting_id: ids[i]! }, { lower: { values: [span.from], inclusive: true } })
          : Promise.resolve([]),
      ),
    ),
  ]);
  byKey.forEach((row, k) => {
    if (row) counts[owners[k]!]! += row.acceptance_count as bigint;
  });
  sliced.forEach((rows, i) => {
    for (const row of rows) counts[i]! += row.acceptance_count as bigint;
  });
  return counts.map(Number);
}

/**
 * Count the acceptors whose first acceptance was made before `throughMs` and store the
 * settlement (see the file comment for why this is idempotent). Returns the count.
 */
export async function settleMeeting(store: Store, meetingId: string, throughMs: number): Promise<number> {
  let count = 0;
  for await (const rows of partitionChunks(store, meetingUsersTable, { meeting_id: meetingId })) {
    for (const r of rows) if ((r.accepted_at as Date).getTime() < throughMs) count++;
  }
  await store.upsert(
    meetingAcceptanceSettledTable,
    { meeting_id: meetingId, settled_through: BigInt(throughMs), settled_count: BigInt(count) },
    { timestamp: BigInt(throughMs) * 1000n },
  );
  return count;
}

/** The background job that settles closed windows (see the file comment). */
export class AcceptanceVerifier {
  private timer: PeriodicTask | null = null;
  private readonly cluster: ClusterSettings;

  constructor(
    private readonly store: Store,
    private readonly options: { clock: Clock; cluster?: ClusterSettings; logger?: Logger },
  ) {
    this.cluster = options.cluster ?? DEFAULT_CLUSTER_SETTINGS;
  }

  /** The end of the last closed window, by this server's clock. */
  closedThrough(): number {
    const nowMs = Number(this.options.clock.nowMicros() / 1000n);
    return windowOf(nowMs - this.cluster.clockSkewMs - this.cluster.writeTimeoutMs);
  }

  /** Settle every meeting with acceptances in the windows closed since the last pass; returns how many. */
  async runOnce(): Promise<number> {
    const through = this.closedThrough();
    const progress = await this.store.get(acceptanceVerifierProgressTable, PROGRESS_KEY);
    const last = progress ? Number(progress.verified_through as bigint) : through - FIRST_RUN_HORIZON_MS;
    const from = windowOf(Math.max(last, through - MARK_TTL_SECONDS * 1000));
    const meetings = new Set<string>();
    for (let w = from; w < through; w += ACCEPTANCE_WINDOW_MS) {
      const shards = await Promise.all(
        Array.from({ length: MARK_SHARDS }, (_, shard) => allRowsOf(this.store, acceptanceWindowMarksTable, { window_start: BigInt(w), shard })),
      );
      for (const rows of shards) for (const r of rows) meetings.add(r.meeting_id as string);
    }
    for (const meetingId of meetings) await settleMeeting(this.store, meetingId, through);
    if (through > last) {
      await this.store.upsert(
        acceptanceVerifierProgressTable,
        { ...PROGRESS_KEY, verified_through: BigInt(through) },
        { timestamp: BigInt(through) * 1000n },
      );
    }
    return meetings.size;
  }

  /** Run `runOnce` every `intervalMs` until stopped. */
  start(intervalMs: number = ACCEPTANCE_WINDOW_MS): void {
    if (this.timer) return;
    this.timer = startPeriodicTask({
      intervalMs,
      pass: async () => void (await this.runOnce()),
      onError: (err) => this.options.logger?.error({ err }, 'acceptance verifier pass failed; will retry'),
    });
  }

  stop(): void {
    this.timer?.stop();
    this.timer = null;
  }
}
