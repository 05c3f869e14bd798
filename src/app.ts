/**
 * The application: the GraphQL server and HTTP over the features the composition root
 * wires. Configuration enters here and flows down.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApolloServer, type ApolloServerPlugin, type BaseContext, type GraphQLRequestListener } from '@apollo/server';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { makeExecutableSchema } from '@graphql-tools/schema';
import type { GraphQLSchema } from 'graphql';
import type { Logger } from 'pino';
import {
  ALL_TABLES,
  createListApplier,
  createLiveLoaders,
  createRequestContext,
  createSagaRunner,
  createMetrics,
  createServices,
  createStore,
  observeStore,
  storeLogging,
  requestCallPermits,
  type Services,
} from './composition-root.js';
import type { Config } from './config.js';
import type { GraphqlCounts, Metrics } from './observability/metrics.js';
import { createTokenVerifier, rememberingVerifier, type RemoteKeyTiming, type Viewer } from './graphql/auth.js';
import type { Loaders } from './graphql/loaders.js';
import type { PollReport } from './live/live-hub.js';
import type { RequestContext } from './graphql/context.js';
import { createFormatError } from './graphql/errors.js';
import { jitResponder, stringifyResult, type JitResponderOptions } from './graphql/jit-executor.js';
import { limitProtections, tokenLimitViolation, type LimitProtections } from './graphql/limits.js';
import { QueryHashes } from './graphql/query-hashes.js';
import { resolvers } from './graphql/resolvers/index.js';
import type { CursorCodec } from './paging/cursor.js';
import { startRecoveryTimer, type RecoveryReport } from './saga/saga-runner.js';
import { withRequestLog } from './transport/request-log.js';
import { demoGlobalIds } from './seed/demo.js';
import { LeaseGuardedStore, Presence } from './background/presence.js';
import { createHttpHandler, type HttpHandlerOptions, type OverloadGuard } from './transport/http-server.js';
import { InFlightGate } from './transport/in-flight-gate.js';
import { clientAddress, principalOf } from './transport/principal.js';
import { RateLimiter, RequestBudget } from './graphql/rate-limit.js';
import { MonotonicClock, type Clock } from './store/clock.js';
import { createLiveServer, type LiveServer } from './transport/ws-server.js';
import type { Store } from './store/port.js';
import type { StoreObserver } from './store/store-observer.js';
import type { Tracing } from './observability/tracing/tracing.js';

/** The SDL, read once from the project root (one level above src/ and dist/). */
export const typeDefs = readFileSync(new URL('../schema.graphql', import.meta.url), 'utf8');

/** The running application. */
export interface App {
  readonly store: Store;
  readonly codec: CursorCodec;
  readonly httpServer: Server;
  readonly services: Services;
  /** Subscriptions over WebSocket, on the HTTP server's `/graphql`. */
  readonly liveServer: LiveServer;
  /** Run one saga recovery pass now (also run at start-up and on a timer). */
  recoverSagas(): Promise<RecoveryReport>;
  /** Listen on the configured host and port; resolves to the bound port. */
  listen(port?: number, host?: string): Promise<number>;
  /** Stop accepting, finish in-flight requests, close the store. */
  close(): Promise<void>;
}

/**
 * The server's one request plugin: the limits' hooks, execution through graphql-jit
 * (`responseForOperation`), and the store round trips of each request in
 * `extensions.storeRoundTrips` (with the statements the adapter sent for them in
 * `extensions.storeStatements`), and, with metrics on, the request counted
 * (`Metrics.graphqlFinished`). One listener object serves every request (its hooks read
 * the request from their argument), so a request costs Apollo one plugin and no
 * allocation here.
 */
function requestPlugin<C extends BaseContext & GraphqlCounts>(
  limits: LimitProtections,
  schema: GraphQLSchema,
  formatError: ReturnType<typeof createFormatError>,
  metrics: Metrics | null,
  tracing: Tracing | undefined,
  rootValue: JitResponderOptions<C>['rootValue'],
): ApolloServerPlugin<C> {
  const execute = jitResponder<C>(schema, { formatError, didEncounterErrors: limits.didEncounterErrors, rootValue });
  const listener: GraphQLRequestListener<C> = {
    didResolveOperation: limits.didResolveOperation,
    didEncounterErrors: limits.didEncounterErrors,
    // With tracing on, each operation runs in a span of its own (its store round trips nest under it).
    responseForOperation: tracing ? tracing.traceOperation(execute) : execute,
    async willSendResponse(ctx) {
      const { response, contextValue } = ctx;
      metrics?.graphqlFinished(ctx);
      if (response.body.kind === 'single') {
        const result = response.body.singleResult;
        result.extensions = {
          ...result.extensions,
          storeRoundTrips: contextValue.storeRoundTrips(),
          storeStatements: contextValue.storeStatements(),
        };
      }
    },
  };
  // One settled promise of the listener for every request: nothing to allocate per request.
  const started = Promise.resolve(listener);
  return { requestDidStart: () => started };
}

