/**
 * The composition root: the only place that picks a store adapter, lists the tables
 * and the saga registry, and wires the features. The server (`app.ts`), the demo seed,
 * `npm run seed`, the benchmarks and the test fixtures all build features here, the
 * same way. Plain constructor arguments; configuration flows down from here.
 */
import { createHmac } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { Logger } from 'pino';
import {
  DEFAULT_CLUSTER_SETTINGS,
  DEFAULT_IDEMPOTENCY_SETTINGS,
  DEFAULT_LIVE_SETTINGS,
  unreadySkewMsOf,
  type ClusterSettings,
  type Config,
  type LiveSettings,
} from './config.js';
import { CountWriter, countVerifierJob, type CountReadOptions } from './counts/connection-counts.js';
import { countTables } from './counts/count-tables.js';
import { isIndexKey, rankOfIndexEntry, rankOfSpelt, type RankOfItem } from './counts/count-ranks.js';
import { actorOf, type Actor } from './features/actor.js';
import { directoryTables } from './features/directory/directory-tables.js';
import { Directory, directorySagas } from './features/directory/directory.js';
import { nameSweepJob } from './features/directory/name-index.js';
import { idempotencyTables } from './features/idempotency/idempotency-tables.js';
import { MutationKeys, requestKeys, type RequestKeys } from './features/idempotency/mutation-keys.js';
import { ListApplier } from './features/lists/applier.js';
import { listTables } from './features/lists/lists-tables.js';
import { Lists } from './features/lists/lists.js';
import { meetingTables } from './features/meetings/meetings-tables.js';
import { Meetings, TokenSequence, acceptorRank } from './features/meetings/meetings.js';
import { suspensionSagas } from './features/suspensions/suspension-sagas.js';
import { suspensionTables } from './features/suspensions/suspensions-tables.js';
import { Suspensions } from './features/suspensions/suspensions.js';
import { timelineTables } from './features/timeline/timeline-tables.js';
import { Timeline, postRank } from './features/timeline/timeline.js';
import { userTables } from './features/users/users-tables.js';
import { Users, readUserForChange } from './features/users/users.js';
import type { Viewer } from './graphql/auth.js';
import type { RequestContext, StartedAhead } from './graphql/context.js';
import { createLoaders, type Loaders } from './graphql/loaders.js';
import { liveTables } from './live/change-log-tables.js';
import { ChangeClock, createChangeWriter, plannedChangeWriter, type ChangeWriter } from './live/change-log.js';
import { LiveHub, type PollReport } from './live/live-hub.js';
import { LiveSubscriptions } from './live/subscriptions.js';
import { createCursorCodec, type CursorCodec } from './paging/cursor.js';
import { RankCache } from './paging/ranked-index.js';
import { presenceTable, type Presence } from './background/presence.js';
import { randomUUID } from 'node:crypto';
import { KeyedLock } from './saga/keyed-lock.js';
import { sagaLogTables } from './saga/saga-log.js';
import { SagaRegistry, SagaRunner } from './saga/saga-runner.js';
import type { DemoSeeding } from './seed/demo.js';
import { seedProgressTable } from './seed/seed-tables.js';
import { cassandraStoreFrom } from './store/cassandra/cassandra-connect.js';
import { MonotonicClock, type Clock } from './store/clock.js';
import { RequestIds } from './store/id-source.js';
import type { Store, StoreWarning } from './store/port.js';
import { storeWarningLog } from './observability/store-warnings.js';
import { SqliteStore } from './store/sqlite/sqlite-store.js';
import { CountingStore } from './store/store-decorator.js';
import { ObservedStore, type StoreObserver } from './store/store-observer.js';
import { Metrics } from './observability/metrics.js';
import { ClockSkewWatch } from './observability/clock-skew.js';
import type { RequestDeadline } from './store/deadline.js';
import { CallPermits, requestCallCapacity } from './store/call-permits.js';
import type { RequestBudget } from './graphql/rate-limit.js';
import type { TableSpec } from './store/table.js';
import { WindowedJob, windowedJobTables, type LatePassReport } from './background/windowed-job.js';

