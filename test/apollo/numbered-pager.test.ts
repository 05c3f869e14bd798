/**
 * The numbered pager of the client guide with Apollo Client: `relayStylePagination(['offset'])`
 * caches each numbered page (`first: 5, offset: (n - 1) * 5`) on its own, with the page
 * count from `totalCount`, while the list without an offset still merges its `after`
 * pages; paging on from a numbered page with its end cursor gives the edges after it.
 */
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { relayStylePagination } from '@apollo/client/utilities';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MonotonicClock } from '../../src/store/clock.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

const TIMELINE = gql`
  query Timeline($username: String!, $first: Int, $after: String, $offset: Int) {
    userByUsername(username: $username) {
      id
      posts(first: $first, after: $after, offset: $offset) {
        totalCount
        edges { cursor node { id content } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }
  }
`;

type Result = {
  userByUsername: {
    posts: {
      totalCount: number;
      edges: Array<{ cursor: string; node: { id: string; content: string } }>;
      pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
    };
  };
};

describeEachStore('Apollo Client numbered pager against the server', (target) => {
  let server: TestServer;
  let aheadMs = 0;
  const TOTAL = 13;
  const PAGE = 5;
  const serverOrder = Array.from({ length: TOTAL }, (_, i) => `numbered ${TOTAL - i}`);

  beforeAll(async () => {
    server = await startTestServer({ target, clock: new MonotonicClock({ now: () => Date.now() + aheadMs }) });
    const token = await server.token('pager_user');
    await server.gql(`mutation { createUser(input: { username: "pager_user", displayName: "Pager" }) { user { id } } }`, {}, token);
    for (let i = 1; i <= TOTAL; i++) {
      await server.gql(`mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`, { c: `numbered ${i}` }, token);
    }
    // Settled: the windows closed and the verifier passed.
    aheadMs = 30_000;
    await server.app.services.countVerifier.runOnce();
  });
  afterAll(() => server.close());

  it('caches each numbered page apart, and the infinite list still merges', async () => {
    const client = new ApolloClient({
      link: new HttpLink({ uri: server.url, fetch }),
      cache: new InMemoryCache({ typePolicies: { User: { fields: { posts: relayStylePagination(['offset']) } } } }),
    });
    const numbered = async (n: number) => {
      const { data } = await client.query<Result>({ query: TIMELINE, variables: { username: 'pager_user', first: PAGE, offset: (n - 1) * PAGE } });
      const posts = data!.userByUsername.posts;
      return { contents: posts.edges.map((e) => e.node.content), pages: Math.ceil(posts.totalCount / PAGE), pageInfo: posts.pageInfo };
    };
    const pages = [await numbered(3), await numbered(1), await numbered(2)];
    expect(pages.map((p) => p.contents)).toEqual([serverOrder.slice(10, 15), serverOrder.slice(0, 5), serverOrder.slice(5, 10)]);
    expect(pages.map((p) => p.pages)).toEqual([3, 3, 3]);
    expect(pages[0]!.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
    // Read again from the cache alone: each page as it was, not merged into another.
    const cached = client.readQuery<Result>({ query: TIMELINE, variables: { username: 'pager_user', first: PAGE, offset: 5 } });
    expect(cached!.userByUsername.posts.edges.map((e) => e.node.content)).toEqual(serverOrder.slice(5, 10));
    // The list without an offset merges its pages as relayStylePagination does.
    const first = await client.query<Result>({ query: TIMELINE, variables: { username: 'pager_user', first: PAGE } });
    await client.query<Result>({ query: TIMELINE, variables: { username: 'pager_user', first: PAGE, after: first.data!.userByUsername.posts.pageInfo.endCursor }, fetchPolicy: 'network-only' });
    const merged = client.readQuery<Result>({ query: TIMELINE, variables: { username: 'pager_user', first: PAGE } });
    expect(merged!.userByUsername.posts.edges.map((e) => e.node.content)).toEqual(serverOrder.slice(0, 10));
    // From page 2, the next edges are plain paging with its end cursor.
    const more = await client.query<Result>({ query: TIMELINE, variables: { username: 'pager_user', first: PAGE, after: pages[2]!.pageInfo.endCursor }, fetchPolicy: 'no-cache' });
    expect(more.data!.userByUsername.posts.edges.map((e) => e.node.content)).toEqual(serverOrder.slice(10, 15));
  });
});
