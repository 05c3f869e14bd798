/**
 * CORS in a real browser: a page served from another port pages a timeline through
 * Apollo Client with a bearer token (a JSON POST with `Authorization` needs a
 * preflight), and a server whose CORS_ORIGINS leaves the page's origin out is blocked
 * by the browser.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

/** Serve the bundled app and an empty page from a port of its own (a different origin). */
async function startAppOrigin(): Promise<{ origin: string; close: () => Promise<void> }> {
  const bundle = await build({
    entryPoints: [fileURLToPath(new URL('./cross-origin/app.ts', import.meta.url))],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  const js = bundle.outputFiles[0]!.text;
  const html = '<!doctype html><html><head><meta charset="utf-8"><script src="/app.js"></script></head><body>app</body></html>';
  const server: Server = createServer((req, res) => {
    const [type, body] = req.url === '/app.js' ? ['text/javascript', js] : ['text/html', html];
    res.writeHead(200, { 'content-type': `${type}; charset=utf-8` });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { origin, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('a browser app on another origin', () => {
  let browser: Browser;
  let app: Awaited<ReturnType<typeof startAppOrigin>>;
  const servers: TestServer[] = [];

  /** A server holding carol's 7 posts, with the given environment. */
  async function serverWith(env: Record<string, string>): Promise<{ server: TestServer; token: string }> {
    const server = await startTestServer({ env });
    servers.push(server);
    const token = await server.token('carol');
    await server.gql(`mutation { createUser(input: { username: "carol", displayName: "Carol" }) { user { id } } }`, {}, token);
    for (let i = 1; i <= 7; i++) {
      await server.gql(`mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`, { c: `carol ${i}` }, token);
    }
    return { server, token };
  }

  beforeAll(async () => {
    app = await startAppOrigin();
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await Promise.all(servers.map((s) => s.close()));
  });

  async function pageTimeline(server: TestServer, token: string) {
    const page = await browser.newPage();
    try {
      await page.goto(app.origin, { waitUntil: 'load' });
      return await page.evaluate(
        ([uri, token]) =>
          (globalThis as any).pageTimeline({ uri, token, username: 'carol', pageSize: 3 }).then(
            (r: unknown) => ({ ok: r }),
            (e: Error) => ({ error: String(e.message) }),
          ),
        [server.url, token] as const,
      );
    } finally {
      await page.close();
    }
  }

  it('pages the timeline through Apollo Client when its origin is allowed (development: any origin)', async () => {
    const { server, token } = await serverWith({});
    expect(app.origin).not.toBe(new URL(server.url).origin);
    expect(await pageTimeline(server, token)).toEqual({
      ok: { viewer: 'carol', pages: 3, posts: ['carol 7', 'carol 6', 'carol 5', 'carol 4', 'carol 3', 'carol 2', 'carol 1'] },
    });
  }, 60_000);

  it('is blocked by the browser when CORS_ORIGINS names other origins only', async () => {
    const { server, token } = await serverWith({ CORS_ORIGINS: 'https://app.example.com' });
    const result = await pageTimeline(server, token);
    expect(result).toEqual({ error: expect.stringMatching(/fetch/i) });
  }, 60_000);
});
