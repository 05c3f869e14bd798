/**
 * The durable saga log: one row per open saga, written before each step (which also
 * records that the previous one finished) and deleted when the saga ends. What is left
 * after a crash is exactly the set of sagas recovery must roll forward or back. Each
 * row names its owner (process, clock node, instance), so recovery can tell a saga
 * whose process is gone from one still running on another server.
 *
 * A queue built the Cassandra way (DESIGN.md, point 12): every closed saga leaves a
 * tombstone, so no read may start at the head of a partition that only grows. The log
 * is partitioned by (shard, time bucket of the saga id): a saga id is a timeuuid, so
 * its row's key follows from the id alone (a lookup by id needs nothing else), and
 * recovery reads only the buckets from a per-shard low-water mark on.
 *
 * The low-water mark is the oldest bucket that may hold an open saga. Recovery moves it
 * past a bucket only when it read the bucket empty and the bucket is closed: no server
 * can still write a first row into it. A saga's first row is written when it starts,
 * and `SagaRunner.run` refuses a saga id older than SAGA_START_WINDOW_MS by its own
 * clock, so the last first row of a bucket is chosen before its end plus that window
 * by some server's clock (at most CLOCK_SKEW_MS off the recovering server's) and lands
 * within the write timeout. Later writes of a saga (its next steps, its close) only
 * happen while its row exists, so the bucket is not empty then. A recovery pass that
 * read a saga before another server closed it re-reads the row just before it acts;
 * SETTLE_MARGIN_MS covers a pass slow between that read and its write. A saga left
 * open by a server that crashed long ago keeps the mark at its bucket, so it is found
 * however old it is; the mark only moves forward (written `USING TIMESTAMP` its own
 * bucket, the later bucket wins whatever the order of arrival).
 *
 * The previous layout (`saga_log`, by shard and saga id alone) is no longer written.
 * Its rows are not migrated: recovery still reads its 8 shards (small slices) and
 * rolls what it finds forward or back in place, and lookups by id check it too. Once
 * every server runs this version nothing writes it, and its tombstones are purged
 * after their grace period.
 *
 * A fresh cluster has no marks: its first recovery pass starts FIRST_PASS_LOOKBACK_MS
 * back. Servers run a pass before they serve, so only sagas written by a process that
 * never ran one (a seeding script) and left open over an hour before the first server
 * started would be missed.
 */
import { DEFAULT_CLUSTER_SETTINGS, type ClusterSettings } from '../config.js';
import { allRowsOf } from '../paging/partition-chunks.js';
import type { ProcessIdentity } from '../background/presence.js';
import type { Store } from '../store/port.js';
import { defineTable, type Row } from '../store/table.js';
import { dateOfTimeuuid } from '../store/timeuuid.js';

const SAGA_COLUMNS = {
  shard: 'int',
  saga_id: 'timeuuid',
  kind: 'text',
  payload: 'text',
  step: 'int',
  phase: 'text',
  updated_at: 'timestamp',
  owner_process: 'uuid',
  owner_node: 'int',
  owner_instance: 'text',
} as const;

/** Open sagas by (shard, bucket): the log every saga writes (see the file comment). */
export const sagaLogTable = defineTable({
  name: 'saga_log_by_bucket',
  columns: { ...SAGA_COLUMNS, bucket: 'bigint' },
  partitionKey: ['shard', 'bucket'],
  clustering: ['saga_id'],
});

/** Per shard, the oldest bucket that may hold an open saga. */
export const sagaLogMarksTable = defineTable({
  name: 'saga_log_marks',
  // `first_bucket`: where a fresh cluster's first recovery pass starts (written once,
  // by insert-if-not-exists); `oldest_bucket`: how far recovery has moved since.
  columns: { shard: 'int', first_bucket: 'bigint', oldest_bucket: 'bigint' },
  partitionKey: ['shard'],
});

/** The log's previous layout, by shard alone: read by recovery, no longer written. */
export const legacySagaLogTable = defineTable({
  name: 'saga_log',
  columns: { ...SAGA_COLUMNS },
  partitionKey: ['shard'],
  clustering: ['saga_id'],
});

