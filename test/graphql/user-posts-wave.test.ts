/**
 * `userByUsername { posts }` reads the user's row and the page of posts in one wave: the
 * page starts beside the row (both need only the user's id), `User.posts` takes it, and
 * nothing is read twice. Aliases, fragments and bad arguments answer as before.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import type { StoreCall } from '../../src/store/store-decorator.js';
import { RendezvousStore } from '../support/faulty-store.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

const CREATE_USER = `mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id username } } }`;
const CREATE_POST = `mutation ($input: CreatePostInput!) { createPost(input: $input) { post { id } } }`;
const PAGE = `query ($username: String!, $first: Int) { userByUsername(username: $username) { displayName posts(first: $first) {
  edges { node { content author { username } } } pageInfo { hasNextPage hasPreviousPage } } } }`;

/** The user's row read and the timeline slice: in one wave, each starts before the other answers. */
const rowOrPage = (call: StoreCall) =>
  ((call.operation === 'get' || call.operation === 'getMany') && call.table === 'users') || (call.operation === 'slice' && call.table === 'timeline');

describeEachStore('a user and their posts in one wave', (target) => {
  let server: TestServer;
  let meeting: RendezvousStore;
  let token: string;
  const username = aUser().username;

  beforeAll(async () => {
    server = await startTestServer({ target, wrap: (s) => (meeting = new RendezvousStore(s)) });
    token = await server.token(username);
    const created = await server.gql(CREATE_USER, { input: { username, displayName: 'Wave Tester' } }, token);
    expect(created.errors).toBeUndefined();
    for (let i = 1; i <= 3; i++) expect((await server.gql(CREATE_POST, { input: { content: `post #${i}` } }, token)).errors).toBeUndefined();
  });

  afterAll(() => server.close());

  it("reads the user's row and the page together, each once", async () => {
    // Each waits (3 s at most) until the other has started: `met` only if both were in flight together.
    meeting.arm(2, rowOrPage, 3_000);
    const res = await server.gql(PAGE, { username, first: 2 });
    expect(meeting.met).toBe(true);
    expect(res).toEqual({
      data: {
        userByUsername: {
          displayName: 'Wave Tester',
          posts: {
            edges: [
              { node: { content: 'post #3', author: { username } } },
              { node: { content: 'post #2', author: { username } } },
            ],
            pageInfo: { hasNextPage: true, hasPreviousPage: false },
          },
        },
      },
      // The name's id, the user's row, the page: three round trips, the page not read again.
      extensions: { storeRoundTrips: 3, storeStatements: 3 },
      status: 200,
    });
  });

  it('takes each request\'s own arguments, from its variables or, written in the query, the same every time', async () => {
    const contents = (res: { data?: any }) => res.data.userByUsername.posts.edges.map((e: { node: { content: string } }) => e.node.content);
    expect(contents(await server.gql(PAGE, { username, first: 1 }))).toEqual(['post #3']);
    expect(contents(await server.gql(PAGE, { username, first: 3 }))).toEqual(['post #3', 'post #2', 'post #1']);
    const literal = `query ($username: String!) { userByUsername(username: $username) { posts(first: 2) { edges { node { content } } } } }`;
    for (let i = 0; i < 2; i++) {
      meeting.arm(2, rowOrPage, 3_000);
      const res = await server.gql(literal, { username });
      expect(meeting.met).toBe(true);
      expect(contents(res)).toEqual(['post #3', 'post #2']);
      expect(res.extensions).toEqual({ storeRoundTrips: 3, storeStatements: 3 });
    }
  });

  it('reads no page for a username no one has', async () => {
    const res = await server.gql(PAGE, { username: aUser().username, first: 2 });
    expect(res).toEqual({ data: { userByUsername: null }, extensions: { storeRoundTrips: 1, storeStatements: 1 }, status: 200 });
  });

  it('answers two aliased pages of posts, each with its own arguments', async () => {
    const res = await server.gql(
      `query ($username: String!) { userByUsername(username: $username) {
        newest: posts(first: 1) { edges { node { content } } }
        oldest: posts(last: 1) { edges { node { content } } } } }`,
      { username },
    );
    expect(res.errors).toBeUndefined();
    expect(res.data).toEqual({ userByUsername: { newest: { edges: [{ node: { content: 'post #3' } }] }, oldest: { edges: [{ node: { content: 'post #1' } }] } } });
  });

  it('answers posts selected through a fragment', async () => {
    const res = await server.gql(
      `query ($username: String!) { userByUsername(username: $username) { ...P } } fragment P on User { posts(first: 1) { edges { node { content } } } }`,
      { username },
    );
    expect(res.errors).toBeUndefined();
    expect(res.data).toEqual({ userByUsername: { posts: { edges: [{ node: { content: 'post #3' } }] } } });
  });

  it('refuses a forged cursor as BAD_USER_INPUT on `posts`, naming the argument', async () => {
    const res = await server.gql(
      `query ($username: String!) { userByUsername(username: $username) { username posts(first: 1, after: "forged") { edges { cursor } } } }`,
      { username },
    );
    expect(res.data).toEqual({ userByUsername: null });
    expect(res.errors).toHaveLength(1);
    expect(res.errors![0]).toMatchObject({ path: ['userByUsername', 'posts'], extensions: { code: 'BAD_USER_INPUT' } });
    expect(res.errors![0]!.message).toContain('after');
  });
});
