/**
 * CORS for `/graphql`, so browser apps served from another origin (the usual Apollo
 * Client setup in development) can call the API. Tokens travel in the `Authorization`
 * header, never in cookies, so no credentials mode is offered.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CorsOrigins } from '../config.js';

/** The request headers a browser may send: tokens, JSON bodies, Apollo's CSRF header. */
export const CORS_ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'apollo-require-preflight'] as const;

/** Whether a browser on `origin` may call the API (HTTP or WebSocket). */
export function allows(origins: CorsOrigins, origin: string): boolean {
  return origins === '*' || origins.includes(origin);
}

/**
 * The CORS response headers of a `/graphql` request, as a flat list of names and
 * values (`writeHead`'s cheapest form): `vary: Origin` always (the answer depends on
 * the Origin header, so caches must key on it), and the allowed origin when it is one.
 */
export function corsHeaders(req: IncomingMessage, origins: CorsOrigins): string[] {
  const origin = req.headers.origin;
  return origin !== undefined && allows(origins, origin)
    ? ['vary', 'Origin', 'access-control-allow-origin', origin]
    : ['vary', 'Origin'];
}

/**
 * Answer a CORS preflight completely (with the headers `corsHeaders` gave). Returns
 * true when the request was a preflight and has been answered, false when the
 * handler should go on.
 */
export function answerPreflight(req: IncomingMessage, res: ServerResponse, origins: CorsOrigins, head: readonly string[]): boolean {
  if (req.method !== 'OPTIONS' || req.headers['access-control-request-method'] === undefined) return false;
  const origin = req.headers.origin;
  if (origin === undefined || !allows(origins, origin)) {
    const body = JSON.stringify({
      errors: [{ message: `origin ${origin ?? '(none)'} is not allowed by CORS_ORIGINS`, extensions: { code: 'FORBIDDEN' } }],
    });
    res.writeHead(403, [...head, 'content-type', 'application/json; charset=utf-8', 'content-length', String(Buffer.byteLength(body))]);
    res.end(body);
    return true;
  }
  res.writeHead(204, [
    ...head,
    'access-control-allow-methods', 'GET, POST, OPTIONS',
    'access-control-allow-headers', CORS_ALLOWED_HEADERS.join(', '),
    'access-control-max-age', '600',
    'content-length', '0',
  ]);
  res.end();
  return true;
}