/** Every table of the saga log. */
export const sagaLogTables = [sagaLogTable, sagaLogMarksTable, legacySagaLogTable];

/** Number of log shards per bucket (so one bucket is never one hot partition). */
export const SAGA_LOG_SHARDS = 8;
/** Width of a time bucket of the log. */
export const SAGA_BUCKET_MS = 5 * 60_000;
/** A saga must start (write its first row) within this time of its id's creation. */
export const SAGA_START_WINDOW_MS = 30_000;
/** Slack for a recovery pass between reading a saga and writing it. */
export const SETTLE_MARGIN_MS = 60_000;
/** Where a cluster's very first recovery pass starts looking. */
export const FIRST_PASS_LOOKBACK_MS = 3_600_000;

/** Where an open saga stands. */
export type SagaPhase = 'forward' | 'compensating';

/** A saga as the log names it: its id and what it runs. */
export interface SagaEntry {
  readonly sagaId: string;
  readonly kind: string;
  readonly payload: unknown;
  /** Recorded in the previous layout (found there by recovery). */
  readonly legacy?: boolean;
}

/** One open saga as the log holds it. */
export interface SagaRecord extends SagaEntry {
  /** The step started last (forward) or being undone (compensating). */
  readonly step: number;
  readonly phase: SagaPhase;
  readonly updatedAt: Date;
  /** The process running it (null for rows written without one). */
  readonly owner: ProcessIdentity | null;
}

/** The shard of a saga id (stable). */
export function shardOf(sagaId: string): number {
  let h = 0;
  for (const ch of sagaId) h = (h * 31 + ch.charCodeAt(0)) | 0;
  return Math.abs(h) % SAGA_LOG_SHARDS;
}

/** The bucket (its start, epoch ms) holding `ms`. */
function bucketAt(ms: number): number {
  return Math.floor(ms / SAGA_BUCKET_MS) * SAGA_BUCKET_MS;
}

/** The key of a saga's row: shard and bucket follow from the id. */
function keyOf(sagaId: string, legacy = false): Row {
  const shard = shardOf(sagaId);
  return legacy ? { shard, saga_id: sagaId } : { shard, bucket: BigInt(bucketAt(dateOfTimeuuid(sagaId).getTime())), saga_id: sagaId };
}

function recordFromRow(r: Row, legacy: boolean): SagaRecord {
  return {
    sagaId: r.saga_id as string,
    kind: r.kind as string,
    payload: JSON.parse(r.payload as string),
    legacy,
    step: r.step as number,
    phase: r.phase as SagaPhase,
    updatedAt: r.updated_at as Date,
    owner:
      r.owner_process && r.owner_node !== null && r.owner_node !== undefined
        ? { processId: r.owner_process as string, node: r.owner_node as number, instance: (r.owner_instance as string | null) ?? '' }
        : null,
  };
}

/**
 * Which of `sagaIds` are still open, in either layout (two batched reads, at once).
 * For readers that hide the effects of unfinished sagas.
 */
export async function openSagaIds(store: Store, sagaIds: readonly string[]): Promise<Set<string>> {
  if (sagaIds.length === 0) return new Set();
  const [current, legacy] = await Promise.all([
    store.getMany(sagaLogTable, sagaIds.map((id) => keyOf(id))),
    store.getMany(legacySagaLogTable, sagaIds.map((id) => keyOf(id, true))),
  ]);
  return new Set(sagaIds.filter((_, i) => current[i] || legacy[i]));
}

/** Reads and writes the saga log through the store port. */
export class SagaLog {
  constructor(
    private readonly store: Store,
    private readonly cluster: ClusterSettings = DEFAULT_CLUSTER_SETTINGS,
  ) {}

  /** Whether a saga id is fresh enough to start now (see the file comment). */
  static canStart(sagaId: string, nowMs: number = Date.now()): boolean {
    return nowMs - dateOfTimeuuid(sagaId).getTime() <= SAGA_START_WINDOW_MS;
  }