/** Every table the product declares. */
export const ALL_TABLES: readonly TableSpec[] = [
  ...userTables,
  ...timelineTables,
  ...suspensionTables,
  ...meetingTables,
  ...directoryTables,
  ...listTables,
  ...sagaLogTables,
  ...liveTables,
  ...countTables,
  ...windowedJobTables,
  ...idempotencyTables,
  seedProgressTable,
  presenceTable,
];

/** Every saga the product runs (each feature exports its definitions). */
export const SAGA_REGISTRY = new SagaRegistry([...suspensionSagas, ...directorySagas]);

/**
 * The settings features are built with: the part of the configuration they read
 * (`cluster` defaults to DEFAULT_CLUSTER_SETTINGS, `live` to DEFAULT_LIVE_SETTINGS).
 */
export type FeatureSettings = Pick<Config, 'cursorSecret' | 'suspensionBucket' | 'acceptanceStrategy'> &
  Partial<Pick<Config, 'cluster' | 'live' | 'cursorPreviousSecrets' | 'idempotency' | 'requestTimeoutMs' | 'countListsSparse'>>;

/**
 * Build the configured store adapter, its default write timestamps taken from `clock`
 * (the process clock, whose low bits name this server). On Cassandra its `ensureTables`
 * retries an unreachable cluster (one `log` line per attempt), then checks the schema
 * or, with CASSANDRA_AUTO_SCHEMA, creates it.
 */
/**
 * The counts that keep a counted index (`offset` without reading the edges skipped):
 * an author's posts, ranked by time, and a meeting's acceptors, by user id, whose
 * items are what they rank; and the index entries of the connections whose ranks are
 * not a function of their counted items (a list's placements, the suspensions), each
 * carrying its rank in its name (count-ranks.ts, `indexKeyOf`).
 */
export const rankedCounts: RankOfItem = (countKey) =>
  countKey.startsWith('posts:') ? postRank : countKey.startsWith('accepted:') ? acceptorRank : isIndexKey(countKey) ? rankOfIndexEntry : null;

export function createStore(
  config: Pick<Config, 'store' | 'sqlitePath' | 'cassandra'> & Partial<Pick<Config, 'embeddedStore'>>,
  options: { clock?: Clock; log?: (message: string) => void; warn?: (warning: StoreWarning) => void } = {},
): Store {
  const { clock, log = console.error, warn } = options;
  if (config.store === 'cassandra') return cassandraStoreFrom(config.cassandra, { log, warn, clock });
  if (config.sqlitePath !== ':memory:') mkdirSync(dirname(config.sqlitePath), { recursive: true });
  // The embedded store compacts on its own timer, as Cassandra does, and warns through `warn`.
  return new SqliteStore({ database: new Database(config.sqlitePath), clock, log, warn, ...config.embeddedStore });
}

/**
 * Where a server's store writes (`createStore`'s options): its notes at info, its
 * warnings through `storeWarningLog`, their key values hashed with a key derived from
 * CURSOR_SECRET (shared by the servers of a cluster, so one key hashes alike on each).
 */
export function storeLogging(config: Pick<Config, 'cursorSecret'>, logger: Logger): { log: (message: string) => void; warn: (warning: StoreWarning) => void } {
  const hashKey = createHmac('sha256', config.cursorSecret).update('store warning key hashes').digest('hex');
  return { log: (message) => logger.info(message), warn: storeWarningLog(logger, { hashKey }) };
}

/** The app's metrics when `METRICS=true` (a registry of its own), else null. */
export function createMetrics(config: Pick<Config, 'metrics'>): Metrics | null {
  return config.metrics.enabled ? new Metrics({ token: config.metrics.token }) : null;
}

/**
 * The process's store as every caller sees it: observed round trip by round trip
 * (metrics, traces) when anyone observes, else the store itself (nothing added).
 */
export function observeStore(store: Store, observers: readonly StoreObserver<any>[]): Store {
  return observers.length === 0 ? store : new ObservedStore(store, observers);
}

