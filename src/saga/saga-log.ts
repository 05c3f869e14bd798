/**
 * The durable saga log: one row per open saga, written before each step (which also
 * records that the previous one finished) and deleted when the saga ends. What is left
 * after a crash is exactly the set of sagas recovery must roll forward or back. Each
 * row names its owner (process, clock node, instance), so recovery can tell a saga
 * whose process is gone from one still running on another server.
 */
import type { ProcessIdentity } from '../presence.js';
import type { Store } from '../store/port.js';
import { defineTable } from '../store/table.js';

/**
 * Open sagas, spread over a few partitions so the log is never one hot partition;
 * recovery reads every shard (the set of open sagas is small).
 */
export const sagaLogTable = defineTable({
  name: 'saga_log',
  columns: {
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
  },
  partitionKey: ['shard'],
  clustering: ['saga_id'],
});

/** Number of log partitions. */
export const SAGA_LOG_SHARDS = 8;

/** Where an open saga stands. */
export type SagaPhase = 'forward' | 'compensating';

/** One open saga as the log holds it. */
export interface SagaRecord {
  readonly sagaId: string;
  readonly kind: string;
  readonly payload: unknown;
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

/** Reads and writes the saga log through the store port. */
export class SagaLog {
  constructor(private readonly store: Store) {}

  /** Record where a saga stands (an upsert: idempotent). */
  async record(
    sagaId: string,
    kind: string,
    payload: unknown,
    step: number,
    phase: SagaPhase,
    owner: ProcessIdentity | null = null,
    now = new Date(),
  ): Promise<void> {
    await this.store.upsert(sagaLogTable, {
      ...(owner ? { owner_process: owner.processId, owner_node: owner.node, owner_instance: owner.instance } : {}),
      shard: shardOf(sagaId),
      saga_id: sagaId,
      kind,
      payload: JSON.stringify(payload),
      step,
      phase,
      updated_at: now,
    });
  }

  /** The saga ended (done or fully compensated): forget it. */
  async close(sagaId: string): Promise<void> {
    await this.store.delete(sagaLogTable, { shard: shardOf(sagaId), saga_id: sagaId });
  }

  /** Whether a saga is still open (running, or waiting for recovery). */
  async isOpen(sagaId: string): Promise<boolean> {
    return (await this.store.get(sagaLogTable, { shard: shardOf(sagaId), saga_id: sagaId })) !== null;
  }

  /** Every open saga, oldest first within each shard. */
  async open(limitPerShard = 1_000): Promise<SagaRecord[]> {
    const out: SagaRecord[] = [];
    for (let shard = 0; shard < SAGA_LOG_SHARDS; shard++) {
      const rows = await this.store.slice(sagaLogTable, { partition: { shard }, limit: limitPerShard });
      for (const r of rows) {
        out.push({
          sagaId: r.saga_id as string,
          kind: r.kind as string,
          payload: JSON.parse(r.payload as string),
          step: r.step as number,
          phase: r.phase as SagaPhase,
          updatedAt: r.updated_at as Date,
          owner:
            r.owner_process && r.owner_node !== null && r.owner_node !== undefined
              ? { processId: r.owner_process as string, node: r.owner_node as number, instance: (r.owner_instance as string | null) ?? '' }
              : null,
        });
      }
    }
    return out;
  }
}
