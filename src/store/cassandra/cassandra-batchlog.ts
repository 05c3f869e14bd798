/**
 * The adapter's own batchlog, for logged batches while Cassandra's cannot be written.
 *
 * Why. A coordinator writes a multi-partition logged batch to the batchlog of two other
 * live nodes of its data centre first, at consistency TWO. Which nodes are live is its
 * failure detector's view, and a node killed without a shutdown (a crash, a lost host)
 * stays "live" there until convicted, about 18 s later at the default
 * `phi_convict_threshold`. On a three-node ring every coordinator picks both other
 * nodes, so for those seconds every logged batch times out with write type `BATCH_LOG`
 * on every coordinator (measured: test/cluster/cassandra-ring-kill.test.ts), although
 * each partition still has a quorum of live replicas. Re-sending to another coordinator
 * cannot help; the driver, though, knows at once that the node is gone (its connections
 * closed).
 *
 * What. While the driver reports a node down, or for a while after a `BATCH_LOG`
 * timeout, the adapter keeps the batch's log itself, as Cassandra does: the batch's
 * statements (their timestamps and values already bound) are written as one row of
 * `store_batchlog` (one partition per minute: a single-partition write, which needs no
 * batchlog), then sent as an unlogged batch, then the row is deleted. A replay pass on
 * every server (`replay`, every REPLAY_INTERVAL_MS) sends again the rows older than the
 * replay delay, so a batch whose writer died between its log and its end is applied in
 * the end: all or nothing, as a logged batch. Replaying is harmless when the batch did
 * land: every statement carries its write timestamp. A replayed batch lands late, as
 * Cassandra's batchlog replay does, and the trailing passes find it (DESIGN.md, "Many
 * servers, one cluster").
 */
import cassandra from 'cassandra-driver';
import type { Store } from '../port.js';
import { withTally, type StatementTally } from '../statements.js';
import { defineTable } from '../table.js';
import { dateOfTimeuuid, newTimeuuid } from '../timeuuid.js';

const { types } = cassandra;

/** One row per batch logged by the adapter, in a partition per minute. */
export const storeBatchlogTable = defineTable({
  name: 'store_batchlog',
  columns: { minute: 'bigint', id: 'timeuuid', statements: 'text' },
  partitionKey: ['minute'],
  clustering: ['id'],
});

/** The minutes whose partition of `store_batchlog` may hold rows: what a replay pass reads. */
export const storeBatchlogMinutesTable = defineTable({
  name: 'store_batchlog_minutes',
  columns: { shard: 'int', minute: 'bigint' },
  partitionKey: ['shard'],
  clustering: ['minute'],
});

/** The adapter's own tables, created and checked with the declared ones. */
export const STORE_BATCHLOG_TABLES = [storeBatchlogTable, storeBatchlogMinutesTable] as const;

/** How long a logged row is kept at most (a day: far beyond any replay). */
const ROW_TTL_SECONDS = 86_400;
/** How often each server runs a replay pass. */
export const REPLAY_INTERVAL_MS = 15_000;
/** How long the adapter keeps its own log after Cassandra's batchlog timed out, with every node up. */
export const TROUBLE_MS = 30_000;

/** One statement and its bound values, as the adapter sends it. */
export interface LoggedStatement {
  readonly query: string;
  readonly params: unknown[];
}

/** What the adapter's log needs of the adapter: its port (for its own rows) and an unlogged batch. */
export interface BatchlogDeps {
  readonly store: Pick<Store, 'upsert' | 'delete' | 'slice' | 'deleteRange'>;
  /** Send `statements` as one unlogged batch, waiting at most `timeoutMs` for its answer (the write timeout when absent), counted into `tally`. */
  readonly unlogged: (statements: readonly LoggedStatement[], timeoutMs?: number, tally?: StatementTally) => Promise<void>;
  /** Rows older than this, in ms, are replayed (their writer had time to finish). */
  readonly replayAfterMs: number;
  readonly log: (message: string) => void;
}

/** The adapter's batchlog: log, apply, forget; and replay what a writer left. */
export class ClientBatchlog {
  /** Minutes this process has marked already. */
  private readonly marked = new Set<number>();

