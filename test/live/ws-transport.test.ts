/**
 * The WebSocket transport's rules, over real sockets: the token in `connection_init`
 * (any case of the name; none is anonymous, a bad or expired one closes the socket with
 * 4403), the socket closed with 4403 when the token expires, each configured limit
 * refused with a clear error or close code while everything else keeps being served, malformed protocol messages, origins, the same
 * validation and cost limits as HTTP, and a consumer too slow to keep.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SignJWT } from 'jose';
import { authKey } from '../../src/graphql/auth.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { liveClient, waitFor, type LiveClient } from '../support/live-client.js';
import { scrape, valueOf } from '../support/prometheus.js';
import { TEST_AUTH_SECRET, startTestServer, type TestServer } from '../support/test-server.js';

const CREATE_USER = `mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`;
const CREATE_POST = `mutation ($content: String!) { createPost(input: { content: $content }) { post { id } } }`;
const POSTS_CHANGED = `subscription ($authorId: ID!) { postsChanged(authorId: $authorId) { cursor addedEdge { node { content } } } }`;
const SUSPENSIONS = `subscription { suspensionsChanged { cursor } }`;

/** A raw WebSocket on the server's /graphql (protocol graphql-transport-ws), and how it closed. */
function rawSocket(server: TestServer, headers: Record<string, string> = {}) {
  const socket = new WebSocket(server.url.replace(/^http/, 'ws'), 'graphql-transport-ws', { headers });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  const opened = new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const refused = new Promise<number>((resolve) => socket.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)));
  socket.on('error', () => undefined);
  return { socket, opened, closed, refused };
}

/** A server with the given environment, a user and their token. */
async function aServer(env: Record<string, string> = {}) {
  const server = await startTestServer({ env: { LIVE_POLL_MS: '50', CLOCK_SKEW_MS: '0', ...env } });
  const input = aUser();
  const token = await server.token(input.username);
  const created = await server.gql(CREATE_USER, { input }, token);
  return { server, token, authorId: created.data!.createUser.user.id as string };
}

