/**
 * Which server processes are alive, for the background jobs of many servers over one
 * cluster. At start a process claims a clock node (insert-if-not-exists of its row, a
 * 10 s TTL) and renews it every 3 s; a process that dies stops renewing and its row
 * expires within seconds. The node gives the process's write timestamps their unique
 * low bits (store/clock.ts), and the row is how saga recovery tells that a saga's owner
 * is gone. A process also has a stable instance name (INSTANCE_ID, by default host and
 * port): a starting process knows that sagas owned by another process under its own
 * name belong to its previous, dead incarnation, without waiting for the TTL.
 *
 * The claim is a lease: a process that has not renewed it within PRESENCE_LEASE_MS of
 * its last renewal (paused, partitioned from the store, starved of CPU) may have lost
 * its node to another process, and another server may be recovering its sagas. From
 * then on it stops acting as that node, at once and without a store round trip: its
 * writes are refused (`LeaseGuardedStore`), its background jobs and saga recovery skip
 * their passes, readiness fails with the reason, and a saga it was running stops
 * before its next write and is left to recovery. The next renewal takes the node back
 * if its row is still there or free again (a new lease: sagas begun under the old one
 * stay stopped); if another process holds it now, `onLost` is told (the server exits),
 * as two live processes must never share a node.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { startPeriodicTask, type PeriodicTask } from './periodic-task.js';
import { NODE_COUNT } from '../store/clock.js';
import { renewIfOwned } from '../store/owned-rows.js';
import {
  StoreUnavailableError,
  type CellRead,
  type ClusteringRange,
  type ConditionalResult,
  type DeleteOptions,
  type Mutation,
  type ScanPage,
  type SliceQuery,
  type Store,
  type WriteOptions,
} from '../store/port.js';
import { defineTable, type Row, type TableSpec } from '../store/table.js';

/** One row per claimed clock node: the process holding it (expires unless renewed). */
export const presenceTable = defineTable({
  name: 'process_presence',
  columns: { node: 'int', process_id: 'uuid', instance: 'text' },
  partitionKey: ['node'],
});

/** How long a silent process is still taken for alive, in seconds. */
export const PRESENCE_TTL_SECONDS = 10;
/** How often a process renews its presence. */
export const PRESENCE_RENEW_MS = 3_000;
/**
 * How long after a renewal was sent this process still takes its node for its own: the
 * TTL, less a margin for the store's clock running ahead of ours (a row may expire
 * there a little before it would here).
 */
export const PRESENCE_LEASE_MS = PRESENCE_TTL_SECONDS * 1000 - 2_000;

/** A write refused because this process does not hold its clock node now (its lease lapsed). */
export class PresenceLapsedError extends StoreUnavailableError {}

/** One unbroken holding of the node: a lapse ends it, even if the node is taken back. */
export interface Lease {
  /** Whether the lease still holds (no lapse since it was taken). */
  held(): boolean;
}

/** Who owns a saga or a claim: a process, its node and its instance name. */
export interface ProcessIdentity {
  readonly processId: string;
  readonly node: number;
  readonly instance: string;
}

/** This process's presence in the cluster. */
export class Presence {
  private timer: PeriodicTask | null = null;
  /** Until when (ms, by `now`) this process holds its node: the last renewal's start plus PRESENCE_LEASE_MS. */
  private leaseUntil: number;
  /** Counts the leases: a lapse followed by a re-claim starts a new one. */
  private generation = 0;
  /** Another process holds the node now: this one never acts as it again. */
  private lost = false;

  private constructor(
    private readonly store: Store,
    readonly identity: ProcessIdentity,
    private readonly options: PresenceOptions,
    claimedAt: number,
  ) {
    this.leaseUntil = claimedAt + PRESENCE_LEASE_MS;
  }

