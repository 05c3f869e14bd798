/**
 * Subscriptions over WebSocket: graphql-ws (protocol `graphql-transport-ws`) on the `ws`
 * package, sharing the HTTP server and its `/graphql` path with Apollo Server, which
 * keeps answering queries and mutations. One schema serves both; a subscription passes
 * the same token, depth, alias, directive and cost limits, and its errors the same
 * masking and codes, as an HTTP request.
 *
 * The transport is graphql-ws's own `makeServer` over `ws`, wired here rather than with
 * its `useServer` helper so the server can hold the limits an operator needs: sockets
 * per server (the upgrade is refused with 503), subscriptions per socket (that
 * subscription gets TOO_MANY_SUBSCRIPTIONS), the `connection_init` wait (4408), the
 * message size (1009), and a slow consumer, whose socket is closed with 1013 once its
 * send buffer or its queue of changes passes the bound, so its memory stays bounded.
 * Each change is sent only after the one before it left for the network, so a reader
 * that does not read holds back its own subscriptions, and nobody else's.
 *
 * Authentication: `connection_init`'s payload carries `Authorization: Bearer <JWT>`
 * (any case of the name); without one the socket is anonymous, a bad or expired one
 * closes it with 4403 (graphql-ws' Forbidden) and the reason, and the
 * socket is closed with 4403 when its token expires (the client reconnects with a new
 * one and resumes with its last cursor). Browser origins follow CORS_ORIGINS, as for
 * HTTP; a page of this server's own origin (the playground) is always let in, as a
 * same-origin request needs no CORS. Closing the server closes every socket with 1001: clients resume elsewhere.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  GraphQLError,
  createSourceEventStream,
  execute,
  getOperationAST,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLFormattedError,
  type GraphQLSchema,
  type ValidationRule,
} from 'graphql';
import { CloseCode, handleProtocols, makeServer, type Context } from 'graphql-ws';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import type { CorsOrigins, LiveSettings } from '../config.js';
import { allows } from './cors.js';
import type { Session, Viewer } from '../graphql/auth.js';
import type { LimitProtections } from '../graphql/limits.js';
import { operationResolutionMessage } from '../graphql/operation-guard.js';
import type { Delivery } from '../live/live-hub.js';

/** Close codes this server uses beyond graphql-ws's own. */
export const LIVE_CLOSE_CODES = Object.freeze({
  /** The server is shutting down: reconnect (to another server) and resume. */
  goingAway: 1001,
  /** The client does not read fast enough: its buffer or queue passed the bound. */
  tooSlow: 1013,
  /** The socket's token expired: reconnect with a new one. */
  tokenExpired: 4403,
  /** The token at `connection_init` was refused (graphql-ws' `CloseCode.Forbidden`). */
  forbidden: CloseCode.Forbidden,
});

/** Longest reason a WebSocket close frame carries, in bytes. */
const MAX_CLOSE_REASON_BYTES = 123;

/** `reason`, cut to what a close frame carries (ending in "…" when cut). */
export function closeReason(reason: string): string {
  if (Buffer.byteLength(reason) <= MAX_CLOSE_REASON_BYTES) return reason;
  let cut = reason;
  while (Buffer.byteLength(`${cut}…`) > MAX_CLOSE_REASON_BYTES) cut = cut.slice(0, -1);
  return `${cut}…`;
}

/** What the WebSocket side needs. */
export interface LiveServerOptions<C> {
  readonly schema: GraphQLSchema;
  readonly settings: LiveSettings;
  readonly cors: CorsOrigins;
  readonly logger: Logger;
  /** Validation rules beyond graphql's own (the depth, alias and directive limits). */
  readonly validationRules: readonly ValidationRule[];
  readonly checkCost: LimitProtections['checkCost'];
  /** Refuse a query before parsing when it breaks the token limit (message) or not (null). */
  readonly checkTokens: (query: unknown) => string | null;
  /** The HTTP path's error formatting: codes kept, the unexpected masked and logged. */
  readonly formatError: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;
  /** Hide "Did you mean …?" from validation messages (introspection off). */
  readonly hideSuggestions: boolean;
  /** The session an Authorization value names (null: none); throws for a bad token. */
  readonly authenticate: (authorization: string) => Promise<Session | null>;
  /** The context a subscription is set up in; `onSlowConsumer` closes its socket. */
  readonly contextFor: (viewer: Viewer | null, onSlowConsumer: () => void) => C;
  /** The context one change is rendered in: per-read state is shared through `batch`. */
  readonly eventContextFor: (viewer: Viewer | null, batch: object) => C;
  /** Told each socket closed because its reader did not keep up (metrics). */
  readonly onClosedTooSlow?: () => void;
  /**
   * Charge a subscription's start (its query cost) to its caller's budget; throws
   * `RATE_LIMITED` over it. The changes it delivers cost nothing.
   */
  readonly chargeStart?: (request: IncomingMessage, viewer: Viewer | null, cost: number) => void;
}

