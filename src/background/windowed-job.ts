/**
 * Background jobs that finish, on any number of servers at once, what writes left to
 * settle: the connection counts (counts/connection-counts.ts) and the name index's sweep
 * (features/directory/name-index.ts). Both follow the pattern the acceptance counts had
 * (seed 001 with closed windows):
 *
 * - Work list: a write that leaves something to settle adds a mark (job, window,
 *   subject) in its own logged batch, so even a write whose process dies right after is
 *   visited. Marks are partitioned by (job, hour, shard), clustered by window, written
 *   with a TTL and never deleted: a pass reads a few partitions from its window on.
 * - Closure: a window is closed once this server's clock has passed its end by the
 *   clock-skew bound S plus the write timeout T. Every write stamped (by any server's
 *   clock) before the window's end was then chosen by a clock at most S ahead of ours
 *   and has landed, within T: what a job reads of a closed window is final.
 * - Progress: how far the jobs have got, one row per job, written `USING TIMESTAMP
 *   through` so it only moves forward whoever writes it. A pass handles the marks of
 *   every window from the progress it read to the closed bound, then writes the new
 *   progress, only after every subject was handled: so every subject marked before a
 *   job's progress has been handled through at least its window's end. Readers rely on
 *   that (`progress()`), each server through the value its own last pass confirmed.
 * - No lease: what a pass does for a subject must be the same whoever does it and
 *   however often (each job's argument says why).
 *
 * A first pass (no progress yet) starts a whole mark TTL back, so marks written before
 * any server ran (by `npm run seed`, say) are handled. Marks outlive any outage shorter
 * than their TTL; after a longer one, `npm run seed -- --recount` settles everything.
 *
 * Late writes (#35). Cassandra does not promise the closure: a write that timed out
 * can still land, with its original timestamp, by batchlog replay or a hint up to
 * `max_hint_window` later. Its mark then lands in a window the progress has passed,
 * and no pass above reads it. Trailing passes find it (`runLate`, one per
 * `LATE_WRITE_PASSES` horizon, on its own timer, every server, no lease):
 *
 * - Seen counts. A pass that handled the marks of a window writes, per (window,
 *   shard), how many marks it read there (`window_seen`), `USING TIMESTAMP` that number
 *   so the largest stays. Marks are never deleted within the horizons (their TTL is a
 *   day), so the marks of one (window, shard) only grow: two reads that found the same
 *   number found the same marks, and a seen count n says "the first n marks to land
 *   there were all read by a pass that then handled them".
 * - A trailing pass re-reads the marks and seen counts of the windows from its horizon
 *   back to the progress: a (window, shard) holding more marks than its seen count has
 *   marks that landed after it was handled. It hands that group's subjects to the
 *   job's `handleLate` (all of the group's: the count alone does not say which mark is
 *   new; groups are a few seconds of one shard), then raises the seen count. A group
 *   whose count matches costs nothing beyond the read: so a pass re-settles nothing of
 *   the last hour but what landed late, and its reads are the marks of its horizon
 *   (a few slices an hour, paged) and one slice of seen counts an hour.
 * - A pass that dies before raising a seen count leaves the group to the next one;
 *   handling twice is harmless (no lease: `handleLate` is idempotent whoever runs it).
 *   A mark landing while a pass reads its window is either counted (and handled by
 *   that pass, which read it) or left for the next trailing pass.
 * - Past the longest horizon nothing finds a late write: `npm run seed -- --recount`.
 */
import type { Logger } from 'pino';
import { DEFAULT_CLUSTER_SETTINGS, latePassesOf, type ClusterSettings, type LatePass } from '../config.js';
import { ReadCountingStore } from './read-counting-store.js';
import { startPeriodicTask, type PeriodicTask } from './periodic-task.js';
import type { Clock } from '../store/clock.js';
import type { Mutation, Store } from '../store/port.js';
import { defineTable } from '../store/table.js';
import { allRowsOf } from '../paging/partition-chunks.js';

/** Width of a window, in ms: the unit of closure and of the work list. */
export const JOB_WINDOW_MS = 5_000;
/** Marks outlive any outage of every server shorter than a day. */
export const MARK_TTL_SECONDS = 86_400;
/** Partitions of one hour of one job's marks. */
const MARK_SHARDS = 4;
const HOUR_MS = 3_600_000;

/** The work lists: what each job must visit, by window (see the file comment). */
export const windowMarksTable = defineTable({
  name: 'window_marks',
  columns: { job: 'text', hour: 'bigint', shard: 'int', window_start: 'bigint', subject: 'text' },
  partitionKey: ['job', 'hour', 'shard'],
  clustering: ['window_start', 'subject'],
});

