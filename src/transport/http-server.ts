/**
 * HTTP: a thin `node:http` integration of Apollo Server through
 * `executeHTTPGraphQLRequest` (no framework in the request path), plus the probes
 * (`/livez`, its older name `/healthz`, and `/readyz`) and, when on, `/metrics`.
 * In front of execution, the overload guard: a principal already over its budget is
 * refused before its request is read (429), and at most `MAX_IN_FLIGHT` requests
 * execute at once (past the queue, 503). Each request carries an `AbortSignal` that
 * aborts when its client goes away, so its work stops with it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApolloServer, BaseContext } from '@apollo/server';
import { HeaderMap } from '@apollo/server';
import type { Logger } from 'pino';
import type { CorsOrigins } from '../config.js';
import { answerPreflight, corsHeaders } from './cors.js';
import type { PersistedQuery, QueryHashes } from '../graphql/query-hashes.js';
import { playgroundAsset, playgroundHtml, type DemoIds } from '../graphql/playground.js';
import { secondsUntil, type RateLimiter } from '../graphql/rate-limit.js';
import { BUSY_RETRY_AFTER_S, ServerBusyError, type InFlightGate, type Release } from './in-flight-gate.js';

/**
 * How long the answer to a principal refused again in the same window is held before it
 * is sent (never past the reset). A flooder that ignores `Retry-After` and sends again at
 * once on each of its connections gets one answer per connection per this time, not
 * thousands a second that every other client's request would wait behind.
 */
export const REFUSED_AGAIN_DELAY_MS = 1_000;

/** What a request's context is built from, besides the request. */
export interface RequestScope {
  /** Epoch milliseconds: the execution deadline (`REQUEST_TIMEOUT_MS`). */
  readonly deadline: number;
  /** Aborts when the client goes away before its response is sent: its work stops. */
  readonly signal: AbortSignal;
  /** Whose budget the request spends (`user:…` or `address:…`), or null without an overload guard or with budgets and the cap both off. */
  readonly principal: string | null;
}

/** Budgets per principal and load shedding, in front of execution. */
export interface OverloadGuard {
  /** The principal of a request (a request whose token is bad is its address's). */
  readonly principalOf: (req: IncomingMessage) => Promise<string>;
  readonly limiter: RateLimiter;
  readonly gate: InFlightGate;
}

/** What the HTTP handler needs. */
export interface HttpHandlerOptions<C extends BaseContext> {
  readonly apollo: ApolloServer<C>;
  /** Build the GraphQL context of one request (may throw a GraphQLError). */
  readonly contextFor: (req: IncomingMessage, scope: RequestScope) => Promise<C>;
  /** Budgets and load shedding (absent: neither, as the benchmarks' Apollo floor serves). */
  readonly overload?: OverloadGuard;
  /** How long a request may take in all (`REQUEST_TIMEOUT_MS`): the execution deadline. */
  readonly requestTimeoutMs: number;
  /**
   * Why the server cannot serve now (the store does not answer, its schema is
   * incomplete), or null when it can: /readyz. Bounded by READINESS_TIMEOUT_MS.
   */
  readonly readiness: () => Promise<string | null>;
  /** Answer `/metrics` (absent: metrics are off, and the path is unknown). */
  readonly metrics?: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  readonly logger: Logger;
  readonly bodyLimitBytes: number;
  /** Serve the GraphiQL playground at GET /graphql for browsers. */
  readonly playground: boolean;
  /** The demo data set's ids, filled into the playground's example tabs. */
  readonly demoIds?: () => Promise<DemoIds | null>;
  /** Origins browsers may call `/graphql` from. */
  readonly cors: CorsOrigins;
  /** Refuse a query before parsing when it breaks the token limit (message) or not (null). */
  readonly checkTokens: (query: unknown) => string | null;
  /** The largest GraphQL response sent; a larger one is refused (`MAX_RESPONSE_BYTES`). */
  readonly maxResponseBytes: number;
  /** How long a response may take to drain to its reader before the socket is closed. */
  readonly writeTimeoutMs: number;
  /**
   * Apollo's APQ cache, which remembers each query text's hash: a POST whose text it
   * holds reaches Apollo as a persisted query, so Apollo does not hash the text again.
   */
  readonly queryHashes?: QueryHashes;
}