  /** Record where a saga stands (an upsert: idempotent). */
  async record(saga: SagaEntry, step: number, phase: SagaPhase, owner: ProcessIdentity | null = null, now = new Date()): Promise<void> {
    await this.store.upsert(saga.legacy ? legacySagaLogTable : sagaLogTable, {
      ...(owner ? { owner_process: owner.processId, owner_node: owner.node, owner_instance: owner.instance } : {}),
      ...keyOf(saga.sagaId, saga.legacy),
      kind: saga.kind,
      payload: JSON.stringify(saga.payload),
      step,
      phase,
      updated_at: now,
    });
  }

  /** The saga ended (done or fully compensated): forget it. */
  async close(saga: Pick<SagaEntry, 'sagaId' | 'legacy'>): Promise<void> {
    await this.store.delete(saga.legacy ? legacySagaLogTable : sagaLogTable, keyOf(saga.sagaId, saga.legacy));
  }

  /** Whether a saga is still open (running, or waiting for recovery), in either layout. */
  async isOpen(sagaId: string): Promise<boolean> {
    return (await openSagaIds(this.store, [sagaId])).has(sagaId);
  }

  /**
   * Every open saga, oldest first within each shard: the buckets from each shard's
   * low-water mark to now, and the previous layout; moves each mark past the closed
   * buckets it read empty. One wave of reads per step (marks, buckets), whatever the
   * number of shards.
   */
  async open(now: Date = new Date()): Promise<SagaRecord[]> {
    const nowMs = now.getTime();
    const marks = await this.marks(nowMs);
    const last = bucketAt(nowMs + this.cluster.clockSkewMs);
    // A bucket is closed once no server can still start a saga in it (file comment).
    const closedBefore = nowMs - this.cluster.clockSkewMs - this.cluster.writeTimeoutMs - SAGA_START_WINDOW_MS - SETTLE_MARGIN_MS;
    const [byShard, legacy] = await Promise.all([
      Promise.all(
        marks.map(async (mark, shard) => {
          const buckets: number[] = [];
          for (let b = mark; b <= last; b += SAGA_BUCKET_MS) buckets.push(b);
          const rows = await Promise.all(buckets.map((b) => allRowsOf(this.store, sagaLogTable, { shard, bucket: BigInt(b) })));
          let oldest = mark;
          for (let i = 0; i < buckets.length && rows[i]!.length === 0 && buckets[i]! + SAGA_BUCKET_MS <= closedBefore; i++) {
            oldest = buckets[i]! + SAGA_BUCKET_MS;
          }
          if (oldest > mark) {
            await this.store.upsert(sagaLogMarksTable, { shard, oldest_bucket: BigInt(oldest) }, { timestamp: BigInt(oldest) * 1000n });
          }
          return rows.flat().map((r) => recordFromRow(r, false));
        }),
      ),
      Promise.all(Array.from({ length: SAGA_LOG_SHARDS }, (_, shard) => allRowsOf(this.store, legacySagaLogTable, { shard }))),
    ]);
    return [...legacy.flat().map((r) => recordFromRow(r, true)), ...byShard.flat()];
  }

  /**
   * Each shard's low-water mark. A shard without one (a fresh cluster) gets one by
   * insert-if-not-exists, FIRST_PASS_LOOKBACK_MS back, so that every server agrees on it.
   */
  private async marks(nowMs: number): Promise<number[]> {
    const shards = Array.from({ length: SAGA_LOG_SHARDS }, (_, shard) => shard);
    const rows = await this.store.getMany(sagaLogMarksTable, shards.map((shard) => ({ shard })));
    return Promise.all(
      rows.map(async (row, shard) => {
        let first = row?.first_bucket as bigint | null | undefined;
        if (first == null) {
          const initial = BigInt(bucketAt(nowMs - FIRST_PASS_LOOKBACK_MS));
          const claim = await this.store.insertIfNotExists(sagaLogMarksTable, { shard, first_bucket: initial });
          first = claim.applied ? initial : ((claim.existing?.first_bucket as bigint | null | undefined) ?? initial);
        }
        const oldest = row?.oldest_bucket as bigint | null | undefined;
        return Number(oldest != null && oldest > first ? oldest : first);
      }),
    );
  }
}