/** What one process shares between all its requests. */
export interface Services {
  readonly store: Store;
  readonly settings: FeatureSettings;
  readonly codec: CursorCodec;
  readonly logger: Logger;
  /** The process's write clock (monotonic: timestamps never repeat). */
  readonly clock: Clock;
  /** Sagas running in this process (recovery leaves them alone). */
  readonly sagasInFlight: Set<string>;
  /** Serialises sagas per user within the process. */
  readonly userLock: KeyedLock;
  /** Hands out the decreasing part of acceptance tokens. */
  readonly acceptanceTokens: TokenSequence;
  /** One first-write-wins acceptance of a user at a time within the process (`Meetings.accept`). */
  readonly acceptanceLock: KeyedLock;
  /** Wakes the list applier after a list transaction is appended. */
  readonly onListAppend?: (listId: string) => void;
  /** The clock-skew and write-timeout bounds the background jobs rely on. */
  readonly cluster: ClusterSettings;
  /**
   * Told by the process clock of every write time read ahead of it: logs and counts
   * leads beyond `CLOCK_SKEW_MS`, and fails readiness past `CLOCK_SKEW_UNREADY_MS`.
   */
  readonly clockSkew: ClockSkewWatch;
  /** This process's presence in the cluster (saga ownership, liveness). */
  readonly presence?: Presence;
  /** Appends changes to the live change log (every write that changes a connection). */
  readonly changes: ChangeWriter;
  /** Records items added to and removed from counted connections (`totalCount`). */
  readonly counts: CountWriter;
  /** The counted indexes' bucket lists this process keeps across requests (`offset`). */
  readonly rankCache: RankCache;
  /** `rankedCounts`, with the lists spelt as configured (`COUNT_LISTS_SPARSE`): what every settlement here takes. */
  readonly rankedCounts: RankOfItem;
  /**
   * Settles the counts of closed windows (the server starts its timer); its progress
   * tells this process's count reads which windows are settled.
   */
  readonly countVerifier: WindowedJob;
  /**
   * Sweeps the name index's stale entries once their window has closed (the server
   * starts its timer); its progress tells this process's searches which entries are
   * current without reading their user.
   */
  readonly nameSweeper: WindowedJob;
  /** Polls the change log of the feeds subscribed to here and fans them out (the server starts it). */
  readonly live: LiveHub;
  /** The live settings the hub and the WebSocket server run with. */
  readonly liveSettings: LiveSettings;
  /** The app's metrics, when on: background jobs report to them. */
  readonly metrics: Metrics | null;
  /**
   * What request store calls may have in flight at once (absent: no cap), so background
   * work always finds capacity (`requestCallPermits`); background jobs never take one.
   */
  readonly requestCalls?: CallPermits;
  /** Idempotency keys: mutations retried with the same `clientMutationId` take effect once. */
  readonly mutationKeys: MutationKeys;
}

