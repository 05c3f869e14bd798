/**
 * Budgets per principal and work that stops with its client, over real HTTP: a
 * principal over its budget gets 429, `Retry-After` and `RATE_LIMITED` and nothing of
 * its request runs; the budget resets; anonymous clients are told apart by address
 * (`X-Forwarded-For` only with `TRUST_PROXY`); `Query.rateLimit` and the RateLimit-*
 * headers agree; a request whose client disconnects starts no further store call.
 */
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';
import { liveClient, waitFor } from '../support/live-client.js';
import { describeEachStore } from '../support/stores.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const CREATE_USER = `mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`;
const CREATE_POST = `mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`;
const RATE_LIMIT = `{ rateLimit { limit cost remaining resetAt } }`;
const POSTS = `query ($u: String!) { userByUsername(username: $u) { posts(first: 5) { edges { node { content } } } } }`;

/** Records each store call (and when it started); delays them while `delayMs` is set. */
class RecordingStore extends StoreDecorator {
  readonly calls: Array<{ call: StoreCall; at: number }> = [];
  delayMs = 0;
  protected async around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    this.calls.push({ call, at: Date.now() });
    if (this.delayMs > 0) await sleep(this.delayMs);
    return run();
  }
  /** Calls since index `from` on the tables a timeline request reads (background jobs touch none). */
  requestCalls(from = 0): Array<{ call: StoreCall; at: number }> {
    return this.calls.slice(from).filter(({ call }) => call.tables.some((t) => /^(timeline|users)/.test(t)));
  }
}

/** POST a query with extra headers; the status, headers and body. */
async function post(url: string, query: string, options: { token?: string; headers?: Record<string, string>; variables?: object } = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(options.token ? { authorization: `Bearer ${options.token}` } : {}), ...options.headers },
    body: JSON.stringify({ query, variables: options.variables }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as { data?: any; errors?: Array<{ message: string; extensions: Record<string, unknown> }> } };
}

