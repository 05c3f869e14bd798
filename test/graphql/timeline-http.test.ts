/**
 * The timeline over HTTP on the embedded store: paging forward to the end and back to
 * the start with exact pageInfo at every step; bad paging arguments answer
 * BAD_USER_INPUT, read nothing and change nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

const POSTS = `
  query Posts($username: String!, $first: Int, $after: String, $last: Int, $before: String) {
    userByUsername(username: $username) {
      posts(first: $first, after: $after, last: $last, before: $before) {
        edges { cursor node { id content author { username } } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }
  }`;

const CREATE_USER = `mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id username } clientMutationId } }`;
const CREATE_POST = `mutation ($input: CreatePostInput!) { createPost(input: $input) { post { id content createdAt } } }`;

type PostsPage = {
  edges: Array<{ cursor: string; node: { id: string; content: string; author: { username: string } } }>;
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
};

describeEachStore('the timeline over HTTP', (target) => {
  let server: TestServer;
  let token: string;
  const username = aUser().username;
  const TOTAL = 23;
  // Newest first: post #23 .. post #1.
  const expectedOrder = Array.from({ length: TOTAL }, (_, i) => `post #${TOTAL - i}`);

  beforeAll(async () => {
    server = await startTestServer({ target });
    token = await server.token(username);
    const created = await server.gql(CREATE_USER, { input: { username, displayName: 'Paging Tester', clientMutationId: 'c1' } }, token);
    expect(created.data?.createUser).toMatchObject({ user: { username }, clientMutationId: 'c1' });
    for (let i = 1; i <= TOTAL; i++) {
      const res = await server.gql(CREATE_POST, { input: { content: `post #${i}` } }, token);
      expect(res.errors).toBeUndefined();
    }
  });

  afterAll(() => server.close());

  async function page(args: Record<string, unknown>): Promise<PostsPage> {
    const res = await server.gql<{ userByUsername: { posts: PostsPage } }>(POSTS, { username, ...args });
    expect(res.errors).toBeUndefined();
    return res.data!.userByUsername.posts;
  }

  it('pages forward to the end and back to the start with exact pageInfo at every step', async () => {
    const forward: Array<{ contents: string[]; hasPreviousPage: boolean; hasNextPage: boolean }> = [];
    let p = await page({ first: 10 });
    const pages: PostsPage[] = [p];
    forward.push({ contents: p.edges.map((e) => e.node.content), ...flags(p) });
    while (p.pageInfo.hasNextPage) {
      p = await page({ first: 10, after: p.pageInfo.endCursor });
      pages.push(p);
      forward.push({ contents: p.edges.map((e) => e.node.content), ...flags(p) });
    }
    expect(forward).toEqual([
      { contents: expectedOrder.slice(0, 10), hasPreviousPage: false, hasNextPage: true },
      { contents: expectedOrder.slice(10, 20), hasPreviousPage: true, hasNextPage: true },
      { contents: expectedOrder.slice(20), hasPreviousPage: true, hasNextPage: false },
    ]);
    for (const q of pages) {
      expect(q.pageInfo.startCursor).toBe(q.edges[0]!.cursor);
      expect(q.pageInfo.endCursor).toBe(q.edges[q.edges.length - 1]!.cursor);
    }

    // Backward from the last page's start to the very beginning.
    const backward: Array<{ contents: string[]; hasPreviousPage: boolean; hasNextPage: boolean }> = [];
    p = pages[2]!;
    while (p.pageInfo.hasPreviousPage) {
      p = await page({ last: 10, before: p.pageInfo.startCursor });
      backward.push({ contents: p.edges.map((e) => e.node.content), ...flags(p) });
    }
    expect(backward).toEqual([
      { contents: expectedOrder.slice(10, 20), hasPreviousPage: true, hasNextPage: true },
      { contents: expectedOrder.slice(0, 10), hasPreviousPage: false, hasNextPage: true },
    ]);
    // The same row gives the same cursor text in both directions.
    expect(p.edges.map((e) => e.cursor)).toEqual(pages[0]!.edges.map((e) => e.cursor));
  });

  it('pages backward from the end with last alone', async () => {
    const p = await page({ last: 4 });
    expect(p.edges.map((e) => e.node.content)).toEqual(expectedOrder.slice(-4));
    expect(flags(p)).toEqual({ hasPreviousPage: true, hasNextPage: false });
  });

  it('returns the same pages after a deleted cursor row, settling the flag', async () => {
    const first = await page({ first: 5 });
    const cursorRow = first.edges[4]!;
    const del = await server.gql(
      `mutation ($input: DeletePostInput!) { deletePost(input: $input) { deletedPostId } }`,
      { input: { id: cursorRow.node.id } },
      token,
    );
    expect(del.data?.deletePost).toEqual({ deletedPostId: cursorRow.node.id });
    const next = await page({ first: 5, after: cursorRow.cursor });
    expect(next.edges.map((e) => e.node.content)).toEqual(expectedOrder.slice(5, 10));
    expect(flags(next)).toEqual({ hasPreviousPage: true, hasNextPage: true });
    const back = await page({ last: 5, before: next.pageInfo.startCursor });
    expect(back.edges.map((e) => e.node.content)).toEqual(expectedOrder.slice(0, 4));
    expect(flags(back)).toEqual({ hasPreviousPage: false, hasNextPage: true });
  });

  describe('bad paging arguments', () => {
    const cases: Array<[string, Record<string, unknown>, string, string]> = [
      ['a malformed cursor', { first: 5, after: 'bm90LWEtY3Vyc29y' }, 'after', '`after` is not a valid cursor'],
      ['a forged cursor', { last: 5, before: 'A'.repeat(60) }, 'before', '`before` is not a valid cursor'],
      ['first: -1', { first: -1 }, 'first', '`first` must be between 0 and 100, got -1'],
      ['first: 101', { first: 101 }, 'first', '`first` must be between 0 and 100, got 101'],
      ['first with last', { first: 2, last: 2 }, 'last', 'Passing both `first` and `last` to paginate the `posts` connection is not supported.'],
    ];
    for (const [what, args, argumentName, message] of cases) {
      it(`answers BAD_USER_INPUT for ${what}, reading and changing nothing`, async () => {
        const before = await server.dump();
        const res = await server.gql(POSTS, { username, ...args });
        expect(res.status).toBe(200);
        expect(res.data).toEqual({ userByUsername: null });
        expect(res.errors).toHaveLength(1);
        expect(res.errors![0]!.message).toContain(message);
        expect(res.errors![0]!.extensions).toEqual({ code: 'BAD_USER_INPUT', argumentName });
        // Two reads resolve the user; the connection itself read nothing.
        expect(res.extensions?.storeRoundTrips).toBe(2);
        expect(await server.dump()).toEqual(before);
      });
    }

    it('refuses a cursor taken from another user\'s connection', async () => {
      const other = aUser().username;
      const t = await server.token(other);
      await server.gql(CREATE_USER, { input: { username: other, displayName: 'Other' } }, t);
      await server.gql(CREATE_POST, { input: { content: 'hello' } }, t);
      const theirs = await server.gql<{ userByUsername: { posts: PostsPage } }>(POSTS, { username: other, first: 1 });
      const foreign = theirs.data!.userByUsername.posts.pageInfo.endCursor;
      const res = await server.gql(POSTS, { username, first: 5, after: foreign });
      expect(res.errors![0]!.extensions).toEqual({ code: 'BAD_USER_INPUT', argumentName: 'after' });
    });
  });
});

function flags(p: PostsPage) {
  return { hasPreviousPage: p.pageInfo.hasPreviousPage, hasNextPage: p.pageInfo.hasNextPage };
}
