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
 */
import type { Logger } from 'pino';
import { DEFAULT_CLUSTER_SETTINGS, type ClusterSettings } from '../config.js';
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

/** The tables of the background jobs. */
export const windowedJobTables = [windowMarksTable, jobProgressTable];

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

/** The mark that puts `subject` on `job`'s list for the window holding `ms`: for the write's logged batch. */
export function markMutation(job: string, subject: string, ms: number): Mutation {
  const window = windowOf(ms);
  return {
    kind: 'upsert',
    table: windowMarksTable,
    row: { job, hour: BigInt(hourOf(window)), shard: shardOf(subject), window_start: BigInt(window), subject },
    options: { ttl: MARK_TTL_SECONDS },
  };
}

/** The end of the last closed window by `clock` (see the file comment). */
export function closedThrough(clock: Clock, cluster: ClusterSettings): number {
  const nowMs = Number(clock.nowMicros() / 1000n);
  return windowOf(nowMs - cluster.clockSkewMs - cluster.writeTimeoutMs);
}

/** The subjects marked for `job` in the windows from `from` to `through` (ms, exclusive). */
async function markedBetween(store: Store, job: string, from: number, through: number): Promise<Set<string>> {
  const subjects = new Set<string>();
  for (let hour = hourOf(from); hour < through; hour += HOUR_MS) {
    const shards = await Promise.all(
      Array.from({ length: MARK_SHARDS }, (_, shard) =>
        allRowsOf(store, windowMarksTable, { job, hour: BigInt(hour), shard }, { lower: { values: [BigInt(from)], inclusive: true } }),
      ),
    );
    for (const rows of shards) for (const r of rows) if (Number(r.window_start as bigint) < through) subjects.add(r.subject as string);
  }
  return subjects;
}

/** What a job does with the subjects of closed windows. */
export interface WindowedJobSpec {
  /** The job's name in marks and progress. */
  readonly job: string;
  /** Handle every subject marked in windows before `through` (ms): idempotent, any server. */
  handle(subjects: ReadonlySet<string>, through: number): Promise<void>;
}

/** A windowed job of one server process: `runOnce` on a timer, and the progress it confirmed. */
export class WindowedJob {
  private timer: PeriodicTask | null = null;
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
    const row = await store.get(jobProgressTable, { job: spec.job });
    const last = row ? Number(row.through as bigint) : null;
    const from = windowOf(Math.max(last ?? -Infinity, through - MARK_TTL_SECONDS * 1000));
    if (from >= through) {
      this.confirm(last ?? through);
      return 0;
    }
    const subjects = await markedBetween(store, spec.job, from, through);
    await spec.handle(subjects, through);
    await store.upsert(jobProgressTable, { job: spec.job, through: BigInt(through) }, { timestamp: BigInt(through) * 1000n });
    this.confirm(through);
    return subjects.size;
  }

  private confirm(through: number): void {
    if (this.confirmed === null || through > this.confirmed) this.confirmed = through;
  }

  /** Run `runOnce` every `intervalMs` until stopped. */
  start(intervalMs: number = JOB_WINDOW_MS): void {
    if (this.timer) return;
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

  stop(): void {
    this.timer?.stop();
    this.timer = null;
  }
}
