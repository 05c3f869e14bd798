/**
 * Apollo Client keeps a user's timeline current from `postsChanged`: a split link sends
 * the subscription over `GraphQLWsLink` (graphql-ws on `ws`) and queries and mutations
 * over HTTP; `subscribeToMore` prepends each added edge to, and drops each deleted post
 * from, the `relayStylePagination` field a watched query shows. The watched edges end
 * equal to a fresh server page (order, ids, cursors), and fetchMore pages on from them.
 * After a dropped socket the follower resumes from the last change it merged; after a
 * CURSOR_EXPIRED it reloads the page and follows from there.
 */
import { describeEachStore } from '../support/stores.js';
import { ApolloClient, ApolloLink, CombinedGraphQLErrors, HttpLink, InMemoryCache, gql, type ObservableQuery, type TypedDocumentNode } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { relayStylePagination } from '@apollo/client/utilities';
import { OperationTypeNode } from 'graphql';
import type { Client } from 'graphql-ws';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, expect, it, onTestFinished } from 'vitest';
import { MonotonicClock } from '../../src/store/clock.js';
import { waitFor, wsClient } from '../support/live-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  LIVE_ENV,
  POSTS_CHANGED_SUBSCRIPTION,
  TIMELINE_QUERY,
  aLiveAuthor,
  publish,
  serverTimeline,
  unpublish,
  withoutTypenames,
  type PostsChange,
  type PostsChangedVariables,
  type PostsPage,
  type Timeline,
  type TimelineVariables,
} from './live-fixture.js';

const TIMELINE: TypedDocumentNode<Timeline, TimelineVariables> = gql(TIMELINE_QUERY);
const POSTS_CHANGED: TypedDocumentNode<{ postsChanged: PostsChange }, PostsChangedVariables> = gql(POSTS_CHANGED_SUBSCRIPTION);

const CREATE_POST: TypedDocumentNode<{ createPost: { post: { id: string; content: string } } }, { content: string }> = gql`mutation CreatePost($content: String!) { createPost(input: { content: $content }) { post { id content } } }`;
const DELETE_POST: TypedDocumentNode<{ deletePost: { deletedPostId: string } }, { id: string }> = gql`mutation DeletePost($id: ID!) { deletePost(input: { id: $id }) { deletedPostId } }`;

/**
 * The `updateQuery` of docs/clients.md: the added edge first, the deleted post gone, and pageInfo's
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

/**
 * The follower of docs/clients.md: merges `postsChanged` into a watched timeline from `after`, and
 * when the subscription ends with a dropped socket (or a stopping server), subscribes
 * again after the last change it merged: nothing made meanwhile is missed, nothing
 * repeated (graphql-ws's own reconnect would resend the first `after`: the client it
 * runs on has `retryAttempts: 0`). CURSOR_EXPIRED means the page is older than the
 * change log keeps: reload it and follow from its `startCursor`. Any other error the
 * server answers ends the following.
 */
function followTimeline(
  timeline: ObservableQuery<Timeline, TimelineVariables>,
  { authorId, after }: PostsChangedVariables,
  options: { retryMs?: number; onMerged?: (change: PostsChange) => void; onError?: (error: unknown) => void } = {},
) {
  let last = after;
  let unsubscribe = () => {};
  let retry: NodeJS.Timeout | undefined;
  const follow = () => {
    unsubscribe = timeline.subscribeToMore({
      document: POSTS_CHANGED,
      variables: { authorId, after: last },
      updateQuery: (_unsafe, { complete, previousData, subscriptionData }) => {
        if (!complete) return undefined;
        last = subscriptionData.data.postsChanged.cursor;
        options.onMerged?.(subscriptionData.data.postsChanged);
        return mergePostsChange(previousData, subscriptionData.data.postsChanged);
      },
      onError: (error) => {
        if (!CombinedGraphQLErrors.is(error)) retry = setTimeout(follow, options.retryMs ?? 1_000);
        else if (error.errors.some((e) => e.extensions?.code === 'CURSOR_EXPIRED')) void reload();
        else options.onError?.(error);
      },
    });
  };
  const reload = async () => {
    const { data } = await timeline.refetch();
    last = data!.userByUsername.posts.pageInfo.startCursor;
    follow();
  };
  follow();
  return () => {
    clearTimeout(retry);
    unsubscribe();
  };
}