/** The process-wide services, over a store that is already open (and its tables created). */
export function createServices(
  settings: FeatureSettings,
  deps: {
    store: Store;
    logger: Logger;
    clock?: Clock;
    onListAppend?: (listId: string) => void;
    presence?: Presence;
    /** Told what each live poll cost (benchmarks; metrics are told anyway). */
    onLivePoll?: (report: PollReport) => void;
    metrics?: Metrics | null;
    requestCalls?: CallPermits;
  },
): Services {
  const metrics = deps.metrics ?? null;
  const onLivePoll =
    metrics && deps.onLivePoll
      ? (report: PollReport) => {
          metrics.livePoll(report);
          deps.onLivePoll!(report);
        }
      : metrics
        ? (report: PollReport) => metrics.livePoll(report)
        : deps.onLivePoll;
  const clock = deps.clock ?? new MonotonicClock();
  const codec = createCursorCodec(settings.cursorSecret, { previousSecrets: settings.cursorPreviousSecrets });
  const cluster = settings.cluster ?? DEFAULT_CLUSTER_SETTINGS;
  const liveSettings = settings.live ?? DEFAULT_LIVE_SETTINGS;
  const ranked = rankOfSpelt(rankedCounts, { sparseLists: settings.countListsSparse ?? false });
  const clockSkew = new ClockSkewWatch({ boundMs: cluster.clockSkewMs, unreadyMs: unreadySkewMsOf(cluster), logger: deps.logger, report: metrics });
  // A windowed job's options: its passes and trailing passes report as `job`.
  const jobOptions = (job: 'count_verifier' | 'name_sweeper') => ({
    clock,
    cluster,
    logger: deps.logger,
    onPass: metrics ? (ok: boolean) => metrics.backgroundPass(job, ok) : undefined,
    onLatePass: metrics ? (report: LatePassReport) => metrics.latePass(job, report) : undefined,
    runsWhen: whileHeld(deps.presence),
  });
  // The process clock reports each write time it observes ahead of it (timestampAbove).
  if (clock instanceof MonotonicClock) clock.onAhead = (aheadMs) => clockSkew.observe(aheadMs);
  return {
    store: deps.store,
    settings,
    codec,
    logger: deps.logger,
    clock,
    sagasInFlight: new Set(),
    userLock: new KeyedLock(),
    acceptanceTokens: new TokenSequence(),
    acceptanceLock: new KeyedLock(),
    onListAppend: deps.onListAppend,
    cluster,
    clockSkew,
    presence: deps.presence,
    changes: createChangeWriter(new ChangeClock(clock), { retentionSeconds: liveSettings.retentionSeconds, countedPointers: liveSettings.countedPointers }),
    // The live cells of counts are per clock node: this process's own (node 0 without presence).
    counts: new CountWriter(clock, deps.presence?.identity.node ?? 0),
    rankCache: new RankCache(),
    rankedCounts: ranked,
    countVerifier: new WindowedJob(deps.store, countVerifierJob(deps.store, ranked), jobOptions('count_verifier')),
    nameSweeper: new WindowedJob(
      deps.store,
      nameSweepJob({ store: deps.store, clock, readUser: (id, store = deps.store) => readUserForChange(store, id) }),
      jobOptions('name_sweeper'),
    ),
    live: new LiveHub({
      store: deps.store,
      codec,
      clock,
      cluster,
      pollMs: liveSettings.pollMs,
      retentionSeconds: liveSettings.retentionSeconds,
      fanout: liveSettings.fanout,
      maxQueued: liveSettings.maxQueued,
      logger: deps.logger,
      onPoll: onLivePoll,
      onLatePass: metrics ? (report) => metrics.latePass('live', report) : undefined,
    }),
    liveSettings,
    metrics,
    requestCalls: deps.requestCalls,
    mutationKeys: new MutationKeys({
      // Without a presence (tools, some tests), this process alone: its attempts are known in memory.
      owner: deps.presence?.identity ?? { processId: randomUUID(), node: 0, instance: 'local' },
      isAlive: (owner) => (deps.presence ? deps.presence.isAlive(owner) : Promise.resolve(false)),
      retentionSeconds: (settings.idempotency ?? DEFAULT_IDEMPOTENCY_SETTINGS).retentionSeconds,
      // No attempt outlives its request, and nothing it wrote lands after the late-write window.
      attemptLifetimeMs: (settings.requestTimeoutMs ?? 30_000) + cluster.clockSkewMs + cluster.writeTimeoutMs,
      waitMs: 3_000,
    }),
  };
}

/**
 * The cap on request store calls of the configured store: on Cassandra half of what the
 * driver carries on one host's connections (`requestCallCapacity`); none on the embedded
 * store, whose calls run one at a time on the event loop anyway.
 */
export function requestCallPermits(config: Pick<Config, 'store' | 'cassandra'>): CallPermits | undefined {
  return config.store === 'cassandra' ? new CallPermits(requestCallCapacity(config.cassandra.driver.connectionsPerHost)) : undefined;
}

