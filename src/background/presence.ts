/**
 * Which server processes are alive, for the background jobs of many servers over one
 * cluster. At start a process claims a clock node (insert-if-not-exists of its row, a
 * 10 s TTL) and renews it every 3 s; a process that dies stops renewing and its row
 * expires within seconds. The node gives the process's write timestamps their unique
 * low bits (store/clock.ts), and the row is how saga recovery tells that a saga's owner
 * is gone. A process also has a stable instance name (INSTANCE_ID, by default host and
 * port): a starting process knows that sagas owned by another process under its own
 * name belong to its previous, dead incarnation, without waiting for the TTL.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { startPeriodicTask, type PeriodicTask } from './periodic-task.js';
import { NODE_COUNT } from '../store/clock.js';
import { renewIfOwned } from '../store/owned-rows.js';
import type { Store } from '../store/port.js';
import { defineTable } from '../store/table.js';

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

/** Who owns a saga or a claim: a process, its node and its instance name. */
export interface ProcessIdentity {
  readonly processId: string;
  readonly node: number;
  readonly instance: string;
}

/** This process's presence in the cluster. */
export class Presence {
  private timer: PeriodicTask | null = null;

  private constructor(
    private readonly store: Store,
    readonly identity: ProcessIdentity,
    private readonly logger?: Logger,
  ) {}

  /** Claim a free clock node for a new process named `instance`. */
  static async claim(store: Store, instance: string, options: { logger?: Logger; random?: () => number } = {}): Promise<Presence> {
    const processId = randomUUID();
    const random = options.random ?? Math.random;
    const first = Math.floor(random() * NODE_COUNT);
    for (let i = 0; i < NODE_COUNT; i++) {
      const node = (first + i) % NODE_COUNT;
      const claim = await store.insertIfNotExists(presenceTable, { node, process_id: processId, instance }, { ttl: PRESENCE_TTL_SECONDS });
      if (claim.applied) return new Presence(store, { processId, node, instance }, options.logger);
    }
    throw new Error(`all ${NODE_COUNT} clock nodes are held by live processes: too many servers share this cluster`);
  }

  /** Renew the claim; logs (and returns false) if it was lost (this process was silent too long). */
  async renew(): Promise<boolean> {
    const { node, processId } = this.identity;
    const kept = await renewIfOwned(this.store, presenceTable, { node }, 'process_id', processId, PRESENCE_TTL_SECONDS);
    if (!kept) this.logger?.error({ node }, 'this process lost its clock node (silent for over the TTL); restart it');
    return kept;
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
      onError: (err) => this.logger?.error({ err }, 'renewing this process presence failed; will retry'),
    });
  }

  stop(): void {
    this.timer?.stop();
    this.timer = null;
  }
}