/** How far each job has got: every window before `through` (ms) is handled. */
export const jobProgressTable = defineTable({
  name: 'job_progress',
  columns: { job: 'text', through: 'bigint' },
  partitionKey: ['job'],
});

/**
 * How many marks a pass read and handled in each (window, shard) of a job: `seen`,
 * written `USING TIMESTAMP seen` so the largest stays (see the file comment).
 */
export const windowSeenTable = defineTable({
  name: 'window_seen',
  columns: { job: 'text', hour: 'bigint', window_start: 'bigint', shard: 'int', seen: 'bigint' },
  partitionKey: ['job', 'hour'],
  clustering: ['window_start', 'shard'],
});

/** The tables of the background jobs. */
export const windowedJobTables = [windowMarksTable, jobProgressTable, windowSeenTable];

/** The start of the window holding `ms`. */
export function windowOf(ms: number): number {
  return ms - (((ms % JOB_WINDOW_MS) + JOB_WINDOW_MS) % JOB_WINDOW_MS);
}

/** The start of the hour holding `ms`. */
function hourOf(ms: number): number {
  return ms - (((ms % HOUR_MS) + HOUR_MS) % HOUR_MS);
}

/** A stable shard of a subject (FNV-1a of its UTF-16 units). */
function shardOf(subject: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < subject.length; i++) hash = Math.imul(hash ^ subject.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % MARK_SHARDS;
}

/** Between a mark's subject and its tag. */
const TAG = '\u001f';

/**
 * The mark that puts `subject` on `job`'s list for the window holding `ms`: for the
 * write's logged batch. `tag` names the write (a count's item and sign, a version), so
 * two writes of one subject in one window leave two marks: a trailing pass tells a
 * late one from the other by their number (see the file comment). Jobs see the subject.
 */
export function markMutation(job: string, subject: string, ms: number, tag?: string): Mutation {
  const window = windowOf(ms);
  return {
    kind: 'upsert',
    table: windowMarksTable,
    row: { ...markPartitionOf(job, subject, ms), window_start: BigInt(window), subject: tag === undefined ? subject : `${subject}${TAG}${tag}` },
    options: { ttl: MARK_TTL_SECONDS },
  };
}

/**
 * The partition key of the mark that `markMutation` writes for `subject` at `ms`: a
 * table keyed alike (text, bigint, int) whose row a batch writes beside the mark adds
 * no partition to the batch (Cassandra groups a batch's mutations by key value,
 * whatever the table: the live change log's pointers, change-log-tables.ts).
 */
export function markPartitionOf(job: string, subject: string, ms: number): { job: string; hour: bigint; shard: number } {
  return { job, hour: BigInt(hourOf(windowOf(ms))), shard: shardOf(subject) };
}

/** How many partitions share one hour of a job's marks (`markPartitionOf`'s shards). */
export const MARK_PARTITIONS_PER_HOUR = MARK_SHARDS;
/** The width of a mark partition (ms): an hour. */
export const MARK_PARTITION_MS = HOUR_MS;

/** A mark's subject and its tag (null: untagged), from the `subject` column `markMutation` wrote. */
export function splitMark(mark: string): { subject: string; tag: string | null } {
  const at = mark.indexOf(TAG);
  return at < 0 ? { subject: mark, tag: null } : { subject: mark.slice(0, at), tag: mark.slice(at + 1) };
}

/**
 * Whether `mutation` is a mark `markMutation` made of `subject` on `job`'s list: what
 * lets a writer of the same batch rely on the mark (the live change log's pointers).
 */
export function isMarkOf(mutation: Mutation, job: string, subject: string): boolean {
  return mutation.kind === 'upsert' && mutation.table === windowMarksTable && mutation.row.job === job && splitMark(mutation.row.subject as string).subject === subject;
}

/** The subjects of marks, tags dropped. */
function subjectsOf(groups: readonly MarkGroup[]): Set<string> {
  const out = new Set<string>();
  for (const g of groups) for (const mark of g.subjects) out.add(splitMark(mark).subject);
  return out;
}

/** The end of the last closed window by `clock` (see the file comment). */
export function closedThrough(clock: Clock, cluster: ClusterSettings): number {
  const nowMs = Number(clock.nowMicros() / 1000n);
  return windowOf(nowMs - cluster.clockSkewMs - cluster.writeTimeoutMs);
}

/** The marks of one (window, shard), in clustering order. */
interface MarkGroup {
  readonly window: number;
  readonly shard: number;
  /** The marks' subjects, tags included. */
  readonly subjects: string[];
}

