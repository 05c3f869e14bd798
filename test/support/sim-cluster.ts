/**
 * A simulated cluster: several app instances ("servers") over one store, each wired by
 * the composition root as a real process is, each with its own skewed clock, loaders,
 * saga runner, applier and verifier, and each talking to the store through its own
 * `SimStore`:
 * - the write timestamp is chosen when the call is made, from the instance's clock
 *   (the Cassandra driver's client-side timestamps), and the call then lands after a
 *   random delay, so writes land out of order; lightweight transactions (insert-if-not-
 *   exists, conditional deletes) are stamped by the store's coordinator clock instead,
 *   as by a Paxos ballot;
 * - a logged batch lands one partition at a time, each part after its own delay, other
 *   calls landing in between; once any part has landed, all of it lands;
 * - with `lateLandingMs`, now and then a batch that carries a background job's mark (a
 *   write the trailing passes answer for) has an unknown outcome: its caller is told it
 *   timed out, and it lands, with its timestamps, that long (virtual ms) later, once
 *   `settle` or `settleLate` gets there (a batchlog replay, a hint past the window);
 * - an instance crashes before one of its calls: its pending calls land or never land
 *   (chosen at random), no promise of it ever settles again (its code is frozen), its
 *   timers stop and its in-memory state is gone. `restart` starts a new process in
 *   its place, which runs start-up recovery like the real server.
 * Time is virtual: `SimTime` is the true time (the store's, for TTLs and ballots);
 * `settle` jumps it forward instead of sleeping, so a settle window of seconds costs
 * milliseconds.
 */
import pino from 'pino';
import {
  ALL_TABLES,
  createListApplier,
  createRequestContext,
  createSagaRunner,
  createServices,
  type FeatureSettings,
  type Services,
} from '../../src/composition-root.js';
import { readConnectionCounts } from '../../src/counts/connection-counts.js';
import type { ListApplier } from '../../src/features/lists/applier.js';
import { windowMarksTable, type WindowedJob } from '../../src/background/windowed-job.js';
import { latePassesOf } from '../../src/config.js';
import type { RequestContext } from '../../src/graphql/context.js';
import { Presence } from '../../src/background/presence.js';
import { MonotonicClock, type Clock } from '../../src/store/clock.js';
import { StoreOutcomeUnknownError, type ClusteringRange, type DeleteOptions, type Mutation, type Store, type WriteOptions } from '../../src/store/port.js';
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';
import type { Row, TableSpec } from '../../src/store/table.js';
import { memorySqliteStore } from './stores.js';
import { mulberry32 } from '../../src/seed/random.js';

/** A small seeded PRNG (mulberry32): runs replay from fast-check's seed. */
export const prng = mulberry32;

/** The true time of the simulation: the wall clock plus the jumps `settle` made. */
export class SimTime {
  private jumpMs = 0;
  now(): number {
    return Date.now() + this.jumpMs;
  }
  advance(ms: number): void {
    this.jumpMs += ms;
  }
}

/** Where a `SimStore` holds batches back to land late. */
interface LateLanding {
  /** Whether to hold some back now. */
  readonly armed: boolean;
  /** The share of marked batches held back while armed. */
  readonly share: number;
  hold(land: () => Promise<void>): void;
}

/** The share of marked batches that land late when the cluster has `lateLandingMs`. */
const LATE_SHARE = 1 / 6;

/** A promise that never settles: what a dead process's code waits on. */
const never = <T>() => new Promise<T>(() => undefined);

/** Sleep `ms` of real time (store-call delays are real, so calls interleave). */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The decorator between one instance and the shared store (see the file comment). */
export class SimStore extends StoreDecorator {
  private dead = false;
  /** Calls made so far (crash points count them). */
  calls = 0;
  private crashAt: number | null = null;
  /** Pending calls: set to false at a crash for the ones that never land. */
  private readonly pending = new Set<{ land: boolean }>();
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Test hook: crash just before the first call this matches. */
  crashOn: ((call: StoreCall) => boolean) | null = null;
  /** Test hook: awaited before the n-th partition of a batch lands (to order parts by hand). */
  beforeBatchPart: ((part: number) => Promise<void>) | null = null;

  constructor(
    inner: Store,
    private readonly clock: Clock,
    private readonly random: () => number,
    private readonly maxDelayMs: number,
    private readonly onCrash: () => void,
    /** Holds batches back to land late (the cluster's `lateLandingMs`), or null. */
    private readonly late: LateLanding | null = null,
  ) {
    super(inner);
  }

  get isDead(): boolean {
    return this.dead;
  }

  /** Crash just before the call with this index (counted from the start). */
  crashBeforeCall(index: number): void {
    this.crashAt = index;
  }

  /** Forget the crash point (settling runs without crashes). */
  disarm(): void {
    this.crashAt = null;
  }

