import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { usersTable } from '../../src/features/users/users-tables.js';
import { StoreUnavailableError } from '../../src/store/port.js';
import { FaultyStore } from '../support/faulty-store.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

const CREATE_USER = `mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id username displayName } } }`;
const CREATE_POST = `mutation ($input: CreatePostInput!) { createPost(input: $input) { post { id content author { username } } } }`;
const DELETE_POST = `mutation ($input: DeletePostInput!) { deletePost(input: $input) { deletedPostId clientMutationId } }`;

describeEachStore('users, posts and authentication over HTTP', (target) => {
  let server: TestServer;
  let faulty: FaultyStore;

  beforeAll(async () => {
    server = await startTestServer({ target, wrap: (s) => (faulty = new FaultyStore(s)) });
  });
  afterAll(() => server.close());

  async function createUser(overrides: Partial<{ username: string; displayName: string }> = {}) {
    const input = aUser(overrides);
    const token = await server.token(input.username);
    const res = await server.gql(CREATE_USER, { input }, token);
    expect(res.errors).toBeUndefined();
    return { ...res.data!.createUser.user, token } as { id: string; username: string; displayName: string; token: string };
  }

  describe('createUser', () => {
    it('creates the user named by the token and finds it by username and by id', async () => {
      const user = await createUser({ displayName: 'Ada Lovelace' });
      const byName = await server.gql(`query ($u: String!) { userByUsername(username: $u) { id username displayName } }`, {
        u: user.username,
      });
      expect(byName.data).toEqual({ userByUsername: { id: user.id, username: user.username, displayName: 'Ada Lovelace' } });
      const byId = await server.gql(`query ($id: ID!) { node(id: $id) { __typename id ... on User { username } } }`, { id: user.id });
      expect(byId.data).toEqual({ node: { __typename: 'User', id: user.id, username: user.username } });
      const viewer = await server.gql(`{ viewer { username } }`, {}, user.token);
      expect(viewer.data).toEqual({ viewer: { username: user.username } });
    });

    it('refuses a taken username with CONFLICT and keeps the first owner', async () => {
      const user = await createUser();
      const admin = await server.token('root', { admin: true });
      const res = await server.gql(CREATE_USER, { input: { username: user.username, displayName: 'Impostor' } }, admin);
      expect(res.errors?.[0]?.extensions).toEqual({ code: 'CONFLICT', argumentName: 'username' });
      const owner = await server.gql(`query ($u: String!) { userByUsername(username: $u) { id } }`, { u: user.username });
      expect(owner.data).toEqual({ userByUsername: { id: user.id } });
    });

    it('lets an admin create any user, and forbids a member creating someone else', async () => {
      const admin = await server.token('root', { admin: true });
      const input = aUser();
      const ok = await server.gql(CREATE_USER, { input }, admin);
      expect(ok.data?.createUser.user.username).toBe(input.username);
      const member = await server.token('someone_else');
      const res = await server.gql(CREATE_USER, { input: aUser() }, member);
      expect(res.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    });

    it('refuses a malformed username or display name, writing nothing', async () => {
      const before = await server.dump();
      const bad = await server.gql(CREATE_USER, { input: { username: 'No Spaces!', displayName: 'x' } }, await server.token('No Spaces!'));
      expect(bad.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', argumentName: 'username' } });
      const input = aUser({ displayName: '   ' });
      const blank = await server.gql(CREATE_USER, { input }, await server.token(input.username));
      expect(blank.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', argumentName: 'displayName' } });
      expect(await server.dump()).toEqual(before);
    });

    it('releases the username claim when writing the user fails, so the name can be used', async () => {
      const input = aUser();
      const token = await server.token(input.username);
      faulty.failWhen((call) => call.operation === 'upsert' && call.table === usersTable.name);
      const failed = await server.gql(CREATE_USER, { input }, token);
      faulty.failWhen(null);
      expect(failed.errors?.[0]).toEqual(
        expect.objectContaining({ message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }),
      );
      const claim = await server.gql(`query ($u: String!) { userByUsername(username: $u) { id } }`, { u: input.username });
      expect(claim.data).toEqual({ userByUsername: null });
      const retried = await server.gql(CREATE_USER, { input }, token);
      expect(retried.data?.createUser.user.username).toBe(input.username);
    });
  });

  describe('a store that cannot answer', () => {
    it('answers a retryable UNAVAILABLE, not an internal error, and the retry succeeds', async () => {
      const input = aUser();
      const token = await server.token(input.username);
      // As the adapter reports a lightweight transaction refused before anything was written
      // (one whose outcome is unknown is OUTCOME_UNKNOWN: test/graphql/idempotency-http.test.ts).
      faulty.failWhen(
        (call) => call.operation === 'insertIfNotExists',
        () => new StoreUnavailableError('a lightweight transaction on users_by_username failed and its outcome could not be learned'),
      );
      const failed = await server.gql(CREATE_USER, { input }, token);
      faulty.heal();
      expect(failed.errors).toEqual([
        expect.objectContaining({ message: 'The data store is unavailable right now; retry the request', extensions: { code: 'UNAVAILABLE' } }),
      ]);
      const retried = await server.gql(CREATE_USER, { input }, token);
      expect(retried.data?.createUser.user.username).toBe(input.username);
    });
  });

  describe('authentication', () => {
    const mutation = { query: CREATE_POST, variables: { input: { content: 'hello' } } };

    it('answers UNAUTHENTICATED to a mutation without a token', async () => {
      const res = await server.gql(mutation.query, mutation.variables);
      expect(res.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
      expect(res.data).toEqual({ createPost: null });
    });

    it('answers UNAUTHENTICATED to a forged, expired or malformed token', async () => {
      const forged = await new SignJWT({ roles: ['admin'] })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject('root')
        .setExpirationTime('1h')
        .sign(new TextEncoder().encode('not-the-server-secret-at-all'));
      const expired = await server.token('root', { expiresIn: '-1m' });
      for (const token of [forged, expired, 'garbage']) {
        const res = await server.gql(mutation.query, mutation.variables, token);
        expect(res.status).toBe(401);
        expect(res.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
      }
    });

    it('answers FORBIDDEN to a valid token whose user does not exist yet, and lets it create only that user', async () => {
      const ghost = await server.token('ghost_user');
      const res = await server.gql(mutation.query, mutation.variables, ghost);
      expect(res.errors).toEqual([
        {
          message: 'no user named "ghost_user" exists: its token may only create it, with createUser',
          path: ['createPost'],
          locations: expect.any(Array),
          extensions: { code: 'FORBIDDEN' },
        },
      ]);
      const search = await server.gql(`{ usersByLastName(prefix: "g", first: 1) { edges { cursor } } }`, {}, ghost);
      expect(search.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      const created = await server.gql(`mutation { createUser(input: { username: "ghost_user", displayName: "Ghost", location: "Elsinore" }) { user { username location } } }`, {}, ghost);
      expect(created.data).toEqual({ createUser: { user: { username: 'ghost_user', location: 'Elsinore' } } });
      // Now a member like any other.
      const after = await server.gql(mutation.query, mutation.variables, ghost);
      expect(after.errors).toBeUndefined();
    });
  });

  describe('posts', () => {
    it('lets only the author delete a post', async () => {
      const author = await createUser();
      const other = await createUser();
      const created = await server.gql(CREATE_POST, { input: { content: 'mine' } }, author.token);
      const post = created.data!.createPost.post;
      expect(post).toMatchObject({ content: 'mine', author: { username: author.username } });

      const forbidden = await server.gql(DELETE_POST, { input: { id: post.id } }, other.token);
      expect(forbidden.errors?.[0]?.extensions).toEqual({ code: 'FORBIDDEN', argumentName: 'id' });
      const still = await server.gql(`query ($id: ID!) { node(id: $id) { id } }`, { id: post.id });
      expect(still.data).toEqual({ node: { id: post.id } });

      const deleted = await server.gql(DELETE_POST, { input: { id: post.id, clientMutationId: 'd1' } }, author.token);
      expect(deleted.data).toEqual({ deletePost: { deletedPostId: post.id, clientMutationId: 'd1' } });
      const gone = await server.gql(`query ($id: ID!) { node(id: $id) { id } }`, { id: post.id });
      expect(gone.data).toEqual({ node: null });
      const again = await server.gql(DELETE_POST, { input: { id: post.id } }, author.token);
      expect(again.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    });

    it('refuses an id of the wrong type or shape with BAD_USER_INPUT', async () => {
      const author = await createUser();
      for (const id of [author.id, 'bm9wZQ==', '', 'UG9zdDp4']) {
        const res = await server.gql(DELETE_POST, { input: { id } }, author.token);
        expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argumentName: 'id' });
      }
    });

    it('refuses empty and oversized content', async () => {
      const author = await createUser();
      for (const content of ['', '   ', 'x'.repeat(5_001)]) {
        const res = await server.gql(CREATE_POST, { input: { content } }, author.token);
        expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argumentName: 'content' });
      }
    });
  });

  describe('node and nodes', () => {
    it('fetches users and posts by global id, in order, with null for missing ones', async () => {
      const author = await createUser();
      const created = await server.gql(CREATE_POST, { input: { content: 'findable' } }, author.token);
      const postId = created.data!.createPost.post.id as string;
      const missingUser = Buffer.from('User:00000000-0000-4000-8000-000000000000').toString('base64');
      const res = await server.gql(
        `query ($ids: [ID!]!) { nodes(ids: $ids) { __typename id ... on Post { content author { username } } } }`,
        { ids: [postId, missingUser, author.id] },
      );
      expect(res.data).toEqual({
        nodes: [
          { __typename: 'Post', id: postId, content: 'findable', author: { username: author.username } },
          null,
          { __typename: 'User', id: author.id },
        ],
      });
    });

    it('refuses a malformed id and more than 100 ids', async () => {
      const bad = await server.gql(`{ node(id: "%%%") { id } }`);
      expect(bad.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argumentName: 'id' });
      const many = await server.gql(`query ($ids: [ID!]!) { nodes(ids: $ids) { id } }`, { ids: Array(101).fill('x') });
      expect(many.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argumentName: 'ids' });
    });
  });

  describe('round trips', () => {
    it('resolves the authors of a page of 50 posts in a fixed number of round trips', async () => {
      const authors = await Promise.all([createUser(), createUser(), createUser()]);
      const reader = await createUser();
      for (let i = 0; i < 60; i++) {
        await server.gql(CREATE_POST, { input: { content: `p${i}` } }, authors[i % 3]!.token);
      }
      const query = `query ($u: String!, $n: Int!) { userByUsername(username: $u) { posts(first: $n) {
        edges { node { content author { username displayName } } } } } }`;
      const small = await server.gql(query, { u: authors[0]!.username, n: 5 }, reader.token);
      const large = await server.gql(query, { u: authors[0]!.username, n: 20 }, reader.token);
      expect(small.data!.userByUsername.posts.edges).toHaveLength(5);
      expect(large.data!.userByUsername.posts.edges).toHaveLength(20);
      // username -> id, user, slice: the author is already loaded by the same DataLoader.
      expect(small.extensions?.storeRoundTrips).toBe(3);
      expect(large.extensions?.storeRoundTrips).toBe(3);

      // Posts of several authors through `nodes`: one batched read per table, whatever n.
      const ids: string[] = [];
      for (const a of authors) {
        const page = await server.gql(`query ($u: String!) { userByUsername(username: $u) { posts(first: 17) { edges { node { id } } } } }`, {
          u: a.username,
        });
        ids.push(...page.data!.userByUsername.posts.edges.map((e: { node: { id: string } }) => e.node.id));
      }
      const fifty = ids.slice(0, 50);
      expect(fifty).toHaveLength(50);
      const res = await server.gql(`query ($ids: [ID!]!) { nodes(ids: $ids) { ... on Post { author { username } } } }`, { ids: fifty });
      expect(res.data!.nodes).toHaveLength(50);
      expect(res.extensions?.storeRoundTrips).toBe(2);
      // Statements: one per key read (50 posts, then their 3 distinct authors).
      expect(res.extensions?.storeStatements).toBe(53);
    });
  });
});