/** The running WebSocket side. */
export interface LiveServer {
  /** Sockets open now. */
  readonly sockets: number;
  /** Refuse new sockets, close the open ones with 1001, and stop. */
  close(): Promise<void>;
}

/** What graphql-ws keeps of one socket. */
interface SocketExtra {
  readonly socket: WebSocket;
  readonly request: IncomingMessage;
  session: Session | null;
}

/** Longest a timer may wait in Node (about 24.8 days); longer waits are re-armed. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** How often an idle socket is pinged; one that does not answer within this is dropped. */
const KEEP_ALIVE_MS = 12_000;
/** Query texts whose parse and validation are remembered (the oldest go first). */
const DOCUMENT_CACHE_SIZE = 1_000;
/** How long closing waits for sockets to close before terminating them. */
const CLOSE_GRACE_MS = 2_000;

/** Answer an upgrade request with a plain HTTP refusal. */
function refuse(socket: Duplex, status: number, reason: string, message: string): void {
  const body = `${message}\n`;
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

/**
 * Whether a browser's `Origin` is the server's own (the host the request was sent to):
 * a page this server served, such as the playground. A page elsewhere cannot forge its
 * Origin, so this lets in no other site.
 */
function sameOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  try {
    return new URL(origin).host === host.toLowerCase();
  } catch {
    return false;
  }
}

/** A GraphQL error with a code, as the HTTP path would send it. */
function codedError(code: string, message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code } });
}

/** Call `fire` at epoch ms `at`, however far ahead (timers wait at most MAX_TIMER_MS). */
function at(when: number, fire: () => void): { clear(): void } {
  let timer: NodeJS.Timeout;
  const arm = () => {
    const wait = when - Date.now();
    timer = wait > MAX_TIMER_MS ? setTimeout(arm, MAX_TIMER_MS) : setTimeout(fire, Math.max(0, wait));
    timer.unref();
  };
  arm();
  return { clear: () => clearTimeout(timer) };
}

/**
 * Each delivery rendered by executing the operation with it as the root value, in the
 * context `contextOf` gives it; closing the result closes the subscription at once,
 * even while it waits for the next change (an async generator would wait for it).
 */
