/**
 * `postsChanged` over a real WebSocket with the graphql-ws client, on every store:
 * added and deleted posts arrive once, in order, as edges of `User.posts` (the same
 * cursors a page gives); resuming with a change's cursor, or with a `posts` cursor,
 * misses nothing and repeats nothing.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { liveClient, waitFor, type LiveClient } from '../support/live-client.js';
import { describeEachStore } from '../support/stores.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const CREATE_USER = `mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`;
const CREATE_POST = `mutation ($content: String!) { createPost(input: { content: $content }) { post { id } } }`;
const DELETE_POST = `mutation ($id: ID!) { deletePost(input: { id: $id }) { deletedPostId } }`;
const POSTS = `query ($username: String!) { userByUsername(username: $username) { posts(first: 50) { edges { cursor node { id content } } pageInfo { startCursor } } } }`;
const POSTS_CHANGED = `subscription ($authorId: ID!, $after: String) {
  postsChanged(authorId: $authorId, after: $after) {
    cursor
    addedEdge { cursor node { id content author { username } } }
    deletedPostId
  }
}`;

interface PostsChange {
  postsChanged: {
    cursor: string;
    addedEdge: { cursor: string; node: { id: string; content: string; author: { username: string } } } | null;
    deletedPostId: string | null;
  };
}

describeEachStore('postsChanged over WebSocket', (target) => {
  let server: TestServer;
  let token: string;
  let authorId: string;
  const username = aUser().username;
  const clients: LiveClient[] = [];
  const subscribed = (n: number) => waitFor(() => server.app.services.live.subscriptions === n, 5_000, `${n} subscriptions on the server`);
  const connect = (t?: string) => {
    const c = liveClient(server.url, { token: t });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    // One process, one clock: no skew to allow for, so a subscription starts exactly now.
    server = await startTestServer({ target, env: { LIVE_POLL_MS: '50', CLOCK_SKEW_MS: '0' } });
    token = await server.token(username);
    const created = await server.gql(CREATE_USER, { input: { username, displayName: 'Live Author' } }, token);
    authorId = created.data!.createUser.user.id;
  });

  afterAll(async () => {
    for (const c of clients) await c.dispose();
    await server.close();
  });

  it('delivers each added post as an edge of User.posts, and its deletion after it', async () => {
    const sub = connect().subscribe<PostsChange>(POSTS_CHANGED, { authorId });
    // Subscribing starts now: wait until the server holds the subscription.
    await subscribed(1);
    const first = await server.gql(CREATE_POST, { content: 'live one' }, token);
    const second = await server.gql(CREATE_POST, { content: 'live two' }, token);
    const firstId = first.data!.createPost.post.id as string;
    await server.gql(DELETE_POST, { id: firstId }, token);

    const changes = (await sub.next(3)).map((c) => c.postsChanged);
    expect(changes.map((c) => c.addedEdge?.node.content ?? `deleted ${c.deletedPostId}`)).toEqual(['live one', 'live two', `deleted ${firstId}`]);
    expect(changes[1]!.addedEdge!.node).toEqual({ id: second.data!.createPost.post.id, content: 'live two', author: { username } });
    // The edge's cursor is the very cursor a page of User.posts gives the post.
    const page = await server.gql(POSTS, { username });
    const pageCursor = page.data!.userByUsername.posts.edges.find((e: { node: { id: string } }) => e.node.id === changes[1]!.addedEdge!.node.id).cursor;
    expect(changes[1]!.addedEdge!.cursor).toBe(pageCursor);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(sub.values).toHaveLength(3);
    sub.stop();
    await subscribed(0);
  });

  it('resumes after a change cursor with every later change once, and after a posts cursor with everything newer', async () => {
    const a = connect().subscribe<PostsChange>(POSTS_CHANGED, { authorId });
    await subscribed(1);
    for (const content of ['r1', 'r2']) await server.gql(CREATE_POST, { content }, token);
    const got = await a.next(2);
    a.stop();
    for (const content of ['r3', 'r4']) await server.gql(CREATE_POST, { content }, token);

    const resumed = connect().subscribe<PostsChange>(POSTS_CHANGED, { authorId, after: got[0]!.postsChanged.cursor });
    const after = (await resumed.next(3)).map((c) => c.postsChanged.addedEdge!.node.content);
    expect(after).toEqual(['r2', 'r3', 'r4']);

    const page = await server.gql(POSTS, { username });
    const edges = page.data!.userByUsername.posts.edges as Array<{ cursor: string; node: { content: string } }>;
    const r2 = edges.find((e) => e.node.content === 'r2')!;
    const fromPage = connect().subscribe<PostsChange>(POSTS_CHANGED, { authorId, after: r2.cursor });
    expect((await fromPage.next(2)).map((c) => c.postsChanged.addedEdge!.node.content)).toEqual(['r3', 'r4']);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(resumed.values).toHaveLength(3);
    expect(fromPage.values).toHaveLength(2);
    resumed.stop();
    fromPage.stop();
    await subscribed(0);
  });

  it('refuses a malformed or foreign cursor with BAD_USER_INPUT, and an unknown author with NOT_FOUND', async () => {
    const c = connect();
    const bad = c.subscribe(POSTS_CHANGED, { authorId, after: 'not-a-cursor' });
    await bad.ended();
    expect(bad.errors[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', argumentName: 'after' } });
    const unknown = c.subscribe(POSTS_CHANGED, { authorId: Buffer.from(`User:${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`).toString('base64') });
    await unknown.ended();
    expect(unknown.errors[0]).toMatchObject({ extensions: { code: 'NOT_FOUND' } });
  });
});
