/**
 * urql keeps a `posts` connection current from `postsChanged`, as the README shows:
 * `subscriptionExchange` forwarding to graphql-ws, Graphcache with `relayPagination()`
 * on `User.posts`, and an update of `Subscription.postsChanged` that prepends the added
 * edge to the first page and drops the deleted post from every page. The cached,
 * merged connection ends equal to a fresh query of the server, cursors included.
 */
import { Client, fetchExchange, gql, subscriptionExchange } from '@urql/core';
import { cacheExchange } from '@urql/exchange-graphcache';
import { relayPagination } from '@urql/exchange-graphcache/extras';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { waitFor } from '../support/live-client.js';
import { describeEachStore } from '../support/stores.js';
import type { TestServer } from '../support/test-server.js';
import { aLiveTimeline } from './timeline-fixture.js';

const TIMELINE = gql`
  query Timeline($username: String!, $first: Int, $after: String) {
    userByUsername(username: $username) {
      id
      posts(first: $first, after: $after) {
        edges { cursor node { id content } }
        pageInfo { hasNextPage startCursor endCursor }
      }
    }
  }
`;
/** One page of a user's posts in the cache, as the update reads and writes it. */
const POSTS_PAGE = gql`
  fragment PostsPage on User {
    id
    posts(first: $first, after: $after) {
      edges { cursor node { id content } }
      pageInfo { hasNextPage startCursor endCursor }
    }
  }
`;
const POSTS_CHANGED = gql`
  subscription PostsChanged($authorId: ID!, $after: String) {
    postsChanged(authorId: $authorId, after: $after) {
      cursor
      addedEdge { cursor node { id content } }
      deletedPostId
    }
  }
`;

type Edge = { __typename: 'PostEdge'; cursor: string; node: { __typename: 'Post'; id: string; content: string } };
type Page = { __typename: 'User'; id: string; posts: { __typename: 'PostConnection'; edges: Edge[]; pageInfo: { __typename: 'PageInfo'; hasNextPage: boolean; startCursor: string | null; endCursor: string | null } } };
type Timeline = { userByUsername: Page };

describeEachStore('urql kept current by a subscription', (target) => {
  let timeline: Awaited<ReturnType<typeof aLiveTimeline>>;
  let server: TestServer;
  let token: string;
  const username = 'urql_live';

  beforeAll(async () => {
    timeline = await aLiveTimeline(target, username, 'u');
    ({ server, token } = timeline);
  });
  afterAll(() => server.close());

  it('prepends added edges and drops deleted posts in a relayPagination connection, cursors intact', async () => {
    const ws = createClient({ url: server.url.replace(/^http/, 'ws'), webSocketImpl: WebSocket });
    const client = new Client({
      url: server.url,
      preferGetMethod: false,
      fetchOptions: { headers: { authorization: `Bearer ${token}` } },
      exchanges: [
        cacheExchange({
          keys: { PostConnection: () => null, PostEdge: () => null, PageInfo: () => null, PostsChange: () => null },
          resolvers: { User: { posts: relayPagination() } },
          updates: {
            Subscription: {
              postsChanged(result, args, cache) {
                const change = (result as { postsChanged: { addedEdge: Edge | null; deletedPostId: string | null } }).postsChanged;
                const user = { __typename: 'User', id: args.authorId as string };
                const pages = cache.inspectFields(user).filter((field) => field.fieldName === 'posts');
                for (const { arguments: pageArgs } of pages) {
                  const page = cache.readFragment(POSTS_PAGE, user, pageArgs ?? {}) as Page | null;
                  if (!page) continue;
                  let edges = page.posts.edges.filter((e) => e.node.id !== change.deletedPostId && e.node.id !== change.addedEdge?.node.id);
                  // A new post belongs on the first page, ahead of everything.
                  if (change.addedEdge && !pageArgs?.after) edges = [change.addedEdge, ...edges];
                  const pageInfo = { ...page.posts.pageInfo, startCursor: edges[0]?.cursor ?? null, endCursor: edges[edges.length - 1]?.cursor ?? page.posts.pageInfo.endCursor };
                  cache.writeFragment(POSTS_PAGE, { ...page, posts: { ...page.posts, edges, pageInfo } }, pageArgs ?? {});
                }
              },
            },
          },
        }),
        fetchExchange,
        subscriptionExchange({
          forwardSubscription: (request) => ({
            subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? '' }, sink) }),
          }),
        }),
      ],
    });

    const first = await client.query<Timeline>(TIMELINE, { username, first: 2 }).toPromise();
    const page1 = first.data!.userByUsername;
    const second = await client.query<Timeline>(TIMELINE, { username, first: 2, after: page1.posts.pageInfo.endCursor }).toPromise();
    expect(second.data!.userByUsername.posts.edges.map((e) => e.node.content)).toEqual(['u3', 'u2', 'u1']);
    let latest: Timeline | undefined;
    const watching = client
      .query<Timeline>(TIMELINE, { username, first: 2, after: page1.posts.pageInfo.endCursor }, { requestPolicy: 'cache-only' })
      .subscribe((result) => {
        if (result.data) latest = result.data;
      });
    const live = client.subscription(POSTS_CHANGED, { authorId: page1.id, after: page1.posts.pageInfo.startCursor }).subscribe(() => undefined);
    await waitFor(() => server.app.services.live.subscriptions === 1, 5_000, 'the subscription');
    const u2 = page1.posts.edges[1]!.node.id;
    for (const c of ['u4', 'u5']) await timeline.post(c);
    await timeline.deletePost(u2);

    await waitFor(() => latest?.userByUsername.posts.edges.map((e) => e.node.content).join() === 'u5,u4,u3,u1', 10_000, 'the changes in the cache');
    expect(latest!.userByUsername.posts.edges.map((e) => ({ cursor: e.cursor, id: e.node.id, content: e.node.content }))).toEqual(await timeline.fresh());

    live.unsubscribe();
    watching.unsubscribe();
    await ws.dispose();
  });
});
