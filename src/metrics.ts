/**
 * Prometheus metrics (`METRICS=true`): one `prom-client` Registry per app (several apps
 * in one test process never share a series), filled by
 *
 * - the HTTP handler (requests by route and status, latency),
 * - an Apollo plugin (GraphQL requests by operation name, outcome and error code,
 *   latency, and the store round trips and statements each one cost),
 * - a store observer (every round trip by operation: statements, latency, errors by
 *   kind, lightweight-transaction outcomes, tombstone warnings),
 * - the background jobs' hooks (passes, saga recoveries, list applier lag, registry
 *   prunes) and the live side's (sockets, subscriptions, polls, deliveries, slow
 *   sockets closed), read at scrape time where a gauge is a count the app already keeps,
 * - `collectDefaultMetrics` (the Node process).
 *
 * Operation names come from clients, so they are bounded: anonymous operations, requests
 * that never resolved an operation, and every name beyond the first
 * `OPERATION_NAME_CAP` distinct ones share a label each.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApolloServerPlugin, GraphQLRequestContextWillSendResponse, GraphQLRequestListener } from '@apollo/server';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { PollReport } from './live/live-hub.js';
import type { RecoveryReport } from './saga/saga-runner.js';
import type { StoreOperation } from './store/store-decorator.js';
import { LWT_OUTCOMES, STORE_ERROR_KINDS, type StoreObserver, type StoreRoundTrip } from './store/store-observer.js';

/** Distinct client operation names that get a label of their own; later ones share `OTHER_OPERATION`. */
export const OPERATION_NAME_CAP = 100;
/** The label of operation names beyond the cap. */
export const OTHER_OPERATION = '__other';
/** The label of operations without a name. */
export const ANONYMOUS_OPERATION = '__anonymous';
/** The label of requests refused before an operation was resolved (unparsable, invalid, too large). */
export const INVALID_OPERATION = '__invalid';

/** Routes with a label of their own; every other path is `other`. */
const ROUTES = new Set(['/graphql', '/healthz', '/livez', '/readyz', '/metrics']);

/** Every store operation, so each has its series from the first scrape. */
const STORE_OPERATIONS: readonly StoreOperation[] = [
  'get',
  'getMany',
  'slice',
  'scan',
  'readCells',
  'upsert',
  'delete',
  'deleteRange',
  'increment',
  'insertIfNotExists',
  'deleteIf',
  'batch',
  'ping',
  'checkSchema',
];

/** Background jobs whose passes are counted. */
export type BackgroundJob = 'list_applier' | 'saga_recovery' | 'count_verifier' | 'name_sweeper';

/** Latency buckets of a request (seconds). */
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Latency buckets of a store round trip (seconds): an embedded read takes tens of microseconds. */
const STORE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
/** Delay buckets of the list applier (seconds). */
const LAG_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** What the gauges read at scrape time (set once the app has built them). */
export interface MetricsSources {
  readonly sagasInFlight?: () => number;
  readonly listApplierLagSeconds?: () => number;
  readonly liveSockets?: () => number;
  readonly liveSubscriptions?: () => number;
  readonly liveFeeds?: () => number;
}

type Child<T> = { inc(value?: number): void } & T;

/** Hash a token so two of any lengths compare in constant time. */
function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** The metrics of one app. */
export class Metrics {
  /** This app's registry (never prom-client's global one). */
  readonly registry = new Registry();
  private sources: MetricsSources = {};
  private readonly tokenDigest: Buffer | null;
  private readonly names = new Set<string>();

  private readonly httpRequests: Counter<'route' | 'status'>;
  private readonly httpDuration: Histogram<'route'>;
  private readonly graphqlRequests: Counter<'operation' | 'type' | 'outcome' | 'code'>;
  private readonly graphqlDuration: Histogram<'operation' | 'type'>;
  private readonly graphqlRoundTrips: Counter<'operation'>;
  private readonly graphqlStatements: Counter<'operation'>;
  private readonly storeErrors: Counter<'operation' | 'kind'>;
  private readonly storeLwt: Counter<'operation' | 'outcome'>;
  private readonly tombstoneWarnings: Counter<'table'>;
  private readonly sagaRecoveries: Counter<'outcome'>;
  private readonly backgroundPasses: Counter<'job' | 'outcome'>;
  private readonly applierDelay: Histogram;
  private readonly registryPrunes: Counter<'registry' | 'outcome'>;
  private readonly livePolls: Counter<'mode'>;
  private readonly liveFeedsPolled: Counter;
  private readonly livePollReads: Counter;
  private readonly liveDelivered: Counter;
  private readonly liveTooSlow: Counter;
  private openSagas = 0;