class BodyTooLarge extends Error {}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) return Promise.reject(new BodyTooLarge());
  // Plain events rather than `for await`: cheaper on the hot path of every request.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Deepest JSON nesting a request may carry: the schema's inputs need a handful of levels. */
export const MAX_JSON_DEPTH = 32;

/**
 * Whether a parsed JSON value nests deeper than `max` levels. The walk stops at depth
 * `max`, so a value nested 100,000 levels deep costs `max` frames, not a stack overflow
 * (which every recursive walk after it, `JSON.stringify` included, would hit).
 */
export function jsonDeeperThan(value: unknown, max: number, depth = 0): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (depth >= max) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (jsonDeeperThan(item, max, depth + 1)) return true;
    return false;
  }
  for (const key in value) if (jsonDeeperThan((value as Record<string, unknown>)[key], max, depth + 1)) return true;
  return false;
}

/** The parts of a GET request Apollo will parse as JSON. */
function jsonSearchParams(url: URL): unknown[] {
  return ['variables', 'extensions'].flatMap((name) => {
    const raw = url.searchParams.get(name);
    if (raw === null) return [];
    try {
      return [JSON.parse(raw)];
    } catch {
      return []; // Apollo refuses it with its own 400
    }
  });
}

/**
 * End a response, and close the socket if its reader does not take the bytes within
 * `timeoutMs`: a client that sends a request and never reads must not hold the
 * response in memory until it disconnects ('finish' fires once the kernel has it all).
 */
function endWithin(res: ServerResponse, body: string | Buffer, timeoutMs: number): void {
  res.end(body);
  if (res.writableFinished) return;
  const timer = setTimeout(() => res.destroy(), timeoutMs);
  timer.unref();
  const clear = () => clearTimeout(timer);
  res.once('finish', clear);
  res.once('close', clear);
}

/** The refusal of a GraphQL response above the size limit. */
function responseTooLarge(bytes: number, limit: number): string {
  return JSON.stringify({
    errors: [
      {
        message: `the response is ${bytes} bytes, above the limit of ${limit} (MAX_RESPONSE_BYTES): ask for fewer fields or smaller pages`,
        extensions: { code: 'RESPONSE_TOO_LARGE' },
      },
    ],
  });
}