  /** Die now: each pending call lands or not, at random. */
  crash(): void {
    if (this.dead) return;
    this.dead = true;
    for (const p of this.pending) p.land = this.random() < 0.5;
    this.onCrash();
  }

  /** Resolves once every call already sent has landed or been dropped. */
  async quiesce(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /**
   * Plain writes and deletes get the instance's timestamp now, as the driver's
   * client-side generator gives it. Lightweight transactions (`insertIfNotExists`,
   * the conditional `deleteIf`) pass through unstamped: the store stamps them with its
   * coordinator clock (the true time), as Cassandra stamps them with the Paxos ballot.
   * Like every call (through `around`) they land late, and a crash may drop them.
   */
  private stamp<O extends WriteOptions | DeleteOptions | undefined>(table: TableSpec, options: O): O {
    if (Object.values(table.columns).includes('counter') || options?.timestamp !== undefined) return options;
    return { ...options, timestamp: this.clock.nowMicros() } as O;
  }

  override upsert(table: TableSpec, row: Row, options?: WriteOptions): Promise<void> {
    return super.upsert(table, row, this.stamp(table, options));
  }
  override delete(table: TableSpec, key: Row, options?: DeleteOptions): Promise<void> {
    return super.delete(table, key, this.stamp(table, options));
  }
  override deleteRange(table: TableSpec, partition: Row, range: ClusteringRange, options?: DeleteOptions): Promise<void> {
    return super.deleteRange(table, partition, range, this.stamp(table, options));
  }

  /**
   * A logged batch: timestamps chosen now; then each partition's part lands on its own,
   * after its own delay. Past the batch log (the first delay), all of it lands, even if
   * this instance dies meanwhile.
   */
  override batch(mutations: readonly Mutation[]): Promise<void> {
    // One client timestamp for the whole batch, as the driver sends it.
    const timestamp = this.clock.nowMicros();
    const stamped = mutations.map((m) =>
      m.options?.timestamp !== undefined || Object.values(m.table.columns).includes('counter') ? m : ({ ...m, options: { ...m.options, timestamp } } as Mutation),
    );
    const parts = new Map<string, Mutation[]>();
    for (const m of stamped) {
      const key = m.kind === 'deleteRange' ? m.partition : m.kind === 'upsert' ? m.row : m.key;
      const id = `${m.table.name}:${JSON.stringify(m.table.partitionKey.map((c) => String(key[c])))}`;
      parts.set(id, [...(parts.get(id) ?? []), m]);
    }
    const call: StoreCall = { operation: 'batch', table: stamped[0]?.table.name ?? null, tables: [] };
    const late = this.late;
    if (late?.armed && stamped.some((m) => m.table.name === windowMarksTable.name) && this.random() < late.share) {
      return this.around(call, async () => {
        late.hold(() => this.inner.batch(stamped));
        throw new StoreOutcomeUnknownError('simulated write timeout: the batch lands late', { timedOut: true });
      });
    }
    return this.around(call, async () => {
      // The batch log is written: every part lands, in any order, interleaved with other calls.
      const landing = [...parts.values()].map(async (part, n) => {
        await sleep(this.random() * this.maxDelayMs);
        await this.beforeBatchPart?.(n);
        await this.inner.batch(part);
      });
      const all = Promise.all(landing);
      this.inFlight.add(all);
      void all.finally(() => this.inFlight.delete(all));
      await all;
    });
  }

  protected async around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    if ((this.crashAt !== null && this.calls >= this.crashAt) || this.crashOn?.(call)) this.crash();
    this.calls++;
    if (this.dead) return never();
    const ticket = { land: true };
    this.pending.add(ticket);
    const flight = (async () => {
      await sleep(this.random() * this.maxDelayMs);
      this.pending.delete(ticket);
      if (!ticket.land) return { landed: false as const };
      return { landed: true as const, value: await run() };
    })();
    this.inFlight.add(flight);
    void flight.finally(() => this.inFlight.delete(flight)).catch(() => undefined);
    const outcome = await flight;
    // A dead process learns nothing, whether or not its call landed.
    if (this.dead || !outcome.landed) return never();
    return outcome.value;
  }
}

/** What an operation on an instance came to. */
export type Outcome<T> = { readonly kind: 'ok'; readonly value: T } | { readonly kind: 'error'; readonly error: unknown } | { readonly kind: 'died' };

/** One app process of the simulation. */
export class SimInstance {
  readonly services: Services;
  readonly applier: ListApplier;
  readonly verifier: WindowedJob;
  private readonly deaths: Array<() => void> = [];