/** The marks of `job` in the windows from `from` to `through` (ms, exclusive), by (window, shard). */
async function marksBetween(store: Store, job: string, from: number, through: number): Promise<MarkGroup[]> {
  const groups = new Map<string, MarkGroup>();
  for (let hour = hourOf(from); hour < through; hour += HOUR_MS) {
    const shards = await Promise.all(
      Array.from({ length: MARK_SHARDS }, (_, shard) =>
        allRowsOf(store, windowMarksTable, { job, hour: BigInt(hour), shard }, { lower: { values: [BigInt(from)], inclusive: true } }),
      ),
    );
    shards.forEach((rows, shard) => {
      for (const r of rows) {
        const window = Number(r.window_start as bigint);
        if (window >= through) continue;
        const id = `${window}:${shard}`;
        let group = groups.get(id);
        if (!group) groups.set(id, (group = { window, shard, subjects: [] }));
        group.subjects.push(r.subject as string);
      }
    });
  }
  return [...groups.values()];
}

/** The seen counts of `job` in the windows from `from` to `through` (ms, exclusive), by `window:shard`. */
async function seenBetween(store: Store, job: string, from: number, through: number): Promise<Map<string, number>> {
  const seen = new Map<string, number>();
  for (let hour = hourOf(from); hour < through; hour += HOUR_MS) {
    const rows = await allRowsOf(store, windowSeenTable, { job, hour: BigInt(hour) }, {
      lower: { values: [BigInt(from)], inclusive: true },
      upper: { values: [BigInt(through)], inclusive: false },
    });
    for (const r of rows) seen.set(`${r.window_start as bigint}:${r.shard as number}`, Number(r.seen as bigint));
  }
  return seen;
}

/** Record that every mark of `groups` was read and handled (see the file comment); one batch per hour. */
async function writeSeen(store: Store, job: string, groups: readonly MarkGroup[]): Promise<void> {
  const byHour = new Map<number, Mutation[]>();
  for (const g of groups) {
    const hour = hourOf(g.window);
    const n = BigInt(g.subjects.length);
    const mutation: Mutation = {
      kind: 'upsert',
      table: windowSeenTable,
      row: { job, hour: BigInt(hour), window_start: BigInt(g.window), shard: g.shard, seen: n },
      options: { timestamp: n, ttl: MARK_TTL_SECONDS },
    };
    byHour.set(hour, [...(byHour.get(hour) ?? []), mutation]);
  }
  for (const mutations of byHour.values()) for (let at = 0; at < mutations.length; at += 200) await store.batch(mutations.slice(at, at + 200));
}

/** What a trailing pass hands to a job with the subjects it found marked late. */
export interface LateContext {
  /** The store to read through: it counts the pass's reads. */
  readonly store: Store;
  /** The job's progress (ms) as the pass read it: the late marks lie before it. */
  readonly through: number;
  /** The pass's clock (ms). */
  readonly nowMs: number;
  /** Where its horizon starts (ms): the late marks lie at or after it. */
  readonly from: number;
  readonly cluster: ClusterSettings;
}

/** What one trailing pass did: the store reads it made and the subjects it found marked late. */
export interface LatePassReport {
  readonly horizonMs: number;
  readonly reads: number;
  readonly late: number;
}

/** What a job does with the subjects of closed windows. */
export interface WindowedJobSpec {
  /** The job's name in marks and progress. */
  readonly job: string;
  /** Handle every subject marked in windows before `through` (ms): idempotent, any server. */
  handle(subjects: ReadonlySet<string>, through: number): Promise<void>;
  /**
   * Handle subjects whose marks landed after their window was handled (a trailing
   * pass): idempotent, any server. Absent: `handle` again, through the progress.
   */
  handleLate?(subjects: ReadonlySet<string>, context: LateContext): Promise<void>;
}

/** A windowed job of one server process: `runOnce` on a timer, and the progress it confirmed. */
export class WindowedJob {
  private timer: PeriodicTask | null = null;
  private lateTimers: PeriodicTask[] = [];
  private confirmed: number | null = null;
  private readonly cluster: ClusterSettings;

  constructor(
    private readonly store: Store,
    private readonly spec: WindowedJobSpec,
    private readonly options: {
      clock: Clock;
      cluster?: ClusterSettings;
      logger?: Pick<Logger, 'error'>;
      /** Told how each timer pass ended (metrics). */
      onPass?: (ok: boolean) => void;
      /** Told what each trailing pass cost and found (metrics). */
      onLatePass?: (report: LatePassReport) => void;
      /** Whether timer passes may run now (the process's presence holds its node). */
      runsWhen?: () => boolean;
    },
  ) {
    this.cluster = options.cluster ?? DEFAULT_CLUSTER_SETTINGS;
  }

