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
import type { GraphQLRequestContextWillSendResponse } from '@apollo/server';
import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { LATE_PASS_FAMILIES, MetricFamily, type Series } from './metric-families.js';
import type { PollReport } from '../live/live-hub.js';
import type { RecoveryReport } from '../saga/saga-runner.js';
import type { StoreOperation } from '../store/store-decorator.js';
import { LWT_OUTCOMES, STORE_ERROR_KINDS, type StoreObserver, type StoreRoundTrip } from '../store/store-observer.js';

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
  'getInPartition',
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

/** What a GraphQL request's context tells the metrics. */
export interface GraphqlCounts {
  /** `performance.now()` when the context was made (the request's start, for Apollo). */
  readonly startedAt: number;
  storeRoundTrips(): number;
  storeStatements(): number;
}

/** What the gauges read at scrape time (set once the app has built them). */
export interface MetricsSources {
  readonly sagasInFlight?: () => number;
  readonly listApplierLagSeconds?: () => number;
  readonly liveSockets?: () => number;
  readonly liveSubscriptions?: () => number;
  readonly liveFeeds?: () => number;
  /** GraphQL requests executing now, and waiting for a slot (`MAX_IN_FLIGHT`, `MAX_QUEUED`). */
  readonly requestsInFlight?: () => number;
  readonly requestsQueued?: () => number;
  /** Principals with a budget window open in this process. */
  readonly rateLimitPrincipals?: () => number;
}

/** Hash a token so two of any lengths compare in constant time. */
function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** The series a GraphQL request counts into, for one set of label values. */
interface GraphqlSeries {
  readonly requests: Series;
  readonly duration: Series;
  readonly trips: Series;
  readonly statements: Series;
}

/** The metrics of one app. */
export class Metrics {
  /** This app's registry (never prom-client's global one). */
  readonly registry = new Registry();
  private sources: MetricsSources = {};
  private readonly tokenDigest: Buffer | null;
  private readonly names = new Set<string>();
  private openSagas = 0;

  private readonly httpRequests: MetricFamily;
  private readonly httpDuration: MetricFamily;
  private readonly graphqlRequests: MetricFamily;
  private readonly graphqlDuration: MetricFamily;
  private readonly graphqlRoundTrips: MetricFamily;
  private readonly graphqlStatements: MetricFamily;
  private readonly storeDuration: MetricFamily;
  private readonly storeErrors: MetricFamily;
  private readonly storeLwt: MetricFamily;
  private readonly tombstoneWarnings: MetricFamily;
  private readonly sagaRecoveries: MetricFamily;
  private readonly backgroundPasses: MetricFamily;
  private readonly applierDelay: MetricFamily;
  private readonly registryPrunes: MetricFamily;
  private readonly latePassReads: MetricFamily;
  private readonly lateChanges: MetricFamily;
  private readonly clockBeyondBound: Series;
  /** The largest lead beyond the clock-skew bound of the last minute: its size (s) and when. */
  private clockAhead: { seconds: number; at: number } | null = null;
  private readonly livePolls: MetricFamily;
  private readonly liveFeedsPolled: Series;
  private readonly livePollReads: Series;
  private readonly liveDelivered: Series;
  private readonly liveTooSlow: Series;

  /** Per store operation: its round-trip and statement series and its latency series, resolved once. */
  private readonly byOperation: ReadonlyMap<string, { readonly trips: Series; readonly statements: Series; readonly duration: Series }>;
  /** HTTP series by route and status (routes are few; statuses are HTTP's). */
  private readonly httpSeries = new Map<string, { readonly requests: Series; readonly duration: Series }>();
  /** The series of a successful operation, by its (cached, parsed) operation node. */
  private readonly successSeries = new WeakMap<object, GraphqlSeries>();
  /** GraphQL series by their label values. */
  private readonly graphqlSeries = new Map<string, GraphqlSeries>();