  private constructor(
    readonly name: string,
    readonly offsetMs: number,
    readonly cluster: SimCluster,
    readonly store: SimStore,
    clock: MonotonicClock,
    readonly presence: Presence,
  ) {
    const logger = pino({ level: 'silent' });
    this.services = createServices(cluster.settings, {
      store,
      logger,
      clock,
      presence,
      onListAppend: (listId) => this.applier.wake(listId),
    });
    this.applier = createListApplier(this.services);
    this.verifier = this.services.countVerifier;
  }

  /** A new process named `name`: claims its clock node (presence), as the server does at start. */
  static async launch(name: string, offsetMs: number, cluster: SimCluster): Promise<SimInstance> {
    const clock = new MonotonicClock({ now: () => cluster.time.now() + offsetMs });
    let instance: SimInstance | undefined;
    const store = new SimStore(cluster.base, clock, cluster.random, cluster.maxDelayMs, () => instance?.died(), cluster.late);
    const presence = await Presence.claim(store, name, { random: cluster.random });
    clock.useNode(presence.identity.node);
    instance = new SimInstance(name, offsetMs, cluster, store, clock, presence);
    return instance;
  }

  get isDead(): boolean {
    return this.store.isDead;
  }

  /** A request context for `viewer` (an admin by default). */
  context(viewer: { username: string; isAdmin: boolean } = { username: 'root', isAdmin: true }): RequestContext {
    return createRequestContext(this.services, viewer);
  }

  /** Run `work` as one request; `died` if the instance crashes before it answers. */
  run<T>(work: (ctx: RequestContext) => Promise<T>, viewer?: { username: string; isAdmin: boolean }): Promise<Outcome<T>> {
    if (this.isDead) return Promise.resolve({ kind: 'died' });
    return new Promise((resolve) => {
      this.deaths.push(() => resolve({ kind: 'died' }));
      work(this.context(viewer)).then(
        (value) => resolve({ kind: 'ok', value }),
        (error: unknown) => resolve({ kind: 'error', error }),
      );
    });
  }

  /** Start-up of a process: recover the sagas a crash left open. */
  async start(): Promise<void> {
    await createSagaRunner(this.services).recover(this.cluster.recoveryGraceMs, new Date(this.cluster.time.now()));
  }

  /** One round of every background job this process runs on timers. */
  async backgroundPass(): Promise<void> {
    await this.presence.renew();
    await createSagaRunner(this.services).recover(this.cluster.recoveryGraceMs, new Date(this.cluster.time.now()));
    await this.applier.runOnce();
    await this.verifier.runOnce();
    await this.services.nameSweeper.runOnce();
  }

  /**
   * One trailing pass per configured horizon of every job that has them
   * (`LATE_WRITE_PASSES`), each as its timer runs it (and, like a server without
   * metrics, with nothing listening to its report).
   */
  async trailingPasses(): Promise<void> {
    for (const pass of latePassesOf(this.services.cluster)) {
      await this.verifier.trailingPass(pass);
      await this.services.nameSweeper.trailingPass(pass);
      await this.applier.trailingPass(pass);
      await this.services.live.latePass(pass);
    }
  }

  /** A connection count as this process reads it: through its verifier's progress. */
  async count(key: string): Promise<number> {
    const nowMs = Number(this.services.clock.nowMicros() / 1000n);
    const [count] = await readConnectionCounts(this.cluster.base, [key], { nowMs, cluster: this.services.cluster, progress: this.verifier.progress() });
    return count!;
  }

  /** The process died: its timers stop. */
  private died(): void {
    this.applier.stop();
    for (const d of this.deaths.splice(0)) d();
  }
}

/** Options of a simulated cluster. */
export interface SimOptions {
  /** Clock offset of each instance, in ms (their number is the number of instances). */
  readonly offsetsMs: readonly number[];
  /** Largest random delay of a store call, in real ms. */
  readonly maxDelayMs?: number;
  readonly seed: number;
  readonly settings?: Partial<FeatureSettings>;
  /** When set, some batches land this long (virtual ms) after their caller was told they timed out (see the file comment). */
  readonly lateLandingMs?: number;
}

/** Several instances over one in-memory store. */
export class SimCluster {
  readonly time = new SimTime();
  readonly base: Store;
  readonly random: () => number;
  readonly maxDelayMs: number;
  readonly settings: FeatureSettings;
  readonly instances: SimInstance[] = [];
  /** Recovery waits this long for sagas it cannot prove abandoned (virtual ms). */
  readonly recoveryGraceMs = 10_000;
  /** How late held-back batches land (virtual ms); null: none is held back. */
  readonly lateLandingMs: number | null;
  /** Batches held back, with when (true time) they land. */
  private readonly held: Array<{ readonly dueAt: number; readonly land: () => Promise<void> }> = [];
  /** Whether batches are held back now (`armLate`; `settle` disarms, as it does crashes). */
  private lateArmed = false;
  /** The share of marked batches held back while armed. */
  private lateShare = LATE_SHARE;
  /** Where instances' stores hold batches back; null without `lateLandingMs`. */
  readonly late: LateLanding | null;