function renderEach<T>(
  source: AsyncIterableIterator<Delivery>,
  render: (delivery: Delivery) => Promise<T>,
): AsyncIterableIterator<T> & { return(): Promise<IteratorResult<T>> } {
  const done = { done: true, value: undefined } as IteratorResult<T>;
  return {
    async next() {
      const result = await source.next();
      return result.done ? done : { done: false, value: await render(result.value) };
    },
    async return() {
      await source.return?.();
      return done;
    },
    async throw(err: unknown) {
      await source.return?.();
      throw err;
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/** Serve subscriptions on `httpServer`'s `/graphql` (see the file comment). */
export function createLiveServer<C extends object>(httpServer: Server, options: LiveServerOptions<C>): LiveServer {
  const { settings, logger, schema } = options;
  const sockets = new Set<WebSocket>();
  const viewers = new WeakMap<object, Viewer | null>();
  /** Each change's rendered results, per poll of its feed (`Delivery.batch`), by change, position and operation. */
  const renders = new WeakMap<object, Map<string, Promise<ExecutionResult>>>();
  /** A small number per distinct document (the cached documents are shared). */
  const documentIds = new WeakMap<DocumentNode, number>();
  const documentId = (document: DocumentNode): number => {
    let id = documentIds.get(document);
    if (id === undefined) documentIds.set(document, (id = nextDocumentId++));
    return id;
  };
  let nextDocumentId = 0;
  let stopping = false;
  const wss = new WebSocketServer({ noServer: true, maxPayload: settings.maxMessageBytes, handleProtocols, perMessageDeflate: false });
  const rules = [...specifiedRules, ...options.validationRules];
  const formatAll = (errors: readonly GraphQLError[]) =>
    errors.map((e) => {
      const formatted = options.formatError(e.toJSON(), e);
      return options.hideSuggestions ? { ...formatted, message: formatted.message.replace(/ ?Did you mean .*\?$/, '') } : formatted;
    });

  // A query text is parsed and validated once: thousands of subscriptions of the same
  // operation share one document (its AST is most of an idle subscription's memory).
  const documents = new Map<string, DocumentNode | GraphQLError[]>();
  const checkDocument = (query: string): DocumentNode | GraphQLError[] => {
    let checked = documents.get(query);
    if (checked) return checked;
    const tooLong = options.checkTokens(query);
    if (tooLong) return [codedError('GRAPHQL_PARSE_FAILED', tooLong)];
    try {
      const document = parse(query);
      const invalid = validate(schema, document, rules);
      checked = invalid.length > 0 ? invalid.map((e) => codedError('GRAPHQL_VALIDATION_FAILED', e.message)) : document;
    } catch (err) {
      checked = [codedError('GRAPHQL_PARSE_FAILED', (err as Error).message)];
    }
    if (documents.size >= DOCUMENT_CACHE_SIZE) documents.delete(documents.keys().next().value!);
    documents.set(query, checked);
    return checked;
  };

  const closeTooSlow = (socket: WebSocket) => {
    if (socket.readyState !== socket.OPEN) return;
    logger.warn('closing a WebSocket whose reader does not keep up (LIVE_MAX_BUFFERED_BYTES / LIVE_MAX_QUEUED)');
    options.onClosedTooSlow?.();
    socket.close(LIVE_CLOSE_CODES.tooSlow, 'Too slow: the client does not read its changes; reconnect and resume with the last cursor');
  };

  const server = makeServer<Record<string, unknown> | undefined, SocketExtra>({
    schema,
    connectionInitWaitTimeout: settings.initTimeoutMs,
    async onConnect(ctx: Context<Record<string, unknown> | undefined, SocketExtra>) {
      const params = ctx.connectionParams ?? {};
      const entry = Object.entries(params).find(([name]) => name.toLowerCase() === 'authorization');
      let session: Session | null = null;
      if (entry !== undefined) {
        try {
          // A value that is not a string is no "Bearer <JWT>" either.
          session = await options.authenticate(typeof entry[1] === 'string' ? entry[1] : String(entry[1]));
        } catch (err) {
          // A bad or expired token is refused, not made anonymous: the client would
          // otherwise believe it is signed in. graphql-ws closes with 4403 on `false`;
          // closing first gives the client the reason.
          ctx.extra.socket.close(LIVE_CLOSE_CODES.forbidden, closeReason(`Forbidden: ${err instanceof GraphQLError ? err.message : 'the token is invalid'}`));
          return false;
        }
      }
      ctx.extra.session = session;
      if (session) {
        const expiry = at(session.expiresAt, () => ctx.extra.socket.close(LIVE_CLOSE_CODES.tokenExpired, 'Forbidden: the token has expired; reconnect with a new one'));
        ctx.extra.socket.once('close', () => expiry.clear());
      }
      return true;
    },
    onSubscribe(ctx, _id, payload): ExecutionArgs | readonly GraphQLError[] {
      if (Object.keys(ctx.subscriptions).length > settings.maxPerSocket) {
        return [
          codedError(
            'TOO_MANY_SUBSCRIPTIONS',
            `a socket may hold at most ${settings.maxPerSocket} subscriptions (LIVE_MAX_PER_SOCKET); complete one or open another socket`,
          ),
        ];
      }
      const checked = checkDocument(payload.query);
      if (Array.isArray(checked)) return checked;
      const document = checked as DocumentNode;
      const operation = getOperationAST(document, payload.operationName);
      if (!operation) return [codedError('OPERATION_RESOLUTION_FAILURE', operationResolutionMessage(payload.operationName))];
      if (operation.operation !== 'subscription') {
        return [codedError('BAD_REQUEST', `only subscriptions are served over WebSocket; send a ${operation.operation} over HTTP to /graphql`)];
      }
      const viewer = ctx.extra.session?.viewer ?? null;
      try {
        const cost = options.checkCost({ schema, document, operation, variables: payload.variables, operationName: payload.operationName });
        options.chargeStart?.(ctx.extra.request, viewer, cost ?? 0);
      } catch (err) {
        if (!(err instanceof GraphQLError)) return [codedError('GRAPHQL_VALIDATION_FAILED', (err as Error).message)];
        // The HTTP status an error carries means nothing on a socket.
        const { http: _status, ...extensions } = err.extensions;
        return [new GraphQLError(err.message, { extensions })];
      }
      const contextValue = options.contextFor(viewer, () => closeTooSlow(ctx.extra.socket));
      viewers.set(contextValue, viewer);
      return { schema, document, operationName: payload.operationName, variableValues: payload.variables, contextValue };
    },
    async subscribe(args: ExecutionArgs) {
      const stream = await createSourceEventStream(args);
      const viewer = viewers.get(args.contextValue as object) ?? null;
      // graphql-ws keeps these arguments as long as the subscription lives; the context
      // it was set up in (loaders, features) is needed no more: each change gets its own.
      (args as { contextValue: unknown }).contextValue = undefined;
      if (!(Symbol.asyncIterator in (stream as object))) return stream as ExecutionResult;
      // Subscribers of one feed who run the same operation with the same variables as the
      // same caller, and stand at the same position, get the same result: it is computed
      // once per change (Hasura's multiplexing, for the rendering side).
      const operation = `${documentId(args.document)}|${JSON.stringify(args.variableValues ?? {})}|${viewer ? `${viewer.username}|${viewer.isAdmin}` : ''}`;
      return renderEach(stream as AsyncIterableIterator<Delivery>, (delivery) => {
        let rendered = renders.get(delivery.batch);
        if (!rendered) renders.set(delivery.batch, (rendered = new Map()));
        const key = `${delivery.change.id}|${delivery.cursor}|${operation}`;
        let result = rendered.get(key);
        if (!result) {
          result = Promise.resolve(execute({ ...args, rootValue: delivery, contextValue: options.eventContextFor(viewer, delivery.batch) }));
          rendered.set(key, result);
        }
        return result;
      });
    },
    onNext: (_ctx, _id, _payload, _args, result) => (result.errors ? { ...result, errors: formatAll(result.errors) } : undefined),
    onError: (_ctx, _id, _payload, errors) => formatAll(errors),
  });

  httpServer.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/graphql') return refuse(socket, 404, 'Not Found', `no WebSocket endpoint at ${path}; use /graphql`);
    if (stopping) return refuse(socket, 503, 'Service Unavailable', 'the server is shutting down; connect to another one');
    const origin = req.headers.origin;
    if (origin !== undefined && !sameOrigin(origin, req.headers.host) && !allows(options.cors, origin)) {
      return refuse(socket, 403, 'Forbidden', `WebSocket connections from ${origin} are not allowed (CORS_ORIGINS)`);
    }
    if (sockets.size >= settings.maxSockets) {
      return refuse(socket, 503, 'Service Unavailable', `this server holds its limit of ${settings.maxSockets} sockets (LIVE_MAX_SOCKETS); retry later or elsewhere`);
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  });

  wss.on('connection', (socket: WebSocket, request: IncomingMessage) => {
    sockets.add(socket);
    const extra: SocketExtra = { socket, request, session: null };
    const closed = server.opened(
      {
        protocol: socket.protocol,
        send: (data) =>
          new Promise<void>((resolve, reject) => {
            if (socket.readyState !== socket.OPEN) return resolve();
            // Resolves once the message left for the network: the next change waits for it.
            socket.send(data, (err) => (err ? reject(err) : resolve()));
            if (socket.bufferedAmount > settings.maxBufferedBytes) closeTooSlow(socket);
          }),
        close: (code, reason) => socket.close(code, reason),
        onMessage: (handle) =>
          socket.on('message', (data: Buffer) => {
            handle(data.toString('utf8')).catch((err: unknown) => {
              logger.error({ err }, 'error while handling a WebSocket message');
              socket.close(CloseCode.InternalServerError, 'Internal server error');
            });
          }),
      },
      extra,
    );
    let alive = true;
    socket.on('pong', () => (alive = true));
    const keepAlive = setInterval(() => {
      if (!alive) return socket.terminate();
      alive = false;
      socket.ping();
    }, KEEP_ALIVE_MS);
    keepAlive.unref();
    socket.on('error', (err) => logger.warn({ err }, 'WebSocket error'));
    socket.once('close', (code: number, reason: Buffer) => {
      sockets.delete(socket);
      clearInterval(keepAlive);
      void closed(code, reason.toString('utf8'));
    });
  });

  return {
    get sockets() {
      return sockets.size;
    },
    async close() {
      stopping = true;
      const open = [...sockets];
      for (const socket of open) socket.close(LIVE_CLOSE_CODES.goingAway, 'The server is shutting down: reconnect and resume with your last cursor');
      await Promise.race([
        Promise.all(open.map((s) => new Promise<void>((resolve) => (s.readyState === s.CLOSED ? resolve() : s.once('close', () => resolve()))))),
        new Promise((resolve) => setTimeout(resolve, CLOSE_GRACE_MS).unref()),
      ]);
      for (const socket of sockets) socket.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
