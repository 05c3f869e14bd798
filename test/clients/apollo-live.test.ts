/**
 * Apollo Client keeps a user's timeline current from `postsChanged`: a split link sends
 * the subscription over `GraphQLWsLink` (graphql-ws on `ws`) and queries and mutations
 * over HTTP; `subscribeToMore` prepends each added edge to, and drops each deleted post
 * from, the `relayStylePagination` field a watched query shows. The watched edges end
 * equal to a fresh server page (order, ids, cursors), and fetchMore pages on from them.
 */
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql, type TypedDocumentNode } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { relayStylePagination } from '@apollo/client/utilities';
import { OperationTypeNode } from 'graphql';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor, wsClient } from '../support/live-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  LIVE_ENV,
  POSTS_CHANGED_SUBSCRIPTION,
  TIMELINE_QUERY,
  aLiveAuthor,
  serverTimeline,
  withoutTypenames,
  type LiveAuthor,
  type PostsChange,
  type PostsChangedVariables,
  type Timeline,
  type TimelineVariables,
} from './live-fixture.js';

const TIMELINE: TypedDocumentNode<Timeline, TimelineVariables> = gql(TIMELINE_QUERY);
const POSTS_CHANGED: TypedDocumentNode<{ postsChanged: PostsChange }, PostsChangedVariables> = gql(POSTS_CHANGED_SUBSCRIPTION);

const CREATE_POST: TypedDocumentNode<{ createPost: { post: { id: string; content: string } } }, { content: string }> = gql`mutation CreatePost($content: String!) { createPost(input: { content: $content }) { post { id content } } }`;
const DELETE_POST: TypedDocumentNode<{ deletePost: { deletedPostId: string } }, { id: string }> = gql`mutation DeletePost($id: ID!) { deletePost(input: { id: $id }) { deletedPostId } }`;

/**
 * The README's `updateQuery`: the added edge first, the deleted post gone, and pageInfo's
 * cursors moved with the ends (relayStylePagination's merge stamps `startCursor` onto
 * the first incoming edge and `endCursor` onto the last, so stale ones would overwrite
 * the new edges' own cursors).
 */
function mergePostsChange(timeline: Timeline, { addedEdge, deletedPostId }: PostsChange): Timeline {
  const { posts } = timeline.userByUsername;
  const kept = posts.edges.filter((edge) => edge.node.id !== deletedPostId && edge.node.id !== addedEdge?.node.id);
  const edges = addedEdge ? [addedEdge, ...kept] : kept;
  const pageInfo = { ...posts.pageInfo, startCursor: edges[0]?.cursor ?? null, endCursor: edges.at(-1)?.cursor ?? null };
  return { userByUsername: { ...timeline.userByUsername, posts: { ...posts, edges, pageInfo } } };
}

describe('Apollo Client keeps a relayStylePagination connection current from a subscription', () => {
  let server: TestServer;
  let author: LiveAuthor;

  beforeAll(async () => {
    server = await startTestServer({ env: LIVE_ENV });
    author = await aLiveAuthor(server, 8);
  });
  afterAll(() => server.close());

  function apolloClient(token: string) {
    const http = new HttpLink({ uri: server.url, fetch, headers: { authorization: `Bearer ${token}` } });
    const ws = new GraphQLWsLink(wsClient(server.url, { token }));
    return new ApolloClient({
      link: ApolloLink.split(({ operationType }) => operationType === OperationTypeNode.SUBSCRIPTION, ws, http),
      cache: new InMemoryCache({ typePolicies: { User: { fields: { posts: relayStylePagination() } } } }),
    });
  }

  it('prepends added posts and drops deleted ones in the watched page, which then equals the server page and pages on with fetchMore', async () => {
    const apollo = apolloClient(author.token);
    const timeline = apollo.watchQuery({ query: TIMELINE, variables: { username: author.username, first: 5 } });
    const shown: Timeline[] = [];
    const watching = timeline.subscribe(({ data }) => data && shown.push(data as Timeline));
    await waitFor(() => shown.length === 1, 10_000, 'the first page');
    const firstPage = shown[0]!.userByUsername.posts;
    expect(firstPage.edges.map((e) => e.node.content)).toEqual(['post 8', 'post 7', 'post 6', 'post 5', 'post 4']);

    // Everything newer than the newest post shown.
    const changes: PostsChange[] = [];
    const unsubscribe = timeline.subscribeToMore({
      document: POSTS_CHANGED,
      variables: { authorId: author.id, after: firstPage.pageInfo.startCursor },
      updateQuery: (_unsafe, { complete, previousData, subscriptionData }) => {
        if (!complete) return undefined;
        changes.push(subscriptionData.data.postsChanged);
        return mergePostsChange(previousData, subscriptionData.data.postsChanged);
      },
    });
    await waitFor(() => server.app.services.live.subscriptions === 1, 10_000, 'the subscription on the server');

    // Mutations go over HTTP through the same client (graphql-ws would refuse them).
    const create = async (content: string) => (await apollo.mutate({ mutation: CREATE_POST, variables: { content } })).data!.createPost.post.id;
    const remove = (id: string) => apollo.mutate({ mutation: DELETE_POST, variables: { id } });
    await create('live 1');
    const live2 = await create('live 2');
    await create('live 3');
    await remove(live2);
    await remove(author.postIds.get('post 6')!);
    await remove(author.postIds.get('post 4')!); // the last edge shown: endCursor moves

    await waitFor(() => changes.length === 6, 10_000, 'six changes merged');
    // The watched query emits what the cache now holds (its broadcast may come a tick later).
    const cached = () => apollo.readQuery({ query: TIMELINE, variables: { username: author.username, first: 5 } });
    await waitFor(() => isDeepStrictEqual(shown.at(-1), cached()), 10_000, 'the watched query to show the cache');
    const watched = withoutTypenames(shown.at(-1)!.userByUsername.posts);
    expect(watched.edges.map((e) => e.node.content)).toEqual(['live 3', 'live 1', 'post 8', 'post 7', 'post 5']);
    const fresh = await serverTimeline(server, author.username, watched.edges.length);
    expect(watched.edges).toEqual(fresh.edges);
    expect(watched.pageInfo).toEqual({ ...fresh.pageInfo, hasNextPage: true, hasPreviousPage: false });

    // Paging on from the merged connection's endCursor: the older posts, once each.
    const current = () => shown.at(-1)!.userByUsername.posts;
    let pages = 0;
    while (current().pageInfo.hasNextPage) {
      const before = current().edges.length;
      await timeline.fetchMore({ variables: { after: current().pageInfo.endCursor } });
      await waitFor(() => current().edges.length > before, 10_000, 'the next page in the watched query');
      pages++;
    }
    const all = withoutTypenames(current());
    const everything = await serverTimeline(server, author.username, 100);
    expect(pages).toBe(1);
    expect(all.edges).toEqual(everything.edges);
    expect(all.edges.map((e) => e.node.content)).toEqual(['live 3', 'live 1', 'post 8', 'post 7', 'post 5', 'post 3', 'post 2', 'post 1']);
    expect(all.pageInfo).toEqual({ ...everything.pageInfo, hasNextPage: false });
    expect(changes).toHaveLength(6);

    unsubscribe();
    watching.unsubscribe();
    await waitFor(() => server.app.services.live.subscriptions === 0, 10_000, 'the subscription to end');
    apollo.stop();
  });
});