/** node:http with the configured timeouts, for `serveGraphql` to answer on. */
export function graphqlHttpServer(config: Config): Server {
  // A slow client cannot hold a connection forever.
  return createServer({ requestTimeout: config.requestTimeoutMs, headersTimeout: Math.min(config.requestTimeoutMs, 20_000) });
}

/** What `serveGraphql` serves with, besides the configuration. */
export interface GraphqlServing<C extends BaseContext & GraphqlCounts> {
  readonly logger: Logger;
  readonly schema: GraphQLSchema;
  readonly limits: LimitProtections;
  readonly formatError: ReturnType<typeof createFormatError>;
  readonly metrics: Metrics | null;
  readonly tracing?: Tracing;
  /** Build one request's context (see `HttpHandlerOptions.contextFor`). */
  readonly contextFor: HttpHandlerOptions<C>['contextFor'];
  readonly readiness: HttpHandlerOptions<C>['readiness'];
  readonly demoIds?: HttpHandlerOptions<C>['demoIds'];
  /** Budgets per principal and load shedding (see `HttpHandlerOptions.overload`). */
  readonly overload?: OverloadGuard;
  /** Plugins besides the server's own, run before its request plugin. */
  readonly plugins?: ApolloServerPlugin<C>[];
  /** Each operation's root value (the application has none; see `JitResponderOptions.rootValue`). */
  readonly rootValue?: JitResponderOptions<C>['rootValue'];
}

/**
 * Start Apollo Server with the product's settings and request plugin, and answer
 * `httpServer`'s requests through the node:http handler: the application serves this
 * way, and so does the benchmarks' Apollo floor (bench/servers/apollo-floor.ts), which
 * must cost what this stack costs.
 */
export async function serveGraphql<C extends BaseContext & GraphqlCounts>(config: Config, httpServer: Server, serving: GraphqlServing<C>): Promise<ApolloServer<C>> {
  const { logger, schema, limits, formatError, metrics } = serving;
  const queryHashes = new QueryHashes();
  const apollo = new ApolloServer<C>({
    // Apollo's plain schema mode; the request plugin executes with graphql-jit.
    schema,
    formatError,
    includeStacktraceInErrorResponses: false,
    introspection: config.introspection,
    // Apollo pretty-prints results by default; clients do not need the whitespace.
    stringifyResult,
    // CSRF prevention (simple, form-like requests refused) is the HTTP handler's
    // `csrfRefusal`: the same rule, decided from the content type it reads anyway.
    csrfPrevention: false,
    // Automatic persisted queries, whose cache also remembers each query text's hash.
    persistedQueries: { cache: queryHashes.forApollo() },
    validationRules: limits.validationRules,
    plugins: [
      ApolloServerPluginLandingPageDisabled(),
      // We set no cache hints; Apollo's cache-control plugin would still visit every field.
      ApolloServerPluginCacheControlDisabled(),
      // Only a federation subgraph traces inline; this schema is not one.
      ApolloServerPluginInlineTraceDisabled(),
      ApolloServerPluginDrainHttpServer({ httpServer }),
      ...(serving.plugins ?? []),
      requestPlugin<C>(limits, schema, formatError, metrics, serving.tracing, serving.rootValue),
    ],
  });
  await apollo.start();
  const handler = createHttpHandler<C>({
    apollo,
    logger,
    bodyLimitBytes: config.bodyLimitBytes,
    playground: config.playground,
    cors: config.corsOrigins,
    demoIds: serving.demoIds,
    checkTokens: (query) => tokenLimitViolation(query, config.limits.tokens),
    maxResponseBytes: config.maxResponseBytes,
    writeTimeoutMs: config.writeTimeoutMs,
    queryHashes,
    requestTimeoutMs: config.requestTimeoutMs,
    readiness: serving.readiness,
    metrics: metrics ? (req, res) => metrics.answer(req, res) : undefined,
    contextFor: serving.contextFor,
    overload: serving.overload,
  });
  const handle = withRequestLog(metrics ? metrics.wrapHttp(handler) : handler, logger);
  httpServer.on('request', (req: IncomingMessage, res: ServerResponse) => void handle(req, res));
  return apollo;
}

/**
 * Wire the application; `store` may be injected (tests pass an in-memory one). With
 * `tracing` (started by `startTracingFromEnv`), operations and store round trips get spans.
 */