/** A client of `url`: subscriptions over `socket`, the rest over HTTP, `User.posts` paged by relayStylePagination. */
function apolloClient(url: string, token: string, socket: Client) {
  const http = new HttpLink({ uri: url, fetch, headers: { authorization: `Bearer ${token}` } });
  const ws = new GraphQLWsLink(socket);
  return new ApolloClient({
    link: ApolloLink.split(({ operationType }) => operationType === OperationTypeNode.SUBSCRIPTION, ws, http),
    cache: new InMemoryCache({ typePolicies: { User: { fields: { posts: relayStylePagination() } } } }),
  });
}

/**
 * Load `username`'s newest `first` posts and watch them until the test ends, as a view
 * does (the order docs/clients.md gives): the first page, the page shown now, and the page once the
 * watched query shows what the cache holds (its broadcast may come a tick after a write).
 */
async function watchTimeline(apollo: ApolloClient, username: string, first: number) {
  const variables = { username, first };
  const { data } = await apollo.query({ query: TIMELINE, variables });
  const timeline = apollo.watchQuery({ query: TIMELINE, variables });
  const shown: Timeline[] = [];
  const watching = timeline.subscribe(({ data }) => data && shown.push(data as Timeline));
  onTestFinished(() => watching.unsubscribe());
  await waitFor(() => shown.length === 1, 10_000, 'the watched page');
  const current = () => shown.at(-1)!.userByUsername.posts;
  return {
    timeline,
    firstPage: data!.userByUsername.posts,
    current,
    async settled(): Promise<PostsPage> {
      await waitFor(() => isDeepStrictEqual(shown.at(-1), apollo.readQuery({ query: TIMELINE, variables })), 10_000, 'the watched query to show the cache');
      return withoutTypenames(current());
    },
  };
}