  /**
   * Every subject marked in a window before this (ms) has been handled through at least
   * that window's end, as this server's last pass confirmed; null before its first pass.
   */
  progress(): number | null {
    return this.confirmed;
  }

  /** Handle the windows closed since the last pass (of any server); returns how many subjects. */
  async runOnce(): Promise<number> {
    const { store, spec } = this;
    const through = closedThrough(this.options.clock, this.cluster);
    // No window closed since this process's last pass: nothing to read (a job run more
    // often than a window, as the list applier's timer runs the `lists` job).
    if (this.confirmed !== null && this.confirmed >= through) return 0;
    const row = await store.get(jobProgressTable, { job: spec.job });
    const last = row ? Number(row.through as bigint) : null;
    const from = windowOf(Math.max(last ?? -Infinity, through - MARK_TTL_SECONDS * 1000));
    if (from >= through) {
      this.confirm(last ?? through);
      return 0;
    }
    const groups = await marksBetween(store, spec.job, from, through);
    const subjects = subjectsOf(groups);
    await spec.handle(subjects, through);
    // Seen counts before the progress: a trailing pass trusts none beyond it.
    await writeSeen(store, spec.job, groups);
    await store.upsert(jobProgressTable, { job: spec.job, through: BigInt(through) }, { timestamp: BigInt(through) * 1000n });
    this.confirm(through);
    return subjects.size;
  }

  /**
   * A trailing pass over the last `horizonMs` (see the file comment): hand the subjects
   * of every (window, shard) holding marks that landed after it was handled to the
   * job's `handleLate`, then record them seen. Returns what it read and found.
   */
  async runLate(horizonMs: number): Promise<LatePassReport> {
    const { spec } = this;
    const store = new ReadCountingStore(this.store);
    const row = await store.get(jobProgressTable, { job: spec.job });
    const nowMs = Number(this.options.clock.nowMicros() / 1000n);
    const from = windowOf(nowMs - horizonMs);
    const through = row ? Number(row.through as bigint) : null;
    if (through === null || from >= through) return { horizonMs, reads: store.reads, late: 0 };
    const [groups, seen] = await Promise.all([marksBetween(store, spec.job, from, through), seenBetween(store, spec.job, from, through)]);
    const grown = groups.filter((g) => g.subjects.length > (seen.get(`${g.window}:${g.shard}`) ?? 0));
    const subjects = subjectsOf(grown);
    if (subjects.size > 0) {
      if (spec.handleLate) await spec.handleLate(subjects, { store, through, nowMs, from, cluster: this.cluster });
      else await spec.handle(subjects, through);
      await writeSeen(store, spec.job, grown);
    }
    return { horizonMs, reads: store.reads, late: subjects.size };
  }

  /** One trailing pass as its timer runs it: `runLate` over `pass`'s horizon, then its report to `onLatePass`. */
  async trailingPass(pass: LatePass): Promise<LatePassReport> {
    // The pass first, then its report: an optional call (`onLatePass?.(…)`) skips its
    // arguments when nothing listens, and a server without metrics then never ran a
    // trailing pass (#35: the proxy test's late list item stayed uncounted).
    const report = await this.runLate(pass.horizonMs);
    this.options.onLatePass?.(report);
    return report;
  }

  private confirm(through: number): void {
    if (this.confirmed === null || through > this.confirmed) this.confirmed = through;
  }

  /** Run `runOnce` every `intervalMs`, and each trailing pass (`LATE_WRITE_PASSES`) every its interval, until stopped. */
  start(intervalMs: number = JOB_WINDOW_MS): void {
    if (this.timer) return;
    this.startTrailing();
    this.timer = startPeriodicTask({
      intervalMs,
      runsWhen: this.options.runsWhen,
      pass: async () => {
        await this.runOnce();
        this.options.onPass?.(true);
      },
      onError: (err) => {
        this.options.onPass?.(false);
        this.options.logger?.error({ err, job: this.spec.job }, 'background pass failed; will retry');
      },
    });
  }

  /** Run only the trailing passes on their timers (a job whose own passes another task runs). */
  startTrailing(): void {
    if (this.lateTimers.length > 0) return;
    this.lateTimers = latePassesOf(this.cluster).map((pass: LatePass) =>
      startPeriodicTask({
        intervalMs: pass.intervalMs,
        runsWhen: this.options.runsWhen,
        pass: async () => {
          await this.trailingPass(pass);
        },
        onError: (err) => this.options.logger?.error({ err, job: this.spec.job, horizonMs: pass.horizonMs }, 'trailing pass failed; will retry'),
      }),
    );
  }

  stop(): void {
    this.timer?.stop();
    this.timer = null;
    for (const t of this.lateTimers) t.stop();
    this.lateTimers = [];
  }
}