  /** Per store operation: its round-trip and statement counters and its latency histogram, resolved once. */
  private readonly byOperation: ReadonlyMap<
    string,
    { readonly trips: Child<object>; readonly statements: Child<object>; readonly duration: { observe(v: number): void } }
  >;
  /** GraphQL children by their label values, resolved once each. */
  private readonly graphqlChildren = new Map<
    string,
    { readonly requests: Child<object>; readonly duration: { observe(v: number): void }; readonly trips: Child<object>; readonly statements: Child<object> }
  >();

  constructor(options: { readonly token: string | null }) {
    this.tokenDigest = options.token ? digest(options.token) : null;
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });

    this.httpRequests = new Counter({ name: 'relay_http_requests_total', help: 'HTTP requests answered, by route and status code.', labelNames: ['route', 'status'], registers });
    this.httpDuration = new Histogram({ name: 'relay_http_request_duration_seconds', help: 'Time from an HTTP request to its response, by route.', labelNames: ['route'], buckets: REQUEST_BUCKETS, registers });
    this.graphqlRequests = new Counter({
      name: 'relay_graphql_requests_total',
      help: 'GraphQL requests over HTTP, by operation name (bounded), type, outcome (success or error) and first error code.',
      labelNames: ['operation', 'type', 'outcome', 'code'],
      registers,
    });
    this.graphqlDuration = new Histogram({
      name: 'relay_graphql_request_duration_seconds',
      help: 'Time Apollo Server took for a GraphQL request (parse to response), by operation name and type.',
      labelNames: ['operation', 'type'],
      buckets: REQUEST_BUCKETS,
      registers,
    });
    this.graphqlRoundTrips = new Counter({ name: 'relay_graphql_store_round_trips_total', help: 'Store round trips made by GraphQL requests, by operation name.', labelNames: ['operation'], registers });
    this.graphqlStatements = new Counter({ name: 'relay_graphql_store_statements_total', help: 'Store statements sent for GraphQL requests, by operation name.', labelNames: ['operation'], registers });

    const trips = new Counter({ name: 'relay_store_round_trips_total', help: 'Store round trips (every caller: requests and background jobs), by store operation.', labelNames: ['operation'], registers });
    const statements = new Counter({ name: 'relay_store_statements_total', help: 'Statements the store adapter sent, by store operation.', labelNames: ['operation'], registers });
    const duration = new Histogram({ name: 'relay_store_round_trip_duration_seconds', help: 'Store round-trip latency, by store operation.', labelNames: ['operation'], buckets: STORE_BUCKETS, registers });
    this.storeErrors = new Counter({ name: 'relay_store_errors_total', help: 'Store round trips that failed, by store operation and kind (unavailable, timeout, invalid, read_failure, other).', labelNames: ['operation', 'kind'], registers });
    this.storeLwt = new Counter({
      name: 'relay_store_lwt_total',
      help: 'Lightweight transactions by outcome: applied, not_applied, unknown_settled (response lost, learned by a serial read), unknown_given_up.',
      labelNames: ['operation', 'outcome'],
      registers,
    });
    this.tombstoneWarnings = new Counter({ name: 'relay_store_tombstone_warnings_total', help: 'Reads that passed over more tombstones than the warning threshold, by table.', labelNames: ['table'], registers });
    this.byOperation = new Map(STORE_OPERATIONS.map((op) => [op, { trips: trips.labels(op), statements: statements.labels(op), duration: duration.labels(op) }]));
    for (const op of ['insertIfNotExists', 'deleteIf']) for (const outcome of LWT_OUTCOMES) this.storeLwt.labels(op, outcome).inc(0);
    for (const kind of STORE_ERROR_KINDS) this.storeErrors.labels('get', kind).inc(0);

    const self = this;
    new Gauge({ name: 'relay_sagas_in_flight', help: 'Sagas running in this process now.', registers, collect() { this.set(self.sources.sagasInFlight?.() ?? 0); } });
    new Gauge({ name: 'relay_sagas_open', help: 'Open sagas (of every server) the last recovery pass found in the saga log.', registers, collect() { this.set(self.openSagas); } });
    this.sagaRecoveries = new Counter({ name: 'relay_saga_recoveries_total', help: 'Open sagas recovery rolled forward, rolled back, or failed to finish (retried next pass).', labelNames: ['outcome'], registers });
    for (const outcome of ['forward', 'backward', 'failed']) this.sagaRecoveries.labels(outcome).inc(0);
    this.backgroundPasses = new Counter({ name: 'relay_background_passes_total', help: 'Timer passes of the background jobs (list applier, saga recovery, count verifier, name sweeper), by outcome.', labelNames: ['job', 'outcome'], registers });
    for (const job of ['list_applier', 'saga_recovery', 'count_verifier', 'name_sweeper']) for (const outcome of ['ok', 'failed']) this.backgroundPasses.labels(job, outcome).inc(0);
    new Gauge({
      name: 'relay_list_applier_lag_seconds',
      help: 'Age of the oldest list transaction the last applier pass left pending (0: it settled every list it found).',
      registers,
      collect() {
        this.set(self.sources.listApplierLagSeconds?.() ?? 0);
      },
    });
    this.applierDelay = new Histogram({ name: 'relay_list_applier_apply_delay_seconds', help: 'Time from a list transaction to its application by this server\'s applier.', buckets: LAG_BUCKETS, registers });
    this.registryPrunes = new Counter({ name: 'relay_registry_prunes_total', help: 'Bucket registry prunes, by registry and outcome (pruned: the empty bucket was dropped; kept: it was not empty).', labelNames: ['registry', 'outcome'], registers });

    new Gauge({ name: 'relay_live_sockets', help: 'WebSocket connections open on this server.', registers, collect() { this.set(self.sources.liveSockets?.() ?? 0); } });
    new Gauge({ name: 'relay_live_subscriptions', help: 'Subscriptions active on this server.', registers, collect() { this.set(self.sources.liveSubscriptions?.() ?? 0); } });
    new Gauge({ name: 'relay_live_feeds', help: 'Feeds with a subscriber on this server (each polled once per LIVE_POLL_MS).', registers, collect() { this.set(self.sources.liveFeeds?.() ?? 0); } });
    this.livePolls = new Counter({ name: 'relay_live_polls_total', help: 'Polls of the change log, by layout read (feeds or shards).', labelNames: ['mode'], registers });
    this.liveFeedsPolled = new Counter({ name: 'relay_live_feeds_polled_total', help: 'Feeds polled, summed over polls.', registers });
    this.livePollReads = new Counter({ name: 'relay_live_poll_reads_total', help: 'Store reads the live polls made.', registers });
    this.liveDelivered = new Counter({ name: 'relay_live_changes_delivered_total', help: 'Changes delivered to subscribers (one per subscriber).', registers });
    this.liveTooSlow = new Counter({ name: 'relay_live_sockets_closed_too_slow_total', help: 'Sockets closed because their reader did not keep up (send buffer or queue full).', registers });
  }

  /** Tell the gauges where to read (once the app has built what they count). */
  setSources(sources: MetricsSources): void {
    this.sources = { ...this.sources, ...sources };
  }

  /** The store observer that feeds the store series. */
  readonly storeObserver: StoreObserver = {
    finished: (trip: StoreRoundTrip) => {
      const series = this.byOperation.get(trip.operation);
      if (series) {
        series.trips.inc();
        series.statements.inc(trip.statements);
        series.duration.observe(trip.durationSeconds);
      }
      if (trip.errorKind !== null) this.storeErrors.labels(trip.operation, trip.errorKind).inc();
      if (trip.lwt !== null) this.storeLwt.labels(trip.operation, trip.lwt).inc();
      if (trip.tombstoneWarnings > 0) this.tombstoneWarnings.labels(trip.table ?? 'none').inc(trip.tombstoneWarnings);
    },
  };

  /** The label of a client's operation name: its own for the first OPERATION_NAME_CAP names, else shared. */
  operationLabel(name: string | null | undefined, resolved: boolean): string {
    if (!resolved) return INVALID_OPERATION;
    if (!name) return ANONYMOUS_OPERATION;
    if (this.names.has(name)) return name;
    if (this.names.size >= OPERATION_NAME_CAP) return OTHER_OPERATION;
    this.names.add(name);
    return name;
  }

  /**
   * The Apollo plugin: one listener per request (its start time), told the operation
   * and the outcome when the response is sent.
   */
  graphqlPlugin<C extends { storeRoundTrips(): number; storeStatements(): number }>(): ApolloServerPlugin<C> {
    return {
      requestDidStart: async () => {
        const started = performance.now();
        const listener: GraphQLRequestListener<C> = {
          willSendResponse: async (ctx) => this.graphqlFinished(ctx, (performance.now() - started) / 1000),
        };
        return listener;
      },
    };
  }

  private graphqlFinished<C extends { storeRoundTrips(): number; storeStatements(): number }>(
    ctx: GraphQLRequestContextWillSendResponse<C>,
    seconds: number,
  ): void {
    const resolved = ctx.operation !== undefined;
    const operation = this.operationLabel(ctx.operationName ?? ctx.operation?.name?.value, resolved);
    const type = ctx.operation?.operation ?? 'unknown';
    const body = ctx.response.body;
    const errors = body.kind === 'single' ? body.singleResult.errors : body.initialResult.errors;
    const outcome = errors && errors.length > 0 ? 'error' : 'success';
    const code = errors && errors.length > 0 ? String(errors[0]!.extensions?.code ?? 'INTERNAL_SERVER_ERROR') : 'none';
    const key = `${operation}\u0000${type}\u0000${outcome}\u0000${code}`;
    let children = this.graphqlChildren.get(key);
    if (!children) {
      children = {
        requests: this.graphqlRequests.labels(operation, type, outcome, code),
        duration: this.graphqlDuration.labels(operation, type),
        trips: this.graphqlRoundTrips.labels(operation),
        statements: this.graphqlStatements.labels(operation),
      };
      this.graphqlChildren.set(key, children);
    }
    children.requests.inc();
    children.duration.observe(seconds);
    // A request refused before its context was built has no counts.
    const context = ctx.contextValue as Partial<C> | undefined;
    if (typeof context?.storeRoundTrips === 'function') {
      children.trips.inc(context.storeRoundTrips());
      children.statements.inc(context.storeStatements!());
    }
  }

  /** Wrap the HTTP handler: each response counted by route and status, and timed. */
  wrapHttp<R>(handler: (req: IncomingMessage, res: ServerResponse) => R): (req: IncomingMessage, res: ServerResponse) => R {
    return (req, res) => {
      const started = performance.now();
      res.once('finish', () => {
        const path = req.url === '/graphql' ? '/graphql' : (req.url ?? '/').split('?', 1)[0]!;
        const route = ROUTES.has(path) ? path : 'other';
        this.httpRequests.labels(route, String(res.statusCode)).inc();
        this.httpDuration.labels(route).observe((performance.now() - started) / 1000);
      });
      return handler(req, res);
    };
  }

  /** A saga recovery pass finished (the timer's or the one at start-up). */
  recoveryPass(report: RecoveryReport): void {
    this.openSagas = report.rolledForward + report.rolledBack + report.failed + report.skipped;
    this.sagaRecoveries.labels('forward').inc(report.rolledForward);
    this.sagaRecoveries.labels('backward').inc(report.rolledBack);
    this.sagaRecoveries.labels('failed').inc(report.failed);
  }

  /** A background job's timer pass finished. */
  backgroundPass(job: BackgroundJob, ok: boolean): void {
    this.backgroundPasses.labels(job, ok ? 'ok' : 'failed').inc();
  }

  /** The list applier applied a transaction made `delaySeconds` ago. */
  listTransactionApplied(delaySeconds: number): void {
    this.applierDelay.observe(Math.max(0, delaySeconds));
  }

  /** A bucket registry prune finished. */
  registryPrune(registry: string, outcome: 'pruned' | 'kept'): void {
    this.registryPrunes.labels(registry, outcome).inc();
  }

  /** A live poll finished. */
  livePoll(report: PollReport): void {
    this.livePolls.labels(report.mode).inc();
    this.liveFeedsPolled.inc(report.feeds);
    this.livePollReads.inc(report.reads);
    this.liveDelivered.inc(report.delivered);
  }

  /** A socket was closed because its reader did not keep up. */
  socketClosedTooSlow(): void {
    this.liveTooSlow.inc();
  }

  /** Whether a request carries the token (always, when none is configured). */
  authorized(authorization: string | undefined): boolean {
    if (this.tokenDigest === null) return true;
    const match = /^Bearer\s+(.+)$/i.exec(authorization ?? '');
    // Compared as digests: constant time whatever the lengths.
    return match !== null && timingSafeEqual(digest(match[1]!.trim()), this.tokenDigest);
  }

  /** Answer `GET /metrics`: the text format, or 401 without the token. */
  async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!this.authorized(req.headers.authorization)) {
      const body = 'a bearer token is required (METRICS_TOKEN)\n';
      res.writeHead(401, { 'content-type': 'text/plain; charset=utf-8', 'www-authenticate': 'Bearer realm="metrics"', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-length': 0 });
      res.end();
      return;
    }
    const text = await this.registry.metrics();
    res.writeHead(200, { 'content-type': this.registry.contentType, 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : text);
  }
}