/** A saga runner over a store view (a request's counting store, or the base store for recovery). */
export function createSagaRunner(services: Services, store: Store = services.store): SagaRunner {
  return new SagaRunner({
    store,
    registry: SAGA_REGISTRY,
    inFlight: services.sagasInFlight,
    presence: services.presence,
    logger: services.logger,
    cluster: services.cluster,
    environment: {
      changes: services.changes,
      counts: services.counts,
      onRegistryPrune: services.metrics ? (registry, outcome) => services.metrics!.registryPrune(registry, outcome) : undefined,
    },
  });
}

/** What count reads of this process need: its clock and its verifier's progress. */
function countReading(services: Services): () => CountReadOptions {
  return () => ({ nowMs: Number(services.clock.nowMicros() / 1000n), cluster: services.cluster, progress: services.countVerifier.progress() });
}

/** Loaders over the process's store for work shared by many callers (a live feed's poll). */
export function createLiveLoaders(services: Services): Loaders {
  return createLoaders(services.store, { counts: countReading(services) });
}

/** The ordered-list applier of a process (the server starts its timer; seeds drain with it). */
export function createListApplier(
  deps: Pick<Services, 'store' | 'clock' | 'logger' | 'changes' | 'counts'> & Partial<Pick<Services, 'cluster' | 'metrics' | 'presence'>>,
): ListApplier {
  const metrics = deps.metrics ?? null;
  return new ListApplier(deps.store, {
    clock: deps.clock,
    logger: deps.logger,
    cluster: deps.cluster ?? DEFAULT_CLUSTER_SETTINGS,
    changes: deps.changes,
    counts: deps.counts,
    onPass: metrics ? (ok) => metrics.backgroundPass('list_applier', ok) : undefined,
    onApplied: metrics ? (delay) => metrics.listTransactionApplied(delay) : undefined,
    onLatePass: metrics ? (report) => metrics.latePass('list_applier', report) : undefined,
    runsWhen: whileHeld(deps.presence),
  });
}

/** Background work runs only while this process's presence holds its clock node (always, without presence). */
function whileHeld(presence: Presence | undefined): (() => boolean) | undefined {
  return presence ? () => presence.holds() : undefined;
}

/** What seeding the demo set needs (`seedDemoData`): the features acting as an admin, and the list applier. */
export function demoSeeding(services: Services): DemoSeeding {
  return {
    store: services.store,
    features: () => createRequestContext(services, { username: 'demo', isAdmin: true }),
    drainList: async (listId) => {
      await createListApplier(services).drain(listId);
    },
  };
}

/**
 * The features of one unit of work (a GraphQL request, or a seeding job) for one
 * caller: a round-trip-counting view of the store, fresh loaders, and every feature
 * over them. `cache: false` for long jobs: loaders then batch but remember nothing.
 * `loaders` shares loaders between units of work: every subscriber of a live feed
 * renders one poll's changes through the same ones (`createLiveLoaders`);
 * `onSlowConsumer` is told when a subscription of this context falls too far behind.
 * `signal` is the request's: once its client has gone, its store, loaders and pages
 * start no further call; `rateLimit` is its budget (the cost check charges it).
 */
export function createRequestContext(
  services: Services,
  viewer: Viewer | null,
  options: {
    cache?: boolean;
    deadline?: RequestDeadline;
    signal?: AbortSignal;
    rateLimit?: RequestBudget | null;
    loaders?: Loaders;
    onSlowConsumer?: () => void;
  } = {},
): RequestContext {
  return new RequestScope(services, viewer, options);
}

/** What `createRequestContext` takes besides the services and the viewer. */
type RequestOptions = NonNullable<Parameters<typeof createRequestContext>[2]>;

/**
 * One request's context. Every feature, and what only some of them use (sagas, request
 * ids, the change writer), is made when the request first asks for it, by a getter on
 * the prototype: a page reads through one or two of the six features, and a request
 * pays for no closure per feature.
 */
class RequestScope implements RequestContext {
  startedAhead: StartedAhead[] | null = null;
  readonly viewer: Actor | null;
  readonly loaders: Loaders;
  readonly startedAt = performance.now();
  readonly rateLimit: RequestBudget | null;
  private readonly store: CountingStore;
  private sagaRunner?: SagaRunner;
  private requestIds?: RequestIds;
  private changeWriter?: ChangeWriter;
  private madeDirectory?: Directory;
  private madeUsers?: Users;
  private madeTimeline?: Timeline;
  private madeSuspensions?: Suspensions;
  private madeMeetings?: Meetings;
  private madeLists?: Lists;
  private madeLive?: LiveSubscriptions;
  private madeKeys?: RequestKeys;