export async function createApp(
  config: Config,
  deps: {
    logger: Logger;
    store?: Store;
    clock?: Clock;
    onLivePoll?: (report: PollReport) => void;
    tracing?: Tracing;
    /** How the identity provider's keys are cached (tests shorten jose's defaults). */
    remoteKeys?: RemoteKeyTiming;
    /** The time in ms the presence lease is measured by (`Date.now`; tests move it). */
    now?: () => number;
    /** Told when another process holds this server's clock node (the server exits; see Presence). */
    onPresenceLost?: () => void;
  },
): Promise<App> {
  const { logger } = deps;
  for (const name of config.devSecrets) {
    logger.warn(`${name} is not set: using the development secret. Set it before exposing this server.`);
  }
  const clock = deps.clock ?? new MonotonicClock();
  const metrics = createMetrics(config);
  const configured = deps.store ?? createStore(config, { clock, ...storeLogging(config, logger) });
  // Every caller (requests, sagas, background jobs) sees the store through its observers:
  // the metrics' counters and, with tracing on, a span per round trip.
  const observers: StoreObserver<any>[] = metrics ? [metrics.storeObserver] : [];
  if (deps.tracing) {
    observers.push(
      deps.tracing.storeObserver({ system: config.store, namespace: config.store === 'cassandra' ? config.cassandra.keyspace : config.sqlitePath }),
    );
  }
  const store = observeStore(configured, observers);
  await store.ensureTables(ALL_TABLES);
  const tokenVerifier = createTokenVerifier(config.auth, { maxAgeSeconds: config.maxTokenAgeSeconds, clockSkewMs: config.cluster.clockSkewMs }, { logger, remoteKeys: deps.remoteKeys });
  // Tokens of the shared secrets are remembered until they expire (rememberingVerifier
  // says why). An identity provider's are checked every time: a key it retires must
  // stop verifying once its key set is fetched again.
  const tokens = config.auth.kind === 'shared-secret' ? rememberingVerifier(tokenVerifier) : tokenVerifier;
  // A clock node of our own: unique low timestamp bits, and liveness for saga recovery.
  const presence = await Presence.claim(store, config.instanceId, { logger, now: deps.now, onLost: deps.onPresenceLost });
  if (clock instanceof MonotonicClock) clock.useNode(presence.identity.node);
  presence.start();
  const services = createServices(config, {
    // Every write of this process stops while its presence lease has lapsed (the presence's own go around it).
    store: new LeaseGuardedStore(store, () => presence.holds()),
    logger,
    clock,
    presence,
    onListAppend: config.listApplier ? (listId) => applier.wake(listId) : undefined,
    onLivePoll: deps.onLivePoll,
    metrics,
    // Requests' store calls leave capacity to the background jobs (store/call-permits.ts).
    requestCalls: requestCallPermits(config),
  });
  // The ledger-list applier, started with the server: woken after each append, and on a timer.
  const applier = createListApplier(services);
  if (config.listApplier) applier.start(config.listApplierIntervalMs);
  // Settles connection counts (acceptances among them) once their window is past the
  // clock-skew bound plus the write timeout.
  const verifier = services.countVerifier;
  verifier.start();
  // Sweeps the name index's stale entries once their window has closed.
  services.nameSweeper.start();
  // A pass run now (at start-up, or asked for) reports to the metrics as the timer's do.
  const recoverSagas = async () => {
    const report = await createSagaRunner(services).recover(config.saga.recoveryGraceMs);
    metrics?.recoveryPass(report);
    return report;
  };
  // Sagas a crash left open: roll them forward or back before serving.
  const startup = await recoverSagas();
  if (startup.rolledForward + startup.rolledBack + startup.failed > 0) logger.info(startup, 'saga recovery at start-up');
  const recoveryTimer = startRecoveryTimer(() => createSagaRunner(services), {
    intervalMs: config.saga.recoveryIntervalMs,
    graceMs: config.saga.recoveryGraceMs,
    logger,
    onPass: metrics
      ? (report) => {
          if (report) metrics.recoveryPass(report);
          metrics.backgroundPass('saga_recovery', report !== null);
        }
      : undefined,
  });

  const limits = limitProtections(config.limits, { hideSuggestions: !config.introspection });
  // Budgets per principal and the execution slots, both per process (docs/operations.md, "Overload").
  const limiter = new RateLimiter(config.rateLimit);
  const gate = new InFlightGate(config.inFlight);
  // A request's viewer is read once: for its principal, then for its context.
  const viewers = new WeakMap<IncomingMessage, Promise<Viewer | null>>();
  // Anonymous requests (no header) share one settled promise: no token check, no entry here.
  const anonymous = Promise.resolve(null);
  const viewerOf = (req: IncomingMessage): Promise<Viewer | null> => {
    const header = req.headers.authorization;
    if (header === undefined) return anonymous;
    let viewer = viewers.get(req);
    if (!viewer) {
      viewer = tokens.viewer(header);
      viewers.set(req, viewer);
    }
    return viewer;
  };
  const overload: OverloadGuard = {
    limiter,
    gate,
    // A bad token's request spends its address's budget (its context refuses it anyway).
    principalOf: async (req) => principalOf((await viewerOf(req).catch(() => null))?.username ?? null, clientAddress(req, config.trustProxy)),
  };
  const schema = makeExecutableSchema({ typeDefs, resolvers: resolvers as never });
  const formatError = createFormatError(logger);
  const httpServer = graphqlHttpServer(config);
  // Subscriptions: the same schema, limits and error formatting, over WebSocket.
  const liveLoaders = new WeakMap<object, Loaders>();
  const liveServer = createLiveServer<RequestContext>(httpServer, {
    schema,
    settings: config.live,
    cors: config.corsOrigins,
    logger,
    validationRules: limits.validationRules,
    checkCost: limits.checkCost,
    checkTokens: (query) => tokenLimitViolation(query, config.limits.tokens),
    formatError,
    hideSuggestions: !config.introspection,
    authenticate: (authorization) => tokens.session(authorization),
    contextFor: (viewer, onSlowConsumer) => createRequestContext(services, viewer, { onSlowConsumer }),
    eventContextFor(viewer, batch) {
      // Every subscriber of a feed renders one poll's changes through the same loaders.
      let loaders = liveLoaders.get(batch);
      if (!loaders) liveLoaders.set(batch, (loaders = createLiveLoaders(services)));
      return createRequestContext(services, viewer, { loaders });
    },
    onClosedTooSlow: metrics ? () => metrics.socketClosedTooSlow() : undefined,
    chargeStart: (request, viewer, cost) => void limiter.charge(principalOf(viewer?.username ?? null, clientAddress(request, config.trustProxy)), cost),
  });
  const apollo = await serveGraphql<RequestContext>(config, httpServer, {
    logger,
    schema,
    limits,
    formatError,
    metrics,
    tracing: deps.tracing,
    // Stopping drains the HTTP server, and the WebSocket server with it (Apollo's documented wiring).
    plugins: [{ serverWillStart: async () => ({ drainServer: () => liveServer.close() }) }],
    demoIds: () => demoGlobalIds(store),
    // Ready: this server holds its clock node, the store answers with every declared
    // table and column, and no write time read lately was so far ahead of this clock that
    // a clock must be off (clock-skew.ts).
    readiness: async () => {
      const lapsed = presence.status();
      if (lapsed !== null) return lapsed;
      const missing = await store.checkSchema(ALL_TABLES);
      if (missing.length > 0) return `the store's schema differs from the declarations: ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', …' : ''}`;
      return services.clockSkew.notReadyBecause();
    },
    overload,
    contextFor: async (req, { deadline, signal, principal }) => {
      const viewer = await viewerOf(req);
      // The request's store stops at its deadline (REQUEST_TIMEOUT_MS), and when its client goes away.
      return createRequestContext(services, viewer, {
        deadline: { at: deadline, timeoutMs: config.requestTimeoutMs },
        signal,
        rateLimit: limiter.enabled && principal !== null ? new RequestBudget(limiter, principal) : null,
      });
    },
  });
  metrics?.setSources({
    sagasInFlight: () => services.sagasInFlight.size,
    listApplierLagSeconds: () => applier.lagSeconds(),
    liveSockets: () => liveServer.sockets,
    liveSubscriptions: () => services.live.subscriptions,
    liveFeeds: () => services.live.activeFeeds,
    requestsInFlight: () => gate.executing,
    requestsQueued: () => gate.queued,
    rateLimitPrincipals: () => limiter.tracked,
  });
  // The live hub polls the change log of the feeds subscribed to here.
  services.live.start();

  return {
    store,
    codec: services.codec,
    httpServer,
    services,
    liveServer,
    recoverSagas,
    listen(port = config.port, host = config.host) {
      return new Promise((resolve, reject) => {
        httpServer.once('error', reject);
        httpServer.listen(port, host, () => resolve((httpServer.address() as AddressInfo).port));
      });
    },
    async close() {
      recoveryTimer.stop();
      applier.stop();
      verifier.stop();
      services.nameSweeper.stop();
      presence.stop();
      // Stops taking requests and sockets, closes every socket with 1001, finishes in-flight requests.
      await apollo.stop();
      services.live.stop();
      await store.close();
    },
  };
}