/** What a browser opening /graphql gets when the playground is off. */
export const PLAYGROUND_OFF_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>GraphQL endpoint</title></head>
<body>
<h1>This is a GraphQL endpoint</h1>
<p>The playground is off on this server (it is off by default when <code>NODE_ENV=production</code>).
Start the server with <code>PLAYGROUND=true</code> to turn it on.</p>
<p>Send GraphQL requests here with <code>POST</code> and <code>content-type: application/json</code>.</p>
</body></html>
`;

/** Answer JSON, with `head` (name, value, name, value…) among the headers. */
function sendJson(res: ServerResponse, status: number, body: unknown, head: readonly string[] = []): void {
  const text = JSON.stringify(body);
  res.writeHead(status, [...head, 'content-type', 'application/json; charset=utf-8', 'content-length', String(Buffer.byteLength(text))]);
  res.end(text);
}

/** The RateLimit-* headers (IETF draft) of a principal's budget now, or none when budgets are off. */
function rateLimitHead(limiter: RateLimiter, principal: string, now = Date.now()): string[] {
  if (!limiter.enabled) return [];
  const status = limiter.status(principal);
  return ['ratelimit-limit', String(status.limit), 'ratelimit-remaining', String(status.remaining), 'ratelimit-reset', String(secondsUntil(status.resetAt, now))];
}

function requestError(res: ServerResponse, status: number, message: string, head?: readonly string[]): void {
  sendJson(res, status, { errors: [{ message, extensions: { code: 'BAD_REQUEST' } }] }, head);
}

/** The request content types a browser sends without a CORS preflight (a form could). */
const SIMPLE_CONTENT_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain']);

/** Headers only a script can add, and only after a preflight: Apollo Client's and Apollo's. */
export const CSRF_PREFLIGHT_HEADERS = ['x-apollo-operation-name', 'apollo-require-preflight'] as const;

/**
 * Apollo Server's CSRF prevention, here where the request's headers are read anyway:
 * a request a plain HTML form or `<img>` could send (no content type, or a simple one)
 * must carry one of `CSRF_PREFLIGHT_HEADERS`, which forces a browser to ask first.
 * Returns the refusal message, or null.
 */
export function csrfRefusal(contentType: string | undefined, header: (name: string) => string | undefined): string | null {
  if (contentType !== undefined) {
    const semicolon = contentType.indexOf(';');
    const essence = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
    if (!SIMPLE_CONTENT_TYPES.has(essence)) return null;
  }
  if (CSRF_PREFLIGHT_HEADERS.some((name) => (header(name) ?? '').length > 0)) return null;
  return (
    `This operation has been blocked as a potential Cross-Site Request Forgery (CSRF). Please either specify a ` +
    `'content-type' header (with a type that is not one of ${[...SIMPLE_CONTENT_TYPES].join(', ')}) or provide ` +
    `a non-empty value for one of the following headers: ${CSRF_PREFLIGHT_HEADERS.join(', ')}`
  );
}

/** A POST body Apollo reads as a GraphQL request (an object with its fields). */
type PostBody = Record<string, unknown> & { query?: unknown; extensions?: unknown };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Make a parsed POST body (this handler's own object) the same request as an APQ
 * request: the hash in `extensions.persistedQuery`, no text (Apollo finds it in the
 * cache under the hash). Changed in place, so it keeps its shape; the other fields
 * stay as they were, and Apollo judges them exactly as before.
 */
function makePersisted(body: PostBody, persistedQuery: PersistedQuery): void {
  body.query = undefined;
  body.extensions = body.extensions == null ? { persistedQuery } : { ...(body.extensions as Record<string, unknown>), persistedQuery };
}

/** The whole text of a chunked body (for the size check before anything is sent). */
async function collect(chunks: AsyncIterable<string>): Promise<string> {
  let text = '';
  for await (const chunk of chunks) text += chunk;
  return text;
}

/**
 * How long /readyz waits for the store: a hung store (a partition, a stopped node that
 * does not refuse connections) answers 503 within this, well inside a probe's timeout.
 */
export const READINESS_TIMEOUT_MS = 2_000;

/**
 * Why the server is not ready, or null; a check that does not finish in time is a reason
 * too. A store error is logged, not shown: /readyz is often public.
 */
async function notReadyBecause(readiness: () => Promise<string | null>, logger: Logger): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`the store did not answer within ${READINESS_TIMEOUT_MS} ms`), READINESS_TIMEOUT_MS);
  });
  const check = readiness().catch((err: unknown) => {
    logger.warn({ err }, 'readiness check failed: the store does not answer');
    return 'the store does not answer';
  });
  try {
    return await Promise.race([check, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolve after `ms`, or at once when `signal` aborts (the client has gone). */
function holdFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** How old a readiness result /readyz may answer with. */
export const READINESS_CACHE_MS = 1_000;

/**
 * `check` run at most once per `maxAgeMs`: callers within that time of a check's start
 * share its result (one still running included), so a probe storm costs the store one
 * check a second.
 */
export function cachedFor<T>(maxAgeMs: number, check: () => Promise<T>, now: () => number = Date.now): () => Promise<T> {
  let last: { at: number; result: Promise<T> } | null = null;
  return () => {
    const at = now();
    if (last === null || at - last.at >= maxAgeMs) last = { at, result: check() };
    return last.result;
  };
}

/**
 * Whose slot a request takes while budgets (`RATE_LIMIT_POINTS=0`) and the cap on
 * requests in flight (`MAX_IN_FLIGHT=0`) are both off: the gate still counts the request
 * in flight, for the metrics, and shares matter to nothing.
 */
const UNCOUNTED_PRINCIPAL = 'uncounted';

/** The URL of `POST /graphql`, shared by every such request (only read). */
const GRAPHQL_URL = new URL('/graphql', 'http://localhost');

/** The request handler of the whole server. */
export function createHttpHandler<C extends BaseContext>(options: HttpHandlerOptions<C>) {
  const { apollo, logger, queryHashes, overload } = options;
  const readiness = cachedFor(READINESS_CACHE_MS, () => notReadyBecause(options.readiness, logger));
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const deadline = Date.now() + options.requestTimeoutMs;
    // Nearly every request is `POST /graphql`: its URL is a constant, not parsed again.
    const url = req.url === '/graphql' ? GRAPHQL_URL : new URL(req.url ?? '/', 'http://localhost');
    // The CORS headers of a /graphql response, written with the rest of its head.
    let head: string[] = [];
    let pinned: PersistedQuery | null = null;
    let release: Release | null = null;
    try {
      // Liveness: answering at all proves the event loop turns; nothing else is checked,
      // so a store outage never gets a working process restarted.
      if (url.pathname === '/livez' || url.pathname === '/healthz') return sendJson(res, 200, { status: 'ok' });
      if (url.pathname === '/readyz') {
        const reason = await readiness();
        if (reason === null) return sendJson(res, 200, { status: 'ready' });
        return sendJson(res, 503, { status: 'unavailable', reason });
      }
      if (url.pathname === '/metrics' && options.metrics) return await options.metrics(req, res);
      if (options.playground && req.method === 'GET' && url.pathname.startsWith('/playground/')) {
        const asset = playgroundAsset(url.pathname);
        if (asset) {
          res.writeHead(200, { 'content-type': asset.type, 'cache-control': 'public, max-age=86400' });
          return endWithin(res, asset.body, options.writeTimeoutMs);
        }
      }
      if (url.pathname !== '/graphql') return sendJson(res, 404, { error: `no route ${url.pathname}; try /graphql` });
      head = corsHeaders(req, options.cors);
      if (answerPreflight(req, res, options.cors, head)) return;
      // A browser opening /graphql (no query in the URL) gets the playground, or a page
      // saying it is off and how to turn it on.
      if (req.method === 'GET' && !url.searchParams.has('query') && (req.headers.accept ?? '').includes('text/html')) {
        const html = options.playground ? playgroundHtml((await options.demoIds?.()) ?? null) : PLAYGROUND_OFF_HTML;
        res.writeHead(200, [...head, 'content-type', 'text/html; charset=utf-8', 'content-length', String(Buffer.byteLength(html))]);
        return endWithin(res, html, options.writeTimeoutMs);
      }
      if (req.method !== 'GET' && req.method !== 'POST') {
        return requestError(res, 405, `method ${req.method} is not allowed on /graphql; use GET or POST`, [...head, 'allow', 'GET, POST']);
      }

      // The client going away (the response closing before it was sent) stops the work.
      // A response closes after it is sent too: aborting then would stop nothing, and an
      // abort costs a DOMException with its stack (some 4% of a timeline request's CPU).
      const controller = new AbortController();
      res.once('close', () => {
        if (!res.writableFinished) controller.abort();
      });
      let principal: string | null = null;
      // With budgets and the cap both off, nothing depends on whose request this is: its
      // principal (and its token's viewer, for it) is not worked out, and stays null.
      if (overload && (overload.limiter.enabled || overload.gate.settings.maxInFlight > 0)) {
        principal = await overload.principalOf(req);
        // Refused earlier in this window: answered before anything is read or parsed.
        const refused = overload.limiter.refusal(principal);
        if (refused) {
          const retryAfter = refused.extensions.retryAfter as number;
          await holdFor(Math.min(REFUSED_AGAIN_DELAY_MS, retryAfter * 1000), controller.signal);
          const body = { errors: [{ message: refused.message, extensions: { code: 'RATE_LIMITED', retryAfter } }] };
          return sendJson(res, 429, body, [...head, ...rateLimitHead(overload.limiter, principal), 'retry-after', String(retryAfter)]);
        }
      }

      const headers = new HeaderMap();
      const incoming = req.headers;
      for (const key in incoming) {
        const value = incoming[key];
        if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
      }
      const type = headers.get('content-type');
      const csrf = csrfRefusal(type, (name) => headers.get(name));
      if (csrf) return requestError(res, 400, csrf, head);
      let body: unknown = undefined;
      if (req.method === 'POST') {
        const text = await readBody(req, options.bodyLimitBytes);
        if (/^application\/(graphql-response\+)?json\b/i.test(type ?? '')) {
          try {
            body = text === '' ? undefined : JSON.parse(text);
          } catch {
            return requestError(res, 400, 'the request body is not valid JSON', head);
          }
        } else {
          body = text;
        }
      }

      if ((req.method === 'GET' ? jsonSearchParams(url) : [body]).some((v) => jsonDeeperThan(v, MAX_JSON_DEPTH))) {
        return requestError(res, 400, `the request's JSON is nested deeper than ${MAX_JSON_DEPTH} levels`, head);
      }

      const query = req.method === 'GET' ? url.searchParams.get('query') : (body as { query?: unknown } | undefined)?.query;
      const tooLong = options.checkTokens(query);
      if (tooLong) {
        return sendJson(res, 400, { errors: [{ message: tooLong, extensions: { code: 'GRAPHQL_PARSE_FAILED' } }] }, head);
      }
      // A text seen before goes to Apollo with its hash (see QueryHashes); a request
      // that is an APQ request already, or whose extensions Apollo will refuse, as it came.
      if (queryHashes && typeof query === 'string' && isRecord(body) && (body.extensions == null || (isRecord(body.extensions) && body.extensions.persistedQuery === undefined))) {
        pinned = queryHashes.pin(query);
        if (pinned !== null) makePersisted(body, pinned);
      }

      if (overload) {
        try {
          release = await overload.gate.acquire(principal ?? UNCOUNTED_PRINCIPAL, controller.signal);
        } catch (err) {
          if (!(err instanceof ServerBusyError)) return; // the client went away while it waited
          const busy = { errors: [{ message: err.message, extensions: { code: 'UNAVAILABLE' } }] };
          return sendJson(res, 503, busy, [...head, 'retry-after', String(BUSY_RETRY_AFTER_S)]);
        }
      }
      const scope: RequestScope = { deadline, signal: controller.signal, principal };
      const response = await apollo.executeHTTPGraphQLRequest({
        httpGraphQLRequest: { method: req.method, headers, search: url.search, body },
        context: () => options.contextFor(req, scope),
      });
      // Executed: the slot is free before the body is written to the client.
      release?.();
      if (overload && principal !== null) {
        head.push(...rateLimitHead(overload.limiter, principal));
        if (response.status === 429) head.push('retry-after', String(secondsUntil(overload.limiter.status(principal).resetAt, Date.now())));
      }
      // Nothing here asks for incremental delivery (@defer): one complete body.
      const text = response.body.kind === 'complete' ? response.body.string : await collect(response.body.asyncIterator);
      const bytes = Buffer.byteLength(text);
      // Apollo's headers and the length, written at once (a flat list: no header object to build).
      for (const [key, value] of response.headers) head.push(key, value);
      if (bytes > options.maxResponseBytes) {
        const refusal = responseTooLarge(bytes, options.maxResponseBytes);
        // The refusal's own content type replaces Apollo's.
        const apolloType = head.indexOf('content-type');
        if (apolloType !== -1 && apolloType % 2 === 0) head.splice(apolloType, 2);
        res.writeHead(400, [...head, 'content-type', 'application/json; charset=utf-8', 'content-length', String(Buffer.byteLength(refusal))]);
        return endWithin(res, refusal, options.writeTimeoutMs);
      }
      head.push('content-length', String(bytes));
      res.writeHead(response.status ?? 200, head);
      endWithin(res, text, options.writeTimeoutMs);
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        return requestError(res, 413, `the request body exceeds ${options.bodyLimitBytes} bytes`, head);
      }
      logger.error({ err }, 'unhandled error in the HTTP handler');
      if (!res.headersSent) sendJson(res, 500, { errors: [{ message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }] }, head);
      else res.end();
    } finally {
      release?.();
      if (pinned !== null) queryHashes!.unpin(pinned.sha256Hash);
    }
  };
}