describe('the WebSocket transport', () => {
  const clients: LiveClient[] = [];
  const servers: TestServer[] = [];
  const connect = (server: TestServer, options: Parameters<typeof liveClient>[1] = {}) => {
    const c = liveClient(server.url, options);
    clients.push(c);
    return c;
  };
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.dispose();
    for (const s of servers.splice(0)) await s.close();
  });

  it('reads the token from connection_init whatever the case of its name, and closes the socket with 4403 for a bad or expired token', async () => {
    const { server } = await aServer();
    servers.push(server);
    const admin = await server.token('root', { admin: true });
    const lower = connect(server, { params: { authorization: `Bearer ${admin}` } }).subscribe(SUSPENSIONS);
    await waitFor(() => server.app.services.live.subscriptions === 1, 5_000, 'the admin subscription');
    expect(lower.errors).toEqual([]);
    const expired = await new SignJWT({ roles: ['admin'] })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('root')
      .setExpirationTime(Math.floor(Date.now() / 1000) - 60)
      .sign(authKey(TEST_AUTH_SECRET));
    const refusals = [
      [`Bearer ${admin.slice(0, -4)}AAAA`, 'Forbidden: the token is invalid'],
      [`Bearer ${expired}`, 'Forbidden: the token has expired'],
      ['Basic cm9vdDpyb290', 'Forbidden: the Authorization header must be "Bearer <JWT>"'],
      [42, 'Forbidden: the Authorization header must be "Bearer <JWT>"'],
    ] as const;
    for (const [authorization, reason] of refusals) {
      const refused = connect(server, { params: { Authorization: authorization } });
      const sub = refused.subscribe(SUSPENSIONS);
      await waitFor(() => refused.closes.length > 0, 5_000, 'the socket to close');
      expect(refused.closes[0]).toEqual({ code: 4403, reason });
      expect(sub.values).toEqual([]);
    }
    // Only the admin's subscription was ever set up.
    expect(server.app.services.live.subscriptions).toBe(1);
  });

  it('keeps a socket without a token anonymous', async () => {
    const { server } = await aServer();
    servers.push(server);
    for (const params of [{}, { Authorization: '' }]) {
      const anonymous = connect(server, { params }).subscribe(SUSPENSIONS);
      await anonymous.ended();
      expect(anonymous.errors[0]).toMatchObject({ extensions: { code: 'UNAUTHENTICATED' } });
    }
  });

  it('closes a socket with 4403 when its token expires', async () => {
    const { server, authorId } = await aServer();
    servers.push(server);
    const shortLived = await server.token('root', { admin: true, expiresIn: '2s' });
    const client = connect(server, { token: shortLived });
    client.subscribe(POSTS_CHANGED, { authorId });
    await waitFor(() => client.closes.length > 0, 6_000, 'the socket to close');
    expect(client.closes[0]).toMatchObject({ code: 4403 });
  });

  it('refuses a subscription beyond LIVE_MAX_PER_SOCKET on that operation only', async () => {
    const { server, token, authorId } = await aServer({ LIVE_MAX_PER_SOCKET: '2' });
    servers.push(server);
    const client = connect(server);
    const kept = [client.subscribe(POSTS_CHANGED, { authorId }), client.subscribe(POSTS_CHANGED, { authorId })];
    await waitFor(() => server.app.services.live.subscriptions === 2, 5_000, 'two subscriptions');
    const third = client.subscribe(POSTS_CHANGED, { authorId });
    await third.ended();
    expect(third.errors[0]).toMatchObject({ extensions: { code: 'TOO_MANY_SUBSCRIPTIONS' } });
    await server.gql(CREATE_POST, { content: 'still served' }, token);
    for (const sub of kept) expect((await sub.next(1))[0]).toMatchObject({ postsChanged: { addedEdge: { node: { content: 'still served' } } } });
  });

  it('refuses a socket beyond LIVE_MAX_SOCKETS with 503, and one from an origin CORS_ORIGINS does not allow with 403 (but for its own)', async () => {
    const { server } = await aServer({ LIVE_MAX_SOCKETS: '1', CORS_ORIGINS: 'https://app.example.com' });
    servers.push(server);
    const first = rawSocket(server, { origin: 'https://app.example.com' });
    await first.opened;
    expect(await rawSocket(server).refused).toBe(503);
    first.socket.close();
    await first.closed;
    expect(await rawSocket(server, { origin: 'https://evil.example.com' }).refused).toBe(403);
    const allowed = rawSocket(server, { origin: 'https://app.example.com' });
    await allowed.opened;
    allowed.socket.close();
    await allowed.closed;
    // A page the server served itself (the playground) is same-origin: no CORS needed.
    const { host } = new URL(server.url);
    const own = rawSocket(server, { origin: `http://${host}` });
    expect(await Promise.race([own.opened.then(() => 'opened'), own.refused])).toBe('opened');
    own.socket.close();
    await own.closed;
    expect(await rawSocket(server, { origin: `http://${host}.evil.example.com` }).refused).toBe(403);
  });

  it('closes a socket that sends no connection_init in LIVE_INIT_TIMEOUT_MS (4408), a malformed message (4400), a subscribe before init (4401) and a message above LIVE_MAX_MESSAGE_BYTES (1009), and keeps serving others', async () => {
    const { server, token, authorId } = await aServer({ LIVE_INIT_TIMEOUT_MS: '300', LIVE_MAX_MESSAGE_BYTES: '2048' });
    servers.push(server);
    const healthy = connect(server).subscribe(POSTS_CHANGED, { authorId });
    await waitFor(() => server.app.services.live.subscriptions === 1, 5_000, 'the healthy subscription');

    const silent = rawSocket(server);
    await silent.opened;
    expect((await silent.closed).code).toBe(4408);

    const garbled = rawSocket(server);
    await garbled.opened;
    garbled.socket.send('{not json');
    expect((await garbled.closed).code).toBe(4400);

    const early = rawSocket(server);
    await early.opened;
    early.socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: SUSPENSIONS } }));
    expect((await early.closed).code).toBe(4401);

    const big = rawSocket(server);
    await big.opened;
    big.socket.send(JSON.stringify({ type: 'connection_init', payload: { padding: 'x'.repeat(4_096) } }));
    expect((await big.closed).code).toBe(1009);

    await server.gql(CREATE_POST, { content: 'after the noise' }, token);
    expect((await healthy.next(1))[0]).toMatchObject({ postsChanged: { addedEdge: { node: { content: 'after the noise' } } } });
  });

  it('applies the HTTP limits and error codes: queries refused, depth, cost and parse errors coded', async () => {
    const { server, authorId } = await aServer({ LIMIT_DEPTH: '4', LIMIT_COST: '50' });
    servers.push(server);
    const client = connect(server);
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['{ viewer { id } }', {}, 'BAD_REQUEST'],
      ['subscription { postsChanged(authorId: "x") {', {}, 'GRAPHQL_PARSE_FAILED'],
      ['subscription ($a: ID!) { postsChanged(authorId: $a) { addedEdge { node { author { posts { edges { node { id } } } } } } } }', { a: authorId }, 'GRAPHQL_VALIDATION_FAILED'],
      ['subscription ($a: ID!) { postsChanged(authorId: $a) { nosuchfield } }', { a: authorId }, 'GRAPHQL_VALIDATION_FAILED'],
      ['subscription ($a: ID!) { postsChanged(authorId: $a) { addedEdge { node { author { posts(first: 100) { edges { cursor } } } } } } }', { a: authorId }, 'GRAPHQL_VALIDATION_FAILED'],
      ['subscription ($a: ID!) { postsChanged(authorId: $a) { cursor } }', { a: 'not-an-id' }, 'BAD_USER_INPUT'],
    ];
    for (const [query, variables, code] of cases) {
      const sub = client.subscribe(query, variables);
      await sub.ended();
      expect(sub.errors[0], query).toMatchObject({ extensions: { code } });
    }
    // Refused operations, not sockets: the lazy client only ever closed normally (1000) when idle.
    expect(client.closes.filter((c) => c.code !== 1000)).toEqual([]);
  });

  it('closes a socket whose subscription falls more than LIVE_MAX_QUEUED changes behind (1013), and no other, and counts it', async () => {
    const { server, token, authorId } = await aServer({ LIVE_MAX_QUEUED: '3', LIVE_POLL_MS: '300', METRICS: 'true' });
    servers.push(server);
    const other = aUser();
    const otherToken = await server.token(other.username);
    const otherId = (await server.gql(CREATE_USER, { input: other }, otherToken)).data!.createUser.user.id as string;
    const slow = connect(server);
    slow.subscribe(POSTS_CHANGED, { authorId });
    const bystander = connect(server).subscribe(POSTS_CHANGED, { authorId: otherId });
    await waitFor(() => server.app.services.live.subscriptions === 2, 5_000, 'two subscriptions');
    // Ten changes in one poll: more than the subscription may have waiting at once.
    for (let i = 0; i < 10; i++) await server.gql(CREATE_POST, { content: `burst ${i}` }, token);
    await waitFor(() => slow.closes.length > 0, 5_000, 'the slow socket to close');
    expect(slow.closes[0]!.code).toBe(1013);
    const metrics = await scrape(server.url.replace(/\/graphql$/, ''));
    expect(valueOf(metrics, 'relay_live_sockets_closed_too_slow_total')).toBe(1);
    await server.gql(CREATE_POST, { content: 'unaffected' }, otherToken);
    expect((await bystander.next(1))[0]).toMatchObject({ postsChanged: { addedEdge: { node: { content: 'unaffected' } } } });
  });
});

describe('the WebSocket transport when the server stops', () => {
  let server: TestServer;
  let authorId: string;
  beforeAll(async () => {
    ({ server, authorId } = await aServer());
  });
  afterAll(async () => undefined);

  it('refuses new sockets and closes the open ones with 1001', async () => {
    const client = liveClient(server.url);
    client.subscribe(POSTS_CHANGED, { authorId });
    await waitFor(() => server.app.services.live.subscriptions === 1, 5_000, 'the subscription');
    await server.close();
    await waitFor(() => client.closes.length > 0, 5_000, 'the close');
    expect(client.closes[0]).toMatchObject({ code: 1001 });
    await client.dispose();
  });
});