  constructor(private readonly deps: BatchlogDeps) {}

  /**
   * Apply `statements` all or nothing, in the end, without Cassandra's batchlog; the
   * batch itself is sent with what is left until `deadline` (ms) as its timeout, so it
   * lands within the window its timestamps assume, or is left to the replay.
   */
  async apply(statements: readonly LoggedStatement[], deadline: number, tally?: StatementTally): Promise<void> {
    const now = Date.now();
    const minute = Math.floor(now / 60_000);
    const { store } = this.deps;
    // Each round trip counts into the request's tally, as the logged batch would have.
    if (!this.marked.has(minute)) {
      await withTally(tally, () => store.upsert(storeBatchlogMinutesTable, { shard: 0, minute: BigInt(minute) }, { ttl: ROW_TTL_SECONDS }));
      this.marked.add(minute);
      for (const m of this.marked) if (m < minute - 60) this.marked.delete(m);
    }
    const key = { minute: BigInt(minute), id: newTimeuuid(now) };
    await withTally(tally, () => store.upsert(storeBatchlogTable, { ...key, statements: encodeStatements(statements) }, { ttl: ROW_TTL_SECONDS }));
    await this.deps.unlogged(statements, Math.max(1, deadline - Date.now()), tally);
    // Applied: the row may go. If this delete is lost, a replay applies the batch again (harmless).
    await withTally(tally, () => store.delete(storeBatchlogTable, key)).catch(() => undefined);
  }

  /**
   * One replay pass: every logged row older than the replay delay is applied again and
   * deleted; a minute whose rows are all older is then dropped whole. Safe on any number
   * of servers at once.
   */
  async replay(now = Date.now()): Promise<number> {
    const { store } = this.deps;
    const cutoff = now - this.deps.replayAfterMs;
    let replayed = 0;
    const minutes = await store.slice(storeBatchlogMinutesTable, { partition: { shard: 0 }, limit: 10_000 });
    for (const mark of minutes) {
      const minute = mark.minute as bigint;
      const rows = await store.slice(storeBatchlogTable, { partition: { minute }, limit: 100_000 });
      for (const row of rows) {
        if (dateOfTimeuuid(row.id as string).getTime() > cutoff) continue;
        await this.deps.unlogged(decodeStatements(row.statements as string));
        await store.delete(storeBatchlogTable, { minute, id: row.id as string });
        replayed++;
      }
      if ((Number(minute) + 1) * 60_000 <= cutoff) {
        await store.deleteRange(storeBatchlogTable, { minute }, {});
        await store.delete(storeBatchlogMinutesTable, { shard: 0, minute });
      }
    }
    if (replayed > 0) this.deps.log(`replayed ${replayed} batch(es) of the adapter's batchlog (store_batchlog) that their writer did not finish`);
    return replayed;
  }
}

/** Statements as text: values tagged by type so that `decodeStatements` binds the same values. */
export function encodeStatements(statements: readonly LoggedStatement[]): string {
  return JSON.stringify(statements.map((s) => ({ q: s.query, p: s.params.map(encodeValue) })));
}

/** The statements `encodeStatements` wrote. */
export function decodeStatements(text: string): LoggedStatement[] {
  return (JSON.parse(text) as Array<{ q: string; p: unknown[] }>).map((s) => ({ query: s.q, params: s.p.map(decodeValue) }));
}

function encodeValue(value: unknown): unknown {
  if (value instanceof types.TimeUuid) return { t: value.toString() };
  if (value instanceof types.Uuid) return { u: value.toString() };
  if (typeof value === 'bigint') return { b: value.toString() };
  if (value instanceof Date) return { d: value.getTime() };
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) return value;
  throw new Error(`a batch value of this kind cannot be logged: ${Object.prototype.toString.call(value)}`);
}

function decodeValue(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  const o = value as { t?: string; u?: string; b?: string; d?: number };
  if (o.t !== undefined) return types.TimeUuid.fromString(o.t);
  if (o.u !== undefined) return types.Uuid.fromString(o.u);
  if (o.b !== undefined) return BigInt(o.b);
  return new Date(o.d!);
}