  constructor(options: { readonly token: string | null }) {
    this.tokenDigest = options.token ? digest(options.token) : null;
    const r = this.registry;
    const registers = [r];
    collectDefaultMetrics({ register: r });
    const counter = (name: string, help: string, labels: readonly string[] = []) => MetricFamily.counter(r, name, help, labels);
    const histogram = (name: string, help: string, labels: readonly string[], buckets: readonly number[]) => MetricFamily.histogram(r, name, help, labels, buckets);

    this.httpRequests = counter('relay_http_requests_total', 'HTTP requests answered, by route and status code.', ['route', 'status']);
    this.httpDuration = histogram('relay_http_request_duration_seconds', 'Time from an HTTP request to its response, by route.', ['route'], REQUEST_BUCKETS);
    this.graphqlRequests = counter(
      'relay_graphql_requests_total',
      'GraphQL requests over HTTP, by operation name (bounded), type, outcome (success or error) and first error code.',
      ['operation', 'type', 'outcome', 'code'],
    );
    this.graphqlDuration = histogram(
      'relay_graphql_request_duration_seconds',
      'Time Apollo Server took for a GraphQL request (parse to response), by operation name and type.',
      ['operation', 'type'],
      REQUEST_BUCKETS,
    );
    this.graphqlRoundTrips = counter('relay_graphql_store_round_trips_total', 'Store round trips made by GraphQL requests, by operation name.', ['operation']);
    this.graphqlStatements = counter('relay_graphql_store_statements_total', 'Store statements sent for GraphQL requests, by operation name.', ['operation']);

    const trips = counter('relay_store_round_trips_total', 'Store round trips (every caller: requests and background jobs), by store operation.', ['operation']);
    const statements = counter('relay_store_statements_total', 'Statements the store adapter sent, by store operation.', ['operation']);
    this.storeDuration = histogram('relay_store_round_trip_duration_seconds', 'Store round-trip latency, by store operation.', ['operation'], STORE_BUCKETS);
    this.storeErrors = counter('relay_store_errors_total', 'Store round trips that failed, by store operation and kind (unavailable, timeout, invalid, read_failure, other).', ['operation', 'kind']);
    this.storeLwt = counter(
      'relay_store_lwt_total',
      'Lightweight transactions by outcome: applied, not_applied, unknown_settled (response lost, learned by a serial read), unknown_given_up.',
      ['operation', 'outcome'],
    );
    this.tombstoneWarnings = counter('relay_store_tombstone_warnings_total', 'Reads that passed over more tombstones than the warning threshold, by table.', ['table']);
    this.byOperation = new Map(STORE_OPERATIONS.map((op) => [op, { trips: trips.of(op), statements: statements.of(op), duration: this.storeDuration.of(op) }]));
    for (const op of ['insertIfNotExists', 'deleteIf']) for (const outcome of LWT_OUTCOMES) this.storeLwt.of(op, outcome);
    for (const kind of STORE_ERROR_KINDS) this.storeErrors.of('get', kind);

    const self = this;
    new Gauge({ name: 'relay_sagas_in_flight', help: 'Sagas running in this process now.', registers, collect() { this.set(self.sources.sagasInFlight?.() ?? 0); } });
    new Gauge({ name: 'relay_sagas_open', help: 'Open sagas (of every server) the last recovery pass found in the saga log.', registers, collect() { this.set(self.openSagas); } });
    this.sagaRecoveries = counter('relay_saga_recoveries_total', 'Open sagas recovery rolled forward, rolled back, or failed to finish (retried next pass).', ['outcome']);
    for (const outcome of ['forward', 'backward', 'failed']) this.sagaRecoveries.of(outcome);
    this.backgroundPasses = counter('relay_background_passes_total', 'Timer passes of the background jobs (list applier, saga recovery, count verifier, name sweeper), by outcome.', ['job', 'outcome']);
    for (const job of ['list_applier', 'saga_recovery', 'count_verifier', 'name_sweeper']) for (const outcome of ['ok', 'failed']) this.backgroundPasses.of(job, outcome);
    this.latePassReads = counter(LATE_PASS_FAMILIES.reads.name, LATE_PASS_FAMILIES.reads.help, LATE_PASS_FAMILIES.reads.labels);
    this.lateChanges = counter(LATE_PASS_FAMILIES.changes.name, LATE_PASS_FAMILIES.changes.help, LATE_PASS_FAMILIES.changes.labels);
    new Gauge({
      name: 'relay_list_applier_lag_seconds',
      help: 'Age of the oldest list transaction the last applier pass left pending (0: it settled every list it found).',
      registers,
      collect() {
        this.set(self.sources.listApplierLagSeconds?.() ?? 0);
      },
    });
    this.applierDelay = histogram('relay_list_applier_apply_delay_seconds', "Time from a list transaction to its application by this server's applier.", [], LAG_BUCKETS);
    this.applierDelay.of();
    this.registryPrunes = counter('relay_registry_prunes_total', 'Bucket registry prunes, by registry and outcome (pruned: the empty bucket was dropped; kept: it was not empty).', ['registry', 'outcome']);

    this.clockBeyondBound = counter(
      'relay_clock_skew_beyond_bound_total',
      "Write times read further ahead of this server's clock than CLOCK_SKEW_MS (this clock or another server's is off).",
    ).of();
    new Gauge({
      name: 'relay_clock_ahead_max_seconds',
      help: "The largest lead beyond CLOCK_SKEW_MS of a write time read over this server's clock in the last minute (0: none).",
      registers,
      collect() {
        const seen = self.clockAhead;
        this.set(seen && Date.now() - seen.at <= 60_000 ? seen.seconds : 0);
      },
    });

    new Gauge({ name: 'relay_requests_in_flight', help: 'GraphQL requests executing on this server now (at most MAX_IN_FLIGHT).', registers, collect() { this.set(self.sources.requestsInFlight?.() ?? 0); } });
    new Gauge({ name: 'relay_requests_queued', help: 'GraphQL requests waiting for a slot on this server now (at most MAX_QUEUED).', registers, collect() { this.set(self.sources.requestsQueued?.() ?? 0); } });
    new Gauge({ name: 'relay_rate_limit_principals', help: 'Principals (users, anonymous addresses) with a budget window open on this server.', registers, collect() { this.set(self.sources.rateLimitPrincipals?.() ?? 0); } });
    new Gauge({ name: 'relay_live_sockets', help: 'WebSocket connections open on this server.', registers, collect() { this.set(self.sources.liveSockets?.() ?? 0); } });
    new Gauge({ name: 'relay_live_subscriptions', help: 'Subscriptions active on this server.', registers, collect() { this.set(self.sources.liveSubscriptions?.() ?? 0); } });
    new Gauge({ name: 'relay_live_feeds', help: 'Feeds with a subscriber on this server (each polled once per LIVE_POLL_MS).', registers, collect() { this.set(self.sources.liveFeeds?.() ?? 0); } });
    this.livePolls = counter('relay_live_polls_total', 'Polls of the change log, by layout read (feeds or shards).', ['mode']);
    this.liveFeedsPolled = counter('relay_live_feeds_polled_total', 'Feeds polled, summed over polls.').of();
    this.livePollReads = counter('relay_live_poll_reads_total', 'Store reads the live polls made.').of();
    this.liveDelivered = counter('relay_live_changes_delivered_total', 'Changes delivered to subscribers (one per subscriber).').of();
    this.liveTooSlow = counter('relay_live_sockets_closed_too_slow_total', 'Sockets closed because their reader did not keep up (send buffer or queue full).').of();
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
        series.trips.value++;
        series.statements.value += trip.statements;
        this.storeDuration.observe(series.duration, trip.durationSeconds);
      }
      if (trip.errorKind !== null) this.storeErrors.of(trip.operation, trip.errorKind).value++;
      if (trip.lwt !== null) this.storeLwt.of(trip.operation, trip.lwt).value++;
      if (trip.tombstoneWarnings > 0) this.tombstoneWarnings.of(trip.table ?? 'none').value += trip.tombstoneWarnings;
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
   * A GraphQL request is answered: count it under its operation, outcome and code, with
   * its latency (from its context's `startedAt`) and store costs. Called from the app's
   * one request plugin (a plugin of its own would cost Apollo a listener per request).
   */
  graphqlFinished<C extends GraphqlCounts>(ctx: GraphQLRequestContextWillSendResponse<C>): void {
    const body = ctx.response.body;
    const errors = body.kind === 'single' ? body.singleResult.errors : body.initialResult.errors;
    // The common case, a success of a document Apollo has parsed before: its operation node
    // is the cached document's own, so its series are found without building a key.
    const node = ctx.operation;
    let series = node !== undefined && !errors?.length ? this.successSeries.get(node) : undefined;
    if (series === undefined) {
      series = this.seriesOf(ctx, errors);
      if (node !== undefined && !errors?.length) this.successSeries.set(node, series);
    }
    series.requests.value++;
    const context = ctx.contextValue;
    this.graphqlDuration.observe(series.duration, (performance.now() - context.startedAt) / 1000);
    series.trips.value += context.storeRoundTrips();
    series.statements.value += context.storeStatements();
  }

  /** The series of a request's labels (its operation name bounded, its outcome and first code). */
  private seriesOf<C extends GraphqlCounts>(ctx: GraphQLRequestContextWillSendResponse<C>, errors: ReadonlyArray<{ extensions?: Record<string, unknown> }> | undefined): GraphqlSeries {
    const resolved = ctx.operation !== undefined;
    const operation = this.operationLabel(ctx.operationName ?? ctx.operation?.name?.value, resolved);
    const type = ctx.operation?.operation ?? 'unknown';
    const outcome = errors && errors.length > 0 ? 'error' : 'success';
    const code = errors && errors.length > 0 ? String(errors[0]!.extensions?.code ?? 'INTERNAL_SERVER_ERROR') : 'none';
    const key = `${operation}\u0000${type}\u0000${outcome}\u0000${code}`;
    let series = this.graphqlSeries.get(key);
    if (!series) {
      series = {
        requests: this.graphqlRequests.of(operation, type, outcome, code),
        duration: this.graphqlDuration.of(operation, type),
        trips: this.graphqlRoundTrips.of(operation),
        statements: this.graphqlStatements.of(operation),
      };
      this.graphqlSeries.set(key, series);
    }
    return series;
  }

  /** Wrap the HTTP handler: each response counted by route and status, and timed. */
  wrapHttp<R>(handler: (req: IncomingMessage, res: ServerResponse) => R): (req: IncomingMessage, res: ServerResponse) => R {
    return (req, res) => {
      const started = performance.now();
      res.once('finish', () => {
        const path = req.url === '/graphql' ? '/graphql' : (req.url ?? '/').split('?', 1)[0]!;
        const route = ROUTES.has(path) ? path : 'other';
        const key = `${route} ${res.statusCode}`;
        let series = this.httpSeries.get(key);
        if (!series) {
          series = { requests: this.httpRequests.of(route, String(res.statusCode)), duration: this.httpDuration.of(route) };
          this.httpSeries.set(key, series);
        }
        series.requests.value++;
        this.httpDuration.observe(series.duration, (performance.now() - started) / 1000);
      });
      return handler(req, res);
    };
  }

  /** A saga recovery pass finished (the timer's or the one at start-up). */
  recoveryPass(report: RecoveryReport): void {
    this.openSagas = report.rolledForward + report.rolledBack + report.failed + report.skipped;
    this.sagaRecoveries.of('forward').value += report.rolledForward;
    this.sagaRecoveries.of('backward').value += report.rolledBack;
    this.sagaRecoveries.of('failed').value += report.failed;
  }

  /** A background job's timer pass finished. */
  backgroundPass(job: BackgroundJob, ok: boolean): void {
    this.backgroundPasses.of(job, ok ? 'ok' : 'failed').value++;
  }

  /** A trailing pass of `component` over the last `horizonMs` made `reads` store reads and found `late` late writes. */
  latePass(component: string, report: { readonly horizonMs: number; readonly reads: number; readonly late: number }): void {
    this.latePassReads.of(component, String(Math.round(report.horizonMs / 1000))).value += report.reads;
    this.lateChanges.of(component).value += report.late;
  }

  /** The list applier applied a transaction made `delaySeconds` ago. */
  listTransactionApplied(delaySeconds: number): void {
    this.applierDelay.observe(this.applierDelay.of(), Math.max(0, delaySeconds));
  }

  /** A bucket registry prune finished. */
  registryPrune(registry: string, outcome: 'pruned' | 'kept'): void {
    this.registryPrunes.of(registry, outcome).value++;
  }

  /** A write time was read `aheadMs` ahead of this server's clock, beyond CLOCK_SKEW_MS (observability/clock-skew.ts). */
  clockAheadBeyondBound(aheadMs: number): void {
    this.clockBeyondBound.value++;
    const now = Date.now();
    const seconds = aheadMs / 1000;
    if (!this.clockAhead || now - this.clockAhead.at > 60_000 || seconds >= this.clockAhead.seconds) this.clockAhead = { seconds, at: now };
  }

  /** A live poll finished. */
  livePoll(report: PollReport): void {
    this.livePolls.of(report.mode).value++;
    this.liveFeedsPolled.value += report.feeds;
    this.livePollReads.value += report.reads;
    this.liveDelivered.value += report.delivered;
  }

  /** A socket was closed because its reader did not keep up. */
  socketClosedTooSlow(): void {
    this.liveTooSlow.value++;
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
