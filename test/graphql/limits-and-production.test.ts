/**
 * Request limits (each refusal names the limit and by how much, and every limit is
 * configurable) and production mode (introspection and playground off, CSRF
 * prevention, body limit, development secrets refused).
 */
import { getOperationAST, parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { EXAMPLE_TABS } from '../../src/graphql/playground.js';
import { OFFSET_COST } from '../../src/graphql/limits.js';
import { RANK_LEVEL_SHIFTS } from '../../src/paging/ranked-index.js';
import { liveClient } from '../support/live-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('request limits', (target) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ target });
  });
  afterAll(() => server.close());

  const deep = (n: number) => `{ viewer { ${'posts(first: 1) { edges { node { author { '.repeat(n)}id${' } } } }'.repeat(n)} } }`;

  it('refuses a query deeper than the depth limit, saying by how much', async () => {
    const res = await server.gql(deep(3));
    expect(res.status).toBe(400);
    expect(res.errors?.[0]?.message).toMatch(/depth limit of 10 exceeded, found 1[0-9]/);
    expect(res.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
  });

  it('refuses too many aliases and too many tokens', async () => {
    const aliases = `{ ${Array.from({ length: 20 }, (_, i) => `a${i}: viewer { id }`).join(' ')} }`;
    const res = await server.gql(aliases);
    expect(res.errors?.[0]?.message).toMatch(/Aliases limit of 15 exceeded, found 20/);
    const tokens = `{ viewer { ${'id '.repeat(3_100)} } }`;
    const t = await server.gql(tokens);
    expect(t.errors?.[0]?.message).toMatch(/Token limit of 3000 exceeded/);
    expect(t.errors?.[0]?.extensions?.code).toBeDefined();
  });

  it('prices connections by their page size and refuses what costs too much', async () => {
    const costly = `{ userByUsername(username: "x") { posts(first: 100) { edges { node { author {
      posts(first: 100) { edges { node { id content } } } } } } } } }`;
    const res = await server.gql(costly);
    expect(res.status).toBe(400);
    expect(res.errors?.[0]?.message).toMatch(/Query cost limit of 10000 exceeded, found \d{5,}/);
    // Variables count too.
    const viaVariables = await server.gql(
      `query ($n: Int) { userByUsername(username: "x") { posts(first: $n) { edges { node { author { posts(first: $n) { edges { node { id } } } } } } } } }`,
      { n: 100 },
    );
    expect(viaVariables.errors?.[0]?.message).toMatch(/cost limit/);
    const cheap = await server.gql(`query ($n: Int) { userByUsername(username: "x") { posts(first: $n) { edges { node { id } } } } }`, { n: 100 });
    expect(cheap.errors).toBeUndefined();
  });

  it('prices a jump by its reads, not by its offset', async () => {
    const cost = async (offset: number) => {
      const res = await server.gql(`query ($o: Int) { suspendedUsers(first: 5, offset: $o) { totalCount } rateLimit { cost } }`, { o: offset }, await server.token('root', { admin: true }));
      expect(res.errors).toBeUndefined();
      return res.data!.rateLimit.cost as number;
    };
    const plain = await cost(0);
    expect(await cost(1_000)).toBe(plain + OFFSET_COST);
    expect(await cost(1_000_000_000)).toBe(plain + OFFSET_COST);
    expect(OFFSET_COST).toBe(RANK_LEVEL_SHIFTS.length + 2);
  });

  it('lets every playground example through (a subscription over WebSocket)', async () => {
    const live = liveClient(server.url);
    try {
      for (const tab of EXAMPLE_TABS) {
        let messages: string;
        if (getOperationAST(parse(tab.query))?.operation === 'subscription') {
          // The tab's placeholder id is refused after the limits have passed it.
          const sub = live.subscribe(tab.query);
          await sub.ended();
          expect(sub.errors).toMatchObject([{ extensions: { code: 'BAD_USER_INPUT' } }]);
          messages = sub.errors.map((e) => (e as { message: string }).message).join();
        } else {
          messages = (await server.gql(tab.query)).errors?.map((e) => e.message).join() ?? '';
        }
        expect(messages, tab.query.slice(0, 60)).not.toMatch(/limit/);
      }
    } finally {
      await live.dispose();
    }
  });

  it('takes its limits from the configuration', async () => {
    const strict = await startTestServer({ target, env: { LIMIT_DEPTH: '4', LIMIT_COST: '50' } });
    try {
      const res = await strict.gql(`{ viewer { posts(first: 1) { edges { node { id } } } } }`);
      expect(res.errors?.[0]?.message).toMatch(/depth limit of 4 exceeded, found 5/);
      const costly = await strict.gql(`{ viewer { posts(first: 60) { pageInfo { hasNextPage } edges { cursor } } } }`);
      expect(costly.errors?.[0]?.message).toMatch(/cost limit of 50 exceeded/);
    } finally {
      await strict.close();
    }
  });
});