  /** Claim a free clock node for a new process named `instance`. */
  static async claim(store: Store, instance: string, options: PresenceOptions & { random?: () => number } = {}): Promise<Presence> {
    const processId = randomUUID();
    const random = options.random ?? Math.random;
    const now = options.now ?? Date.now;
    const first = Math.floor(random() * NODE_COUNT);
    for (let i = 0; i < NODE_COUNT; i++) {
      const node = (first + i) % NODE_COUNT;
      const startedAt = now();
      const claim = await store.insertIfNotExists(presenceTable, { node, process_id: processId, instance }, { ttl: PRESENCE_TTL_SECONDS });
      if (claim.applied) return new Presence(store, { processId, node, instance }, options, startedAt);
    }
    throw new Error(`all ${NODE_COUNT} clock nodes are held by live processes: too many servers share this cluster`);
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** Whether this process holds its node now (its lease has not lapsed). */
  holds(): boolean {
    return !this.lost && this.now() < this.leaseUntil;
  }

  /** Why this process does not act as its node now, or null while it does (readiness). */
  status(): string | null {
    if (this.lost) return `another process holds this server's clock node ${this.identity.node}: it no longer acts on the cluster; restart it`;
    if (this.holds()) return null;
    return (
      `this server has not renewed its presence (clock node ${this.identity.node}) for ${Math.round((this.now() - this.leaseUntil + PRESENCE_LEASE_MS) / 1000)} s: ` +
      'its writes, background jobs and saga recovery are paused until it holds its node again'
    );
  }

  /** The current lease (one already ended while the node is not held): what a saga runs under. */
  lease(): Lease {
    const generation = this.generation;
    return { held: () => generation === this.generation && this.holds() };
  }

  /**
   * Renew the claim. After a lapse, take the node back if its row expired and nobody
   * claimed it (a new lease). False when the node is another process's now: `onLost`
   * is told, and this process stays out for good.
   */
  async renew(): Promise<boolean> {
    if (this.lost) return false;
    const { node, processId, instance } = this.identity;
    const startedAt = this.now();
    const lapsed = startedAt >= this.leaseUntil;
    let kept = await renewIfOwned(this.store, presenceTable, { node }, 'process_id', processId, PRESENCE_TTL_SECONDS);
    if (kept && lapsed) {
      // The row may have expired between the renewal's read and its write, and another
      // process claimed it there: its claim wins over our rewrite. Read back to know.
      kept = (await this.store.get(presenceTable, { node }))?.process_id === processId;
    }
    let reclaimed = false;
    if (!kept) {
      // The row expired (this process was silent for over the TTL): take it again if it is free.
      reclaimed = (await this.store.insertIfNotExists(presenceTable, { node, process_id: processId, instance }, { ttl: PRESENCE_TTL_SECONDS })).applied;
      kept = reclaimed;
    }
    if (!kept) {
      this.lost = true;
      this.options.logger?.error({ node }, 'another process holds this server\'s clock node (it was silent for over the TTL): it stops acting on the cluster');
      this.options.onLost?.();
      return false;
    }
    if (lapsed || reclaimed) {
      // Whatever began under the old lease (a saga) may have been taken over meanwhile: it stays stopped.
      this.generation++;
      this.options.logger?.warn({ node, reclaimed }, 'this server holds its clock node again after its presence lapsed; writes and background jobs resume');
    }
    this.leaseUntil = Math.max(this.leaseUntil, startedAt + PRESENCE_LEASE_MS);
    return true;
  }

  /** Whether the process `owner` is still alive. */
  async isAlive(owner: ProcessIdentity): Promise<boolean> {
    if (owner.processId === this.identity.processId) return true;
    // Another process under our own name: our previous incarnation, which died.
    if (owner.instance === this.identity.instance) return false;
    const row = await this.store.get(presenceTable, { node: owner.node });
    return row?.process_id === owner.processId;
  }

  /** Renew every PRESENCE_RENEW_MS until stopped. */
  start(): void {
    if (this.timer) return;
    this.timer = startPeriodicTask({
      intervalMs: PRESENCE_RENEW_MS,
      pass: async () => void (await this.renew()),
      onError: (err) => this.options.logger?.error({ err }, 'renewing this process presence failed; will retry'),
    });
  }

  stop(): void {
    this.timer?.stop();
    this.timer = null;
  }
}

/** How a presence tells the time and reports. */
export interface PresenceOptions {
  readonly logger?: Logger;
  /** The time in ms (`Date.now` by default; the process clock's in tests). */
  readonly now?: () => number;
  /** Told once when another process holds this one's node (the server exits). */
  readonly onLost?: () => void;
}

/**
 * A store whose writes are refused with PresenceLapsedError while `held()` is false:
 * the process's store (held: its presence holds its node), and each saga's (held: the
 * lease it began under). Reads go straight through, at no cost to them.
 */
export class LeaseGuardedStore implements Store {
  constructor(
    private readonly inner: Store,
    private readonly held: () => boolean,
  ) {}