describeEachStore('budgets per principal over HTTP', (target) => {
  let server: TestServer;
  let recording: RecordingStore;
  let token: string;
  const username = aUser().username;

  beforeAll(async () => {
    server = await startTestServer({
      target,
      wrap: (store) => (recording = new RecordingStore(store)),
      env: { RATE_LIMIT_POINTS: '40', RATE_LIMIT_WINDOW_S: '2', TRUST_PROXY: 'true' },
    });
    token = await server.token(username);
    // The setup spends this user's budget; the tests below start from a fresh window.
    expect((await server.gql(CREATE_USER, { input: { username, displayName: 'Budget' } }, token)).errors).toBeUndefined();
    expect((await server.gql(CREATE_POST, { c: 'first' }, token)).errors).toBeUndefined();
    await sleep(2_100);
  });
  afterAll(() => server.close());

  it('tells its budget in Query.rateLimit and in the RateLimit headers, which agree', async () => {
    const first = await post(server.url, RATE_LIMIT, { token });
    expect(first.status).toBe(200);
    const status = first.body.data!.rateLimit;
    expect(status).toMatchObject({ limit: 40, cost: 5, remaining: 35 });
    const resetIn = (Date.parse(status.resetAt) - Date.now()) / 1000;
    expect(resetIn).toBeGreaterThan(0);
    expect(resetIn).toBeLessThanOrEqual(2);
    expect(first.headers.get('ratelimit-limit')).toBe('40');
    expect(first.headers.get('ratelimit-remaining')).toBe('35');
    expect(Number(first.headers.get('ratelimit-reset'))).toBe(Math.max(1, Math.ceil(resetIn)));
    const second = await post(server.url, RATE_LIMIT, { token });
    expect(second.body.data!.rateLimit).toMatchObject({ limit: 40, cost: 5, remaining: 30, resetAt: status.resetAt });
    expect(second.headers.get('ratelimit-remaining')).toBe('30');
  });

  it('refuses a request over the budget with 429, Retry-After and RATE_LIMITED, and runs nothing of it', async () => {
    await sleep(2_100);
    // 40 points: the posts query costs more than the 5 that remain after seven of these.
    for (let i = 0; i < 7; i++) expect((await post(server.url, RATE_LIMIT, { token })).status).toBe(200);
    const before = await server.dump();
    const mark = recording.calls.length;
    // Costs 8: more than the 5 left.
    const costly = `mutation ($c: String!) { createPost(input: { content: $c }) { post { id content createdAt author { id username } } } }`;
    const refused = await post(server.url, costly, { token, variables: { c: 'over budget' } });
    expect(refused.status).toBe(429);
    expect(refused.body.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'RATE_LIMITED' }) })]);
    expect(refused.body.data).toBeUndefined();
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(2);
    expect(refused.headers.get('ratelimit-remaining')).toBe('5');
    // Once refused, refused until the reset, even a request that would fit (answered before it is read).
    const again = await post(server.url, RATE_LIMIT, { token });
    expect(again.status).toBe(429);
    expect(again.body.errors?.[0]?.extensions.code).toBe('RATE_LIMITED');
    expect(again.headers.get('retry-after')).not.toBeNull();
    expect(recording.requestCalls(mark)).toEqual([]);
    expect(await server.dump()).toEqual(before);
  });

  it('resets the budget when the window ends', async () => {
    const refused = await post(server.url, RATE_LIMIT, { token });
    expect(refused.status).toBe(429);
    await sleep(Number(refused.headers.get('retry-after')) * 1000 + 100);
    const served = await post(server.url, RATE_LIMIT, { token });
    expect(served.status).toBe(200);
    expect(served.body.data!.rateLimit).toMatchObject({ limit: 40, cost: 5, remaining: 35 });
  });

  it('tells anonymous clients apart by address, with X-Forwarded-For counted only as TRUST_PROXY says', async () => {
    const from = (address: string) => ({ headers: { 'x-forwarded-for': `198.51.100.7, ${address}` } });
    for (let i = 0; i < 8; i++) expect((await post(server.url, RATE_LIMIT, from('203.0.113.1'))).status).toBe(200);
    expect((await post(server.url, RATE_LIMIT, from('203.0.113.1'))).status).toBe(429);
    // Another address (the last entry, the proxy's own) has a budget of its own; the first entry is the client's to forge.
    const other = await post(server.url, RATE_LIMIT, from('203.0.113.2'));
    expect(other.status).toBe(200);
    expect(other.body.data!.rateLimit.remaining).toBe(35);

    const direct = await startTestServer({ target, env: { RATE_LIMIT_POINTS: '10', RATE_LIMIT_WINDOW_S: '60' } });
    try {
      expect((await post(direct.url, RATE_LIMIT, from('203.0.113.3'))).status).toBe(200);
      expect((await post(direct.url, RATE_LIMIT, from('203.0.113.3'))).status).toBe(200);
      // Without TRUST_PROXY the header is ignored: every one of these is 127.0.0.1.
      const same = await post(direct.url, RATE_LIMIT, from('203.0.113.4'));
      expect(same.status).toBe(429);
      expect(same.body.errors?.[0]?.extensions.code).toBe('RATE_LIMITED');
    } finally {
      await direct.close();
    }
  }, target.ddlTimeoutMs);

  it('charges a subscription its query cost when it starts, nothing for the changes it delivers, and refuses it over the budget', async () => {
    const subscription = `subscription ($a: ID!) { postsChanged(authorId: $a) { cursor addedEdge { node { id content } } } }`;
    const me = await post(server.url, `{ viewer { id } }`, { token });
    const authorId = me.body.data!.viewer.id as string;
    await sleep(2_100);
    const client = liveClient(server.url, { token });
    try {
      const changes = client.subscribe(subscription, { a: authorId });
      await waitFor(() => server.app.services.live.subscriptions === 1, 5_000, 'the subscription');
      // 6 for the subscription's start, 5 for this look: 29 of 40 left.
      const charged = await post(server.url, RATE_LIMIT, { token });
      expect(charged.body.data!.rateLimit.remaining).toBe(29);
      expect((await server.gql(CREATE_POST, { c: 'seen live' }, token)).errors).toBeUndefined();
      expect((await changes.next(1, 5_000))[0]).toMatchObject({ postsChanged: { addedEdge: { node: { content: 'seen live' } } } });
      // The post cost 3; the delivered change nothing.
      expect((await post(server.url, RATE_LIMIT, { token })).body.data!.rateLimit.remaining).toBe(21);
      for (let i = 0; i < 5; i++) await post(server.url, RATE_LIMIT, { token });
      const refused = client.subscribe(subscription, { a: authorId });
      await refused.ended(5_000);
      expect(refused.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'RATE_LIMITED' }) })]);
      changes.stop();
    } finally {
      await client.dispose();
    }
  });

  it('stops the store calls of a request whose client disconnects', async () => {
    // A mutation's fields run one after another: many sequential store calls.
    const chain = `mutation { ${Array.from({ length: 8 }, (_, i) => `p${i}: createPost(input: { content: "chained ${i}" }) { post { id } }`).join(' ')} }`;
    await sleep(2_100);
    recording.delayMs = 60;
    try {
      const mark = recording.calls.length;
      const whole = await post(server.url, chain, { token });
      expect(whole.body.errors).toBeUndefined();
      const served = recording.requestCalls(mark).length;
      expect(served).toBeGreaterThanOrEqual(8);

      // A fresh window: the chain costs 24 of the 40 points.
      await sleep(2_100);
      const start = recording.calls.length;
      let abortedAt = 0;
      await new Promise<void>((resolve) => {
        const url = new URL(server.url);
        const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` } });
        req.on('error', () => resolve());
        req.end(JSON.stringify({ query: chain }));
        // Gone after about two of the chain's reads.
        setTimeout(() => {
          abortedAt = Date.now();
          req.destroy();
          resolve();
        }, 150);
      });
      await sleep(served * 60 + 500);
      const calls = recording.requestCalls(start);
      expect(calls.length).toBeGreaterThan(0);
      expect(calls.length).toBeLessThan(served);
      // None started once the server saw the socket close (a few ms after the client closed it).
      expect(calls.filter(({ at }) => at > abortedAt + 30)).toEqual([]);
    } finally {
      recording.delayMs = 0;
    }
  });
});

/** A test server on the embedded store over a `RecordingStore`, started before the block's tests and closed after them. */
function recordedServer(env: Record<string, string>): { server: TestServer; recording: RecordingStore } {
  const held = {} as { server: TestServer; recording: RecordingStore };
  beforeAll(async () => {
    held.server = await startTestServer({ wrap: (store) => (held.recording = new RecordingStore(store)), env });
  });
  afterAll(() => held.server.close());
  return held;
}

describe('load shedding over HTTP', () => {
  const held = recordedServer({ MAX_IN_FLIGHT: '1', MAX_QUEUED: '0', QUEUE_TIMEOUT_MS: '2000' });

  it('answers 503 with Retry-After and UNAVAILABLE, saying the server is busy, past MAX_IN_FLIGHT and the queue; then serves again', async () => {
    const query = `{ userByUsername(username: "nobody") { id } }`;
    held.recording.delayMs = 300;
    try {
      const slow = post(held.server.url, query);
      await sleep(100);
      const busy = await post(held.server.url, query);
      expect(busy.status).toBe(503);
      expect(busy.headers.get('retry-after')).toBe('1');
      expect(busy.body.errors).toEqual([{ message: expect.stringMatching(/server is busy/), extensions: { code: 'UNAVAILABLE' } }]);
      expect((await slow).status).toBe(200);
    } finally {
      held.recording.delayMs = 0;
    }
    const after = await post(held.server.url, query);
    expect(after.status).toBe(200);
    expect(after.body.data).toEqual({ userByUsername: null });
  });
});

describe('budgets and the cap both off over HTTP', () => {
  const held = recordedServer({ RATE_LIMIT_POINTS: '0', MAX_IN_FLIGHT: '0', METRICS: 'true' });

  it('serves signed-in and anonymous requests without RateLimit headers, refuses a bad token, and still counts requests in flight', async () => {
    const username = aUser().username;
    const token = await held.server.token(username);
    const signedIn = await post(held.server.url, `{ viewer { username } }`, { token });
    expect(signedIn.status).toBe(200);
    // Signed in, with no user row yet: no viewer, and no error.
    expect(signedIn.body).toEqual({ data: { viewer: null }, extensions: expect.any(Object) });
    expect(signedIn.headers.get('ratelimit-limit')).toBeNull();
    const anonymous = await post(held.server.url, `{ viewer { username } }`);
    expect(anonymous.body).toMatchObject({ data: { viewer: null } });
    expect(anonymous.headers.get('ratelimit-limit')).toBeNull();
    const bad = await post(held.server.url, `{ viewer { username } }`, { token: `${token}x` });
    expect(bad.body.errors?.[0]?.extensions.code).toBe('UNAUTHENTICATED');
    // A request held in the store is in flight while the gauge is read.
    held.recording.delayMs = 400;
    try {
      const slow = post(held.server.url, `{ userByUsername(username: "nobody") { id } }`);
      await sleep(150);
      const metrics = await (await fetch(held.server.url.replace(/\/graphql$/, '/metrics'))).text();
      expect(metrics).toMatch(/^relay_requests_in_flight 1$/m);
      expect((await slow).body.data).toEqual({ userByUsername: null });
    } finally {
      held.recording.delayMs = 0;
    }
  });
});