  private constructor(options: SimOptions) {
    this.lateLandingMs = options.lateLandingMs ?? null;
    const lateMs = this.lateLandingMs;
    const cluster = this;
    this.late =
      lateMs === null
        ? null
        : {
            get armed() {
              return cluster.lateArmed;
            },
            get share() {
              return cluster.lateShare;
            },
            hold: (land) => void this.held.push({ dueAt: this.time.now() + lateMs, land }),
          };
    this.random = prng(options.seed);
    this.maxDelayMs = options.maxDelayMs ?? 4;
    this.settings = {
      cursorSecret: 'sim-cursor-secret',
      suspensionBucket: 'month',
      acceptanceStrategy: 'first-write-wins',
      // Offsets within ±1 s put two clocks up to 2 s apart; a call lands within ms.
      cluster: { clockSkewMs: 2_000, writeTimeoutMs: 1_000 },
      ...options.settings,
    };
    // The store's own clocks are the coordinators': true time (TTLs, Paxos ballots).
    const coordinator = () => new MonotonicClock({ now: () => this.time.now() });
    this.base = memorySqliteStore({ now: () => this.time.now(), clock: coordinator(), coordinatorClock: coordinator() });
  }

  /** A cluster with its tables created and every instance started. */
  static async create(options: SimOptions): Promise<SimCluster> {
    const cluster = new SimCluster(options);
    await cluster.base.ensureTables(ALL_TABLES);
    for (const [i, offset] of options.offsetsMs.entries()) cluster.instances.push(await SimInstance.launch(`s${i}`, offset, cluster));
    return cluster;
  }

  /** A live instance, chosen by index (wrapping). */
  at(i: number): SimInstance {
    return this.instances[i % this.instances.length]!;
  }

  /** Replace a dead instance by a new process with the same clock offset, and start it. */
  async restart(i: number): Promise<SimInstance> {
    const old = this.instances[i]!;
    // The same instance name: it knows the sagas its previous incarnation left open.
    const fresh = await SimInstance.launch(old.name, old.offsetMs, this);
    this.instances[i] = fresh;
    await fresh.start();
    return fresh;
  }

  /** Wait until every call sent by any instance (dead or alive) has landed or been dropped. */
  async quiesce(): Promise<void> {
    for (const instance of this.instances) await instance.store.quiesce();
  }

  /**
   * Let the cluster settle: everything sent lands, dead instances are restarted, then
   * `rounds` times the true time jumps by `stepMs` and every instance runs its
   * background jobs.
   */
  async settle(options: { stepMs?: number; rounds?: number } = {}): Promise<void> {
    for (const instance of this.instances) instance.store.disarm();
    this.lateArmed = false;
    await this.quiesce();
    for (let i = 0; i < this.instances.length; i++) if (this.instances[i]!.isDead) await this.restart(i);
    for (let round = 0; round < (options.rounds ?? 3); round++) {
      this.time.advance(options.stepMs ?? 4_000);
      await this.landDue();
      for (const instance of this.instances) await instance.backgroundPass();
      await this.quiesce();
    }
  }

  /** From now until the next `settle`, hold some batches back (with `lateLandingMs`): `share` of those that carry a mark. */
  armLate(share: number = LATE_SHARE): void {
    this.lateArmed = true;
    this.lateShare = share;
  }

  /** Land the held-back batches that are due, in the order they were held. */
  private async landDue(): Promise<void> {
    const now = this.time.now();
    const due = this.held.filter((h) => h.dueAt <= now);
    this.held.splice(0, this.held.length, ...this.held.filter((h) => h.dueAt > now));
    for (const h of due) await h.land();
  }

  /**
   * Settle, then let every held-back batch land (`lateLandingMs` later, after the
   * windows they belong to were settled, swept and cut), run every instance's trailing
   * passes, and settle again: what the cluster comes to once late writes are found.
   */
  async settleLate(): Promise<void> {
    await this.settle();
    if (this.lateLandingMs === null) return;
    await this.settle({ stepMs: this.lateLandingMs, rounds: 1 });
    await this.settle();
    for (const instance of this.instances) await instance.trailingPasses();
    await this.settle();
  }

  /**
   * A connection count as any reader sees it, read straight from the shared store (no
   * verifier progress assumed: every window not settled is read).
   */
  async count(key: string): Promise<number> {
    const [count] = await readConnectionCounts(this.base, [key], { nowMs: this.time.now(), cluster: this.settings.cluster!, progress: null });
    return count!;
  }

  async close(): Promise<void> {
    for (const instance of this.instances) instance.applier.stop();
    await this.base.close();
  }
}
