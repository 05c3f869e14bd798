/**
 * CORS over HTTP: the preflight and the response headers for each CORS_ORIGINS
 * setting, and the defaults of development (any origin) and production (none).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const servers: TestServer[] = [];
/** Production mode with secrets production accepts (long and random). */
const PRODUCTION = {
  NODE_ENV: 'production',
  AUTH_SECRET: randomBytes(48).toString('base64url'),
  CURSOR_SECRET: randomBytes(48).toString('base64url'),
};
afterAll(() => Promise.all(servers.map((s) => s.close())));

async function serverWith(env: Record<string, string>): Promise<TestServer> {
  const server = await startTestServer({ env });
  servers.push(server);
  return server;
}

function preflight(server: TestServer, origin: string) {
  return fetch(server.url, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization,content-type,apollo-require-preflight',
    },
  });
}

function post(server: TestServer, origin: string) {
  return fetch(server.url, {
    method: 'POST',
    headers: { origin, 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ viewer { username } }' }),
  });
}

describe('CORS on /graphql', () => {
  it('allows any origin in development, with the headers Apollo Client and tokens need', async () => {
    const server = await serverWith({});
    const res = await preflight(server, 'http://localhost:5173');
    expect(res.status).toBe(204);
    expect(Object.fromEntries([...res.headers].filter(([k]) => k.startsWith('access-control-') || k === 'vary'))).toEqual({
      'access-control-allow-origin': 'http://localhost:5173',
      'access-control-allow-methods': 'GET, POST, OPTIONS',
      'access-control-allow-headers': 'Authorization, Content-Type, apollo-require-preflight',
      'access-control-max-age': '600',
      vary: 'Origin',
    });
    const answer = await post(server, 'http://localhost:5173');
    expect(answer.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(await answer.json()).toEqual({ data: { viewer: null }, extensions: { storeRoundTrips: 0, storeStatements: 0 } });
  });

  it('allows no origin in production until CORS_ORIGINS is set', async () => {
    const server = await serverWith(PRODUCTION);
    const res = await preflight(server, 'http://localhost:5173');
    expect(res.status).toBe(403);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(await res.json()).toEqual({
      errors: [{ message: 'origin http://localhost:5173 is not allowed by CORS_ORIGINS', extensions: { code: 'FORBIDDEN' } }],
    });
    // Same-origin and server-to-server calls carry no Origin and are unaffected.
    expect((await server.gql('{ viewer { username } }')).data).toEqual({ viewer: null });
  });

  it('allows exactly the listed origins', async () => {
    const server = await serverWith({ ...PRODUCTION, CORS_ORIGINS: 'https://app.example.com, http://localhost:5173/' });
    expect((await preflight(server, 'https://app.example.com')).status).toBe(204);
    expect((await preflight(server, 'http://localhost:5173')).status).toBe(204);
    expect((await preflight(server, 'https://evil.example.com')).status).toBe(403);
    expect((await post(server, 'https://evil.example.com')).headers.get('access-control-allow-origin')).toBeNull();
    expect((await post(server, 'https://app.example.com')).headers.get('access-control-allow-origin')).toBe('https://app.example.com');
  });

  it('refuses a CORS_ORIGINS entry that is not an origin, naming it', () => {
    expect(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins).toBe('*');
    expect(() => loadConfig({ CORS_ORIGINS: 'https://app.example.com/path' })).toThrow(
      'CORS_ORIGINS must be "*" or comma-separated origins such as https://app.example.com (scheme and host, no path), got "https://app.example.com/path"',
    );
  });

  it('sends its CORS headers with refusals too, such as 405 with its allow header', async () => {
    const server = await serverWith({});
    const put = await fetch(server.url, { method: 'PUT', headers: { origin: 'http://localhost:5173' }, body: '{}' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST');
    expect(put.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(put.headers.get('vary')).toBe('Origin');
    expect(((await put.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]!.extensions.code).toBe('BAD_REQUEST');
    const bad = await fetch(server.url, { method: 'POST', headers: { origin: 'http://localhost:5173', 'content-type': 'application/json' }, body: '{' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(bad.headers.get('content-type')).toBe('application/json; charset=utf-8');
  });
});
