/**
 * Apollo Client keeps a `posts` connection current from `postsChanged`, as the README
 * shows: a split link (HTTP for queries and mutations, `GraphQLWsLink` over graphql-ws
 * for subscriptions), `relayStylePagination()` on `User.posts`, and `subscribeToMore`
 * from the page's `startCursor` whose `updateQuery` prepends each added edge and drops
 * each deleted post. The watched connection ends equal to a fresh query of the server,
 * cursors included, and paging on from it still works.
 */
import { ApolloClient, HttpLink, InMemoryCache, gql, split } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { getMainDefinition, relayStylePagination } from '@apollo/client/utilities';
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
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
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

type Edge = { __typename?: string; cursor: string; node: { __typename?: string; id: string; content: string } };
type Timeline = { userByUsername: { id: string; posts: { edges: Edge[]; pageInfo: { hasNextPage: boolean; endCursor: string | null; startCursor: string | null } } } };
type PostsChanged = { postsChanged: { cursor: string; addedEdge: Edge | null; deletedPostId: string | null } };

describeEachStore('Apollo Client kept current by a subscription', (target) => {
  let timeline: Awaited<ReturnType<typeof aLiveTimeline>>;
  let server: TestServer;
  let token: string;
  const username = 'apollo_live';

  beforeAll(async () => {
    timeline = await aLiveTimeline(target, username, 'p');
    ({ server, token } = timeline);
  });
  afterAll(() => server.close());

  it('prepends added edges and drops deleted posts in a relayStylePagination connection, cursors and paging intact', async () => {
    const wsClient = createClient({ url: server.url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, connectionParams: { Authorization: `Bearer ${token}` } });
    const apollo = new ApolloClient({
      link: split(
        ({ query }) => {
          const definition = getMainDefinition(query);
          return definition.kind === 'OperationDefinition' && definition.operation === 'subscription';
        },
        new GraphQLWsLink(wsClient),
        new HttpLink({ uri: server.url, fetch, headers: { authorization: `Bearer ${token}` } }),
      ),
      cache: new InMemoryCache({ typePolicies: { User: { fields: { posts: relayStylePagination() } } } }),
    });
    const watched = apollo.watchQuery<Timeline>({ query: TIMELINE, variables: { username, first: 2 } });
    let latest: Timeline | undefined;
    const watching = watched.subscribe((result) => {
      if (result.data) latest = result.data as Timeline;
    });
    await waitFor(() => latest !== undefined, 5_000, 'the first page');
    await watched.fetchMore({ variables: { after: latest!.userByUsername.posts.pageInfo.endCursor } });
    await waitFor(() => latest!.userByUsername.posts.edges.length === 3, 5_000, 'the second page');

    const authorId = latest!.userByUsername.id;
    const unsubscribe = watched.subscribeToMore<PostsChanged>({
      document: POSTS_CHANGED,
      // Everything newer than what the page shows.
      variables: { authorId, after: latest!.userByUsername.posts.pageInfo.startCursor },
      updateQuery: (previous, { subscriptionData }) => {
        const change = subscriptionData.data?.postsChanged;
        const current = previous as Timeline;
        if (!change) return current;
        const kept = current.userByUsername.posts.edges.filter((e) => e.node.id !== change.deletedPostId && e.node.id !== change.addedEdge?.node.id);
        const edges = change.addedEdge ? [change.addedEdge, ...kept] : kept;
        // relayStylePagination takes the first and last edges' cursors from pageInfo:
        // keep them those of the edges now at the ends.
        const pageInfo = { ...current.userByUsername.posts.pageInfo, startCursor: edges[0]?.cursor ?? null, endCursor: edges[edges.length - 1]?.cursor ?? null };
        return { userByUsername: { ...current.userByUsername, posts: { ...current.userByUsername.posts, edges, pageInfo } } };
      },
    });
    await waitFor(() => server.app.services.live.subscriptions === 1, 5_000, 'the subscription');
    const p2 = latest!.userByUsername.posts.edges[1]!.node.id;
    for (const c of ['p4', 'p5']) await timeline.post(c);
    await timeline.deletePost(p2);

    await waitFor(() => latest!.userByUsername.posts.edges.map((e) => e.node.content).join() === 'p5,p4,p3,p1', 10_000, 'the changes in the cache');
    expect(latest!.userByUsername.posts.edges.map((e) => ({ cursor: e.cursor, id: e.node.id, content: e.node.content }))).toEqual(await timeline.fresh());
    // Paging on from the merged connection: its end cursor is the server's.
    const more = await watched.fetchMore({ variables: { after: latest!.userByUsername.posts.pageInfo.endCursor } });
    expect((more.data as Timeline).userByUsername.posts).toMatchObject({ edges: [], pageInfo: { hasNextPage: false } });

    unsubscribe();
    watching.unsubscribe();
    await wsClient.dispose();
    apollo.stop();
  });
});