describeEachStore('production mode', (target) => {
  const env = { NODE_ENV: 'production', AUTH_SECRET: 'a-real-production-secret-1-k7Qz9pL2wX', CURSOR_SECRET: 'another-real-secret-22-vB8nM1cR6tY3' };
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ target, env: { ...env, BODY_LIMIT_BYTES: '2000' } });
  });
  afterAll(() => server.close());

  it('refuses to start with the development secrets or none', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: 'production', AUTH_SECRET: env.AUTH_SECRET })).toThrow(/CURSOR_SECRET must be set/);
    expect(() => loadConfig({ ...env, AUTH_SECRET: 'dev-auth-secret-do-not-use-in-production' })).toThrow(/AUTH_SECRET/);
    expect(loadConfig(env)).toMatchObject({ production: true, introspection: false, playground: false });
    expect(loadConfig({ ...env, INTROSPECTION: 'true', PLAYGROUND: 'true' })).toMatchObject({ introspection: true, playground: true });
  });

  it('turns introspection and the playground off', async () => {
    const res = await server.gql(`{ __schema { types { name } } }`);
    expect(res.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    // A browser gets a short page saying the playground is off and how to turn it on.
    const page = await fetch(server.url, { headers: { accept: 'text/html,application/xhtml+xml' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await page.text();
    expect(html).toContain('The playground is off on this server');
    expect(html).toContain('<code>PLAYGROUND=true</code>');
    expect(html).not.toContain('graphiql');
    // No "did you mean" hints that would reveal the schema.
    const typo = await server.gql(`{ viewr { id } }`);
    expect(typo.errors?.[0]?.message).not.toMatch(/Did you mean/);
  });

  it('prevents CSRF: a simple request (text/plain) is refused', async () => {
    const res = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"query":"{ viewer { id } }"}' });
    expect(res.status).toBe(400);
    const get = await fetch(`${server.url}?query=${encodeURIComponent('{ viewer { id } }')}`);
    expect(get.status).toBe(400);
  });

  it('bounds how long a request may take, and how large and slow to drain its answer may be', async () => {
    expect(loadConfig(env)).toMatchObject({ maxResponseBytes: 4_000_000, writeTimeoutMs: 10_000 });
    expect(server.app.httpServer.requestTimeout).toBe(30_000);
    expect(server.app.httpServer.headersTimeout).toBe(20_000);
    const strict = await startTestServer({ target, env: { ...env, REQUEST_TIMEOUT_MS: '5000' } });
    try {
      expect(strict.app.httpServer.requestTimeout).toBe(5_000);
    } finally {
      await strict.close();
    }
  });

  it('refuses a body above the limit with 413', async () => {
    const res = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: `{ viewer { id } }`, variables: { pad: 'x'.repeat(5_000) } }),
    });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]!.extensions.code).toBe('BAD_REQUEST');
  });
});