describeEachStore('Apollo Client keeps a relayStylePagination connection current from a subscription', (target) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ target, env: LIVE_ENV });
  });
  afterAll(() => server.close());

  /** An author of `posts` posts on `on`, and a client of theirs whose graphql-ws client is `socket`. */
  async function anAuthorsClient(on: TestServer, posts: number) {
    const author = await aLiveAuthor(on, posts);
    const socket = wsClient(on.url, { token: author.token });
    onTestFinished(() => socket.dispose());
    return { author, socket, apollo: apolloClient(on.url, author.token, socket) };
  }

  it('prepends added posts and drops deleted ones in the watched page, which then equals the server page and pages on with fetchMore', async () => {
    const { author, apollo } = await anAuthorsClient(server, 8);
    const { timeline, firstPage, current, settled } = await watchTimeline(apollo, author.username, 5);
    expect(firstPage.edges.map((e) => e.node.content)).toEqual(['post 8', 'post 7', 'post 6', 'post 5', 'post 4']);

    // Everything newer than the newest post shown.
    const changes: PostsChange[] = [];
    const stop = followTimeline(timeline, { authorId: author.id, after: firstPage.pageInfo.startCursor }, { onMerged: (change) => changes.push(change) });
    onTestFinished(stop);
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
    const watched = await settled();
    expect(watched.edges.map((e) => e.node.content)).toEqual(['live 3', 'live 1', 'post 8', 'post 7', 'post 5']);
    const fresh = await serverTimeline(server, author.username, watched.edges.length);
    expect(watched.edges).toEqual(fresh.edges);
    expect(watched.pageInfo).toEqual({ ...fresh.pageInfo, hasNextPage: true, hasPreviousPage: false });

    // Paging on from the merged connection's endCursor: the older posts, once each.
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

    stop();
    await waitFor(() => server.app.services.live.subscriptions === 0, 10_000, 'the subscription to end');
  });

  it('follows on after a dropped socket from the last change it merged: what was made meanwhile arrives, nothing twice', async () => {
    const { author, socket, apollo } = await anAuthorsClient(server, 2);
    const { timeline, firstPage, settled } = await watchTimeline(apollo, author.username, 10);
    const changes: PostsChange[] = [];
    const answered: unknown[] = [];
    const stop = followTimeline(
      timeline,
      { authorId: author.id, after: firstPage.pageInfo.startCursor },
      { retryMs: 200, onMerged: (change) => changes.push(change), onError: (error) => answered.push(error) },
    );
    onTestFinished(stop);
    await waitFor(() => server.app.services.live.subscriptions === 1, 10_000, 'the subscription on the server');
    const early = await publish(server, author.token, 'before the drop');
    await waitFor(() => changes.length === 1, 10_000, 'the first change');

    socket.terminate();
    // Made while the client has no subscription: only resuming after its last cursor brings them.
    await publish(server, author.token, 'while dropped');
    await unpublish(server, author.token, early);
    await waitFor(() => changes.length === 3, 10_000, 'the changes made while dropped');
    await publish(server, author.token, 'after the drop');
    await waitFor(() => changes.length === 4, 10_000, 'a change after resuming');

    expect(changes.map((c) => c.addedEdge?.node.content ?? `deleted ${c.deletedPostId}`)).toEqual(['before the drop', 'while dropped', `deleted ${early}`, 'after the drop']);
    const watched = await settled();
    expect(watched.edges.map((e) => e.node.content)).toEqual(['after the drop', 'while dropped', 'post 2', 'post 1']);
    expect(watched).toEqual(await serverTimeline(server, author.username, 10));
    expect(answered).toEqual([]);
    stop();
    await waitFor(() => server.app.services.live.subscriptions === 0, 10_000, 'the subscription to end');
  });

  it('reloads the page and follows from its startCursor when the last cursor is older than the change log keeps (CURSOR_EXPIRED)', async () => {
    // A server whose clock jumps past the retention while the client is away.
    let jumpMs = 0;
    const aged = await startTestServer({ target, env: { ...LIVE_ENV, LIVE_RETENTION_S: '60' }, clock: new MonotonicClock({ now: () => Date.now() + jumpMs }) });
    onTestFinished(() => aged.close());
    const { author, apollo } = await anAuthorsClient(aged, 1);
    const { timeline, firstPage, current, settled } = await watchTimeline(apollo, author.username, 10);
    const changes: PostsChange[] = [];
    const answered: unknown[] = [];
    const options = { onMerged: (change: PostsChange) => changes.push(change), onError: (error: unknown) => answered.push(error) };
    const stopFirst = followTimeline(timeline, { authorId: author.id, after: firstPage.pageInfo.startCursor }, options);
    await waitFor(() => aged.app.services.live.subscriptions === 1, 10_000, 'the subscription on the server');
    await publish(aged, author.token, 'before leaving');
    await waitFor(() => changes.length === 1, 10_000, 'the first change');
    stopFirst();
    await waitFor(() => aged.app.services.live.subscriptions === 0, 10_000, 'the client to leave');

    jumpMs = 61_000;
    await publish(aged, author.token, 'while away');
    const stop = followTimeline(timeline, { authorId: author.id, after: changes[0]!.cursor }, options);
    onTestFinished(stop);
    await waitFor(() => current().edges[0]?.node.content === 'while away', 10_000, 'the reloaded page');
    await waitFor(() => aged.app.services.live.subscriptions === 1, 10_000, 'following from the reloaded page');
    await publish(aged, author.token, 'back');
    await waitFor(() => changes.length === 2, 10_000, 'a change after reloading');

    expect(changes.map((c) => c.addedEdge?.node.content)).toEqual(['before leaving', 'back']);
    const watched = await settled();
    expect(watched.edges.map((e) => e.node.content)).toEqual(['back', 'while away', 'before leaving', 'post 1']);
    expect(watched).toEqual(await serverTimeline(aged, author.username, 10));
    expect(answered).toEqual([]);
  });
});
