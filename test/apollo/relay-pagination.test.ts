/**
 * Apollo Client with relayStylePagination against the running server: fetchMore
 * forward to the end, and backward to the start; the cached list equals the server's
 * order with no duplicates, and the cached pageInfo is right at both ends.
 */
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { relayStylePagination } from '@apollo/client/utilities';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

const TIMELINE = gql`
  query Timeline($username: String!, $first: Int, $after: String, $last: Int, $before: String) {
    userByUsername(username: $username) {
      id
      posts(first: $first, after: $after, last: $last, before: $before) {
        edges { cursor node { id content } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }
  }
`;

type Result = {
  userByUsername: {
    posts: {
      edges: Array<{ cursor: string; node: { id: string; content: string } }>;
      pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
    };
  };
};

describeEachStore('Apollo Client relayStylePagination against the server', (target) => {
  let server: TestServer;
  const TOTAL = 17;
  const serverOrder = Array.from({ length: TOTAL }, (_, i) => `apollo ${TOTAL - i}`);

  beforeAll(async () => {
    server = await startTestServer({ target });
    const token = await server.token('apollo_user');
    await server.gql(`mutation { createUser(input: { username: "apollo_user", displayName: "Apollo" }) { user { id } } }`, {}, token);
    for (let i = 1; i <= TOTAL; i++) {
      await server.gql(`mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`, { c: `apollo ${i}` }, token);
    }
  });
  afterAll(() => server.close());

  function client() {
    return new ApolloClient({
      link: new HttpLink({ uri: server.url, fetch }),
      cache: new InMemoryCache({ typePolicies: { User: { fields: { posts: relayStylePagination() } } } }),
    });
  }

  /** A watched query (fetchMore lives on it) whose cached data is read after each fetch. */
  async function watch(apollo: ReturnType<typeof client>, variables: Record<string, unknown>) {
    await apollo.query<Result>({ query: TIMELINE, variables });
    const observable = apollo.watchQuery<Result>({ query: TIMELINE, variables, fetchPolicy: 'cache-first' });
    const subscription = observable.subscribe(() => undefined);
    return {
      read: () => apollo.readQuery<Result>({ query: TIMELINE, variables })!,
      fetchMore: (more: Record<string, unknown>) => observable.fetchMore({ variables: more }),
      stop: () => subscription.unsubscribe(),
    };
  }

  it('pages forward to the end with fetchMore', async () => {
    const w = await watch(client(), { username: 'apollo_user', first: 5 });
    let data = w.read();
    let rounds = 0;
    while (data.userByUsername.posts.pageInfo.hasNextPage) {
      await w.fetchMore({ after: data.userByUsername.posts.pageInfo.endCursor });
      data = w.read();
      rounds++;
    }
    w.stop();
    expect(rounds).toBe(3);
    const cached = data.userByUsername.posts;
    expect(cached.edges.map((e) => e.node.content)).toEqual(serverOrder);
    expect(new Set(cached.edges.map((e) => e.node.id)).size).toBe(TOTAL);
    expect(cached.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: false, startCursor: cached.edges[0]!.cursor, endCursor: cached.edges[TOTAL - 1]!.cursor });
  });

  it('pages backward to the start with fetchMore', async () => {
    const w = await watch(client(), { username: 'apollo_user', last: 5 });
    let data = w.read();
    expect(data.userByUsername.posts.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
    while (data.userByUsername.posts.pageInfo.hasPreviousPage) {
      await w.fetchMore({ before: data.userByUsername.posts.pageInfo.startCursor });
      data = w.read();
    }
    w.stop();
    const cached = data.userByUsername.posts;
    expect(cached.edges.map((e) => e.node.content)).toEqual(serverOrder);
    expect(new Set(cached.edges.map((e) => e.node.id)).size).toBe(TOTAL);
    expect(cached.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: false, startCursor: cached.edges[0]!.cursor, endCursor: cached.edges[TOTAL - 1]!.cursor });
  });
});
