/**
 * What one request may take (issue 16, defects 3, 4 and 5): a response above
 * MAX_RESPONSE_BYTES is refused, a reader that does not drain loses its socket after
 * WRITE_TIMEOUT_MS, execution stops starting store calls at REQUEST_TIMEOUT_MS and
 * answers TIMEOUT, and variables nested 100,000 levels deep are a 400, not a crash.
 */
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { SlowStore } from '../support/faulty-store.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

/** A server holding one user with 100 posts of 5,000 characters (500 KB of content). */
async function serverWithBigTimeline(env: Record<string, string> = {}) {
  const server = await startTestServer({ env: { LIST_APPLIER: 'false', ...env } });
  const input = aUser();
  const admin = await server.token('root', { admin: true });
  const created = await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input }, admin);
  const token = await server.token(input.username);
  for (let i = 0; i < 100; i++) {
    const res = await server.gql(`mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`, { c: `${i}`.padEnd(5_000, 'x') }, token);
    expect(res.errors).toBeUndefined();
  }
  return { server, username: input.username, userId: created.data!.createUser.user.id as string };
}

describe('response size', () => {
  let fixture: Awaited<ReturnType<typeof serverWithBigTimeline>>;
  beforeAll(async () => {
    fixture = await serverWithBigTimeline();
  });
  afterAll(() => fixture.server.close());

  const timeline = (aliases: number) =>
    `query ($u: String!) { userByUsername(username: $u) { ${Array.from({ length: aliases }, (_, i) => `p${i}: posts(first: 100) { edges { node { content } } }`).join(' ')} } }`;

  it('refuses a response above MAX_RESPONSE_BYTES (4 MB by default), saying so', async () => {
    const res = await fixture.server.gql(timeline(15), { u: fixture.username });
    expect(res.status).toBe(400);
    expect(res.data).toBeUndefined();
    expect(res.errors).toHaveLength(1);
    expect(res.errors![0]!.extensions).toEqual({ code: 'RESPONSE_TOO_LARGE' });
    expect(res.errors![0]!.message).toMatch(/^the response is 75\d{5} bytes, above the limit of 4000000 \(MAX_RESPONSE_BYTES\): ask for fewer fields or smaller pages$/);
  });

  it('sends a response below the limit', async () => {
    const res = await fixture.server.gql(timeline(1), { u: fixture.username });
    expect(res.status).toBe(200);
    expect(res.data!.userByUsername.p0.edges).toHaveLength(100);
  });
});

describe('a reader that does not drain', () => {
  let fixture: Awaited<ReturnType<typeof serverWithBigTimeline>>;
  beforeAll(async () => {
    fixture = await serverWithBigTimeline({ MAX_RESPONSE_BYTES: '100000000', LIMIT_COST: '1000000', WRITE_TIMEOUT_MS: '1000' });
  });
  afterAll(() => fixture.server.close());

  it('loses its socket after WRITE_TIMEOUT_MS', async () => {
    // 50 MB of answer: far more than the loopback socket buffers take.
    const ids = JSON.stringify(Array.from({ length: 100 }, () => fixture.userId));
    const body = JSON.stringify({ query: `{ nodes(ids: ${ids}) { ... on User { posts(first: 100) { edges { node { content } } } } } }` });
    const url = new URL(fixture.server.url);
    const accepted = new Promise<Socket>((resolve) => fixture.server.app.httpServer.once('connection', resolve));
    const socket = connect(Number(url.port), url.hostname);
    socket.on('error', () => undefined);
    socket.pause(); // never read
    socket.write(
      `POST /graphql HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    const serverSide = await accepted;
    // The answer is computed, then stuck in the server's buffers: the kernel's are full.
    const started = Date.now();
    while (serverSide.writableLength === 0 && Date.now() - started < 20_000) await sleep(20);
    const stuckAt = Date.now();
    expect(serverSide.writableLength).toBeGreaterThan(1_000_000);
    expect(serverSide.destroyed).toBe(false);
    // Then the write timeout (1 s here) closes the socket and frees them.
    while (!serverSide.destroyed && Date.now() - stuckAt < 5_000) await sleep(20);
    expect(serverSide.destroyed).toBe(true);
    expect(Date.now() - stuckAt).toBeGreaterThan(800);
    socket.destroy();
  }, 60_000);
});

describe('execution deadline', () => {
  let server: TestServer;
  let slow: SlowStore;
  let token: string;
  beforeAll(async () => {
    server = await startTestServer({ env: { LIST_APPLIER: 'false', REQUEST_TIMEOUT_MS: '1000' }, wrap: (s) => (slow = new SlowStore(s, 0)) });
    const input = aUser();
    const admin = await server.token('root', { admin: true });
    await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input }, admin);
    token = await server.token(input.username);
  });
  afterAll(() => server.close());

  it('starts no store call after REQUEST_TIMEOUT_MS and answers TIMEOUT', async () => {
    slow.delayMs = 150;
    // Fifteen mutations run one after the other: well over 2 s of store calls.
    const mutation = `mutation { ${Array.from({ length: 15 }, (_, i) => `m${i}: createPost(input: { content: "post ${i}" }) { post { id } }`).join(' ')} }`;
    const started = Date.now();
    const res = await server.gql(mutation, {}, token);
    const took = Date.now() - started;
    slow.delayMs = 0;
    expect(took).toBeLessThan(1_500);
    expect(slow.lastStartedAt - started).toBeLessThan(1_050);
    const codes = new Set(res.errors?.map((e) => e.extensions?.code));
    expect([...codes]).toEqual(['TIMEOUT']);
    expect(res.errors![0]!.message).toMatch(/took longer than 1000 ms \(REQUEST_TIMEOUT_MS\)/);
    // What ran before the deadline is answered and stored; nothing after it.
    const done = Object.values(res.data ?? {}).filter((v) => v !== null).length;
    expect(done).toBeGreaterThan(0);
    expect(done).toBeLessThan(15);
    const me = await server.gql(`{ viewer { posts(first: 20) { edges { node { content } } } } }`, {}, token);
    expect(me.data!.viewer.posts.edges).toHaveLength(done);
  });
});

describe('deeply nested variables', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { LIST_APPLIER: 'false' } });
  });
  afterAll(() => server.close());

  const deep = (n: number) => `{"query":"{ viewer { id } }","variables":{"v":${'['.repeat(n)}${']'.repeat(n)}}}`;

  it('answers variables nested 100,000 levels deep with a 400 that says why', async () => {
    for (const n of [100_000, 1_000, 40]) {
      const res = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: deep(n) });
      expect(res.status, `${n}`).toBe(400);
      expect(await res.json()).toEqual({ errors: [{ message: "the request's JSON is nested deeper than 32 levels", extensions: { code: 'BAD_REQUEST' } }] });
    }
  });

  it('answers the same over GET', async () => {
    // (A GET's URL is bounded by the header size limit: 1,000 levels is what fits.)
    const search = new URLSearchParams({ query: '{ viewer { id } }', variables: `{"v":${'['.repeat(1_000)}${']'.repeat(1_000)}}` });
    const res = await fetch(`${server.url}?${search}`, { headers: { 'apollo-require-preflight': 'true' } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]!.extensions.code).toBe('BAD_REQUEST');
  });

  it('lets ordinary nesting through', async () => {
    const res = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: deep(20) });
    expect(res.status).toBe(200);
  });
});
