/**
 * HTTP: a thin `node:http` integration of Apollo Server through
 * `executeHTTPGraphQLRequest` (no framework in the request path), plus `/healthz`
 * and `/readyz`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApolloServer, BaseContext } from '@apollo/server';
import { HeaderMap } from '@apollo/server';
import type { Logger } from 'pino';
import { applyCors, type CorsOrigins } from './cors.js';
import { playgroundAsset, playgroundHtml, type DemoIds } from './graphql/playground.js';

/** What the HTTP handler needs. */
export interface HttpHandlerOptions<C extends BaseContext> {
  readonly apollo: ApolloServer<C>;
  /** Build the GraphQL context of one request (may throw a GraphQLError). */
  readonly contextFor: (req: IncomingMessage) => Promise<C>;
  /** A cheap round trip to the store, for /readyz. */
  readonly ping: () => Promise<void>;
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

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function requestError(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { errors: [{ message, extensions: { code: 'BAD_REQUEST' } }] });
}

/** The request handler of the whole server. */
export function createHttpHandler<C extends BaseContext>(options: HttpHandlerOptions<C>) {
  const { apollo, logger } = options;
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    try {
      if (url.pathname === '/healthz') return sendJson(res, 200, { status: 'ok' });
      if (url.pathname === '/readyz') {
        try {
          await options.ping();
          return sendJson(res, 200, { status: 'ready' });
        } catch (err) {
          logger.warn({ err }, 'readiness check failed: the store does not answer');
          return sendJson(res, 503, { status: 'unavailable', reason: 'the store does not answer' });
        }
      }
      if (options.playground && req.method === 'GET' && url.pathname.startsWith('/playground/')) {
        const asset = playgroundAsset(url.pathname);
        if (asset) {
          res.writeHead(200, { 'content-type': asset.type, 'cache-control': 'public, max-age=86400' });
          res.end(asset.body);
          return;
        }
      }
      if (url.pathname !== '/graphql') return sendJson(res, 404, { error: `no route ${url.pathname}; try /graphql` });
      if (applyCors(req, res, options.cors)) return;
      // A browser opening /graphql (no query in the URL) gets the playground.
      if (
        options.playground &&
        req.method === 'GET' &&
        !url.searchParams.has('query') &&
        (req.headers.accept ?? '').includes('text/html')
      ) {
        const html = playgroundHtml((await options.demoIds?.()) ?? null);
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(html) });
        res.end(html);
        return;
      }
      if (req.method !== 'GET' && req.method !== 'POST') {
        res.setHeader('allow', 'GET, POST');
        return requestError(res, 405, `method ${req.method} is not allowed on /graphql; use GET or POST`);
      }

      const headers = new HeaderMap();
      for (const [key, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
      }
      let body: unknown = undefined;
      if (req.method === 'POST') {
        const text = await readBody(req, options.bodyLimitBytes);
        const type = headers.get('content-type') ?? '';
        if (/^application\/(graphql-response\+)?json\b/i.test(type)) {
          try {
            body = text === '' ? undefined : JSON.parse(text);
          } catch {
            return requestError(res, 400, 'the request body is not valid JSON');
          }
        } else {
          body = text;
        }
      }

      const tooLong = options.checkTokens(
        req.method === 'GET' ? url.searchParams.get('query') : (body as { query?: unknown } | undefined)?.query,
      );
      if (tooLong) {
        return sendJson(res, 400, { errors: [{ message: tooLong, extensions: { code: 'GRAPHQL_PARSE_FAILED' } }] });
      }

      const response = await apollo.executeHTTPGraphQLRequest({
        httpGraphQLRequest: { method: req.method, headers, search: url.search, body },
        context: () => options.contextFor(req),
      });
      for (const [key, value] of response.headers) res.setHeader(key, value);
      res.statusCode = response.status ?? 200;
      if (response.body.kind === 'complete') {
        res.end(response.body.string);
        return;
      }
      for await (const chunk of response.body.asyncIterator) res.write(chunk);
      res.end();
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        return requestError(res, 413, `the request body exceeds ${options.bodyLimitBytes} bytes`);
      }
      logger.error({ err }, 'unhandled error in the HTTP handler');
      if (!res.headersSent) sendJson(res, 500, { errors: [{ message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }] });
      else res.end();
    }
  };
}