  constructor(
    private readonly services: Services,
    viewer: Viewer | null,
    private readonly options: RequestOptions,
  ) {
    // The request's store stops at its deadline (REQUEST_TIMEOUT_MS), when it has one.
    this.store = new CountingStore(services.store, options.deadline, options.signal, services.requestCalls);
    this.loaders = options.loaders ?? createLoaders(this.store, { ...options, counts: countReading(services) });
    this.viewer = viewer && actorOf(viewer, this.loaders.userIdByUsername);
    this.rateLimit = options.rateLimit ?? null;
  }

  private get sagas(): SagaRunner {
    return (this.sagaRunner ??= createSagaRunner(this.services, this.store));
  }

  /** Fresh ids, or an idempotency key's plan while a keyed mutation runs. */
  private get ids(): RequestIds {
    return (this.requestIds ??= new RequestIds());
  }

  private get changes(): ChangeWriter {
    return (this.changeWriter ??= plannedChangeWriter(this.services.changes, this.ids));
  }

  /** What every paging feature is made with: the request's store, codec, signal, viewer and loaders, and the process's kept index lists. */
  private get common() {
    return { store: this.store, codec: this.services.codec, signal: this.options.signal, actor: this.viewer, loaders: this.loaders, rankCache: this.services.rankCache };
  }

  get directory(): Directory {
    const { store, services, options } = this;
    return (this.madeDirectory ??= new Directory({
      store,
      codec: services.codec,
      signal: options.signal,
      actor: this.viewer,
      users: this.loaders.userById,
      sagas: this.sagas,
      logger: services.logger,
      cluster: services.cluster,
      nameSwept: () => services.nameSweeper.progress(),
    }));
  }

  get users(): Users {
    return (this.madeUsers ??= new Users({ store: this.store, actor: this.viewer, loaders: this.loaders, directory: this.directory, clock: this.services.clock, ids: this.ids }));
  }

  get timeline(): Timeline {
    return (this.madeTimeline ??= new Timeline({ ...this.common, changes: this.changes, counts: this.services.counts }));
  }

  get suspensions(): Suspensions {
    const { services } = this;
    const scope = this;
    return (this.madeSuspensions ??= new Suspensions({
      ...this.common,
      // A page writes nothing: the saga runner is made when a suspension is written.
      get sagas() {
        return scope.sagas;
      },
      lock: services.userLock,
      granularity: services.settings.suspensionBucket,
      ids: this.ids,
    }));
  }

  get meetings(): Meetings {
    const { services } = this;
    return (this.madeMeetings ??= new Meetings({
      ...this.common,
      clock: services.clock,
      tokens: services.acceptanceTokens,
      lock: services.acceptanceLock,
      strategy: services.settings.acceptanceStrategy,
      cluster: services.cluster,
      changes: this.changes,
      counts: services.counts,
      countLists: { sparseLists: services.rankedCounts.sparseLists },
      ids: this.ids,
    }));
  }

  get lists(): Lists {
    const { services } = this;
    return (this.madeLists ??= new Lists({
      ...this.common,
      clock: services.clock,
      onAppend: services.onListAppend,
      counts: services.counts,
      ids: this.ids,
    }));
  }

  get live(): LiveSubscriptions {
    return (this.madeLive ??= new LiveSubscriptions({ hub: this.services.live, codec: this.services.codec, onSlowConsumer: this.options.onSlowConsumer }));
  }

  get mutationKeys(): RequestKeys {
    return (this.madeKeys ??= requestKeys(this.services.mutationKeys, this.store, this.ids));
  }

  storeRoundTrips(): number {
    return this.store.roundTrips;
  }

  storeStatements(): number {
    return this.store.statements;
  }
}