  /** A write refused. */
  private refuse(table: TableSpec): Promise<never> {
    return Promise.reject(
      new PresenceLapsedError(`refused to write ${table.name}: this server does not hold its clock node now (its presence lapsed); retry the request`),
    );
  }

  ensureTables(tables: readonly TableSpec[]): Promise<void> {
    return this.inner.ensureTables(tables);
  }
  get(table: TableSpec, key: Row): Promise<Row | null> {
    return this.inner.get(table, key);
  }
  getMany(table: TableSpec, keys: readonly Row[]): Promise<Array<Row | null>> {
    return this.inner.getMany(table, keys);
  }
  getInPartition(table: TableSpec, partition: Row, keys: readonly Row[]): Promise<Array<Row | null>> {
    return this.inner.getInPartition(table, partition, keys);
  }
  slice(table: TableSpec, query: SliceQuery): Promise<Row[]> {
    return this.inner.slice(table, query);
  }
  scan(table: TableSpec, options: { readonly limit: number; readonly after?: string | null }): Promise<ScanPage> {
    return this.inner.scan(table, options);
  }
  readCells(table: TableSpec, key: Row, columns: readonly string[]): Promise<CellRead> {
    return this.inner.readCells(table, key, columns);
  }
  upsert(table: TableSpec, row: Row, options?: WriteOptions): Promise<void> {
    return this.held() ? this.inner.upsert(table, row, options) : this.refuse(table);
  }
  delete(table: TableSpec, key: Row, options?: DeleteOptions): Promise<void> {
    return this.held() ? this.inner.delete(table, key, options) : this.refuse(table);
  }
  deleteRange(table: TableSpec, partition: Row, range: ClusteringRange, options?: DeleteOptions): Promise<void> {
    return this.held() ? this.inner.deleteRange(table, partition, range, options) : this.refuse(table);
  }
  increment(table: TableSpec, key: Row, deltas: Readonly<Record<string, bigint | number>>): Promise<void> {
    return this.held() ? this.inner.increment(table, key, deltas) : this.refuse(table);
  }
  insertIfNotExists(table: TableSpec, row: Row, options?: { ttl?: number }): Promise<ConditionalResult> {
    return this.held() ? this.inner.insertIfNotExists(table, row, options) : this.refuse(table);
  }
  deleteIf(table: TableSpec, key: Row, expected?: Row): Promise<boolean> {
    return this.held() ? this.inner.deleteIf(table, key, expected) : this.refuse(table);
  }
  batch(mutations: readonly Mutation[]): Promise<void> {
    return this.held() || mutations.length === 0 ? this.inner.batch(mutations) : this.refuse(mutations[0]!.table);
  }
  ping(): Promise<void> {
    return this.inner.ping();
  }
  checkSchema(tables: readonly TableSpec[]): Promise<string[]> {
    return this.inner.checkSchema(tables);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
