/**
 * urql keeps a user's timeline current from `postsChanged`: `subscriptionExchange`
 * forwards the subscription to graphql-ws (on `ws`), the rest goes over `fetchExchange`;
 * Graphcache pages `User.posts` with `relayPagination()`, and its
 * `updates.Subscription.postsChanged` puts each added edge first in the newest page and
 * takes each deleted post out of every page. The cached query ends equal to the server's
 * page, and a next page joins it without a gap or a repeat.
 */
import { describeEachStore } from '../support/stores.js';
import { Client, fetchExchange, gql, subscriptionExchange, type TypedDocumentNode } from '@urql/core';
import { cacheExchange, type Cache, type UpdateResolver } from '@urql/exchange-graphcache';
import { relayPagination } from '@urql/exchange-graphcache/extras';
import { afterAll, beforeAll, expect, it, onTestFinished } from 'vitest';
import { waitFor, wsClient } from '../support/live-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  LIVE_ENV,
  POSTS_CHANGED_SUBSCRIPTION,
  TIMELINE_QUERY,
  aLiveAuthor,
  serverTimeline,
  withoutTypenames,
  type PostsChange,
  type PostsChangedVariables,
  type PostsPage,
  type Timeline,
  type TimelineVariables,
} from './live-fixture.js';

const TIMELINE: TypedDocumentNode<Timeline, TimelineVariables> = gql(TIMELINE_QUERY);

const POSTS_CHANGED: TypedDocumentNode<{ postsChanged: PostsChange }, PostsChangedVariables> = gql(POSTS_CHANGED_SUBSCRIPTION);

/** One cached page of `User.posts`, read and written whole. */
const POSTS_PAGE = gql`
  fragment PostsPage on PostConnection {
    edges { cursor node { id content } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
`;
const AUTHOR_POSTS = gql`
  fragment AuthorPosts on User {
    posts(first: $first, after: $after, last: $last, before: $before) { ...PostsPage }
  }
  ${POSTS_PAGE}
`;

/**
 * Graphcache keeps each page of `User.posts` apart (relayPagination joins them when
 * read), so a change edits every page the author has in the cache: the deleted post
 * leaves each; the added edge goes first in the newest page, whose startCursor follows
 * it. endCursor stays: relayPagination chains a later page by it, and the server pages
 * on correctly after a deleted post's cursor.
 */
const postsChanged: UpdateResolver<{ postsChanged: PostsChange }, { authorId: string }> = (result, { authorId }, cache: Cache) => {
  const { addedEdge, deletedPostId } = result.postsChanged;
  const author = { __typename: 'User', id: authorId };
  for (const field of cache.inspectFields(author)) {
    if (field.fieldName !== 'posts') continue;
    const page = cache.readFragment<PostsPage>(POSTS_PAGE, cache.resolve(author, 'posts', field.arguments) as string);
    if (!page) continue;
    const newest = field.arguments?.first != null && field.arguments.after == null && field.arguments.before == null;
    const kept = page.edges.filter((edge) => edge.node.id !== deletedPostId && edge.node.id !== addedEdge?.node.id);
    const edges = addedEdge && newest ? [addedEdge, ...kept] : kept;
    const pageInfo = newest ? { ...page.pageInfo, startCursor: edges[0]?.cursor ?? null } : page.pageInfo;
    cache.writeFragment(AUTHOR_POSTS, { ...author, posts: { ...page, edges, pageInfo } }, field.arguments ?? {});
  }
};

describeEachStore('urql with Graphcache keeps a relayPagination connection current from a subscription', (target) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ target, env: LIVE_ENV });
  });
  afterAll(() => server.close());

  function urqlClient(token: string): Client {
    const ws = wsClient(server.url, { token });
    onTestFinished(() => ws.dispose());
    return new Client({
      url: server.url,
      preferGetMethod: false,
      fetchOptions: { headers: { authorization: `Bearer ${token}` } },
      exchanges: [
        cacheExchange({ resolvers: { User: { posts: relayPagination() } }, updates: { Subscription: { postsChanged } } }),
        fetchExchange,
        subscriptionExchange({
          forwardSubscription: (request) => ({
            subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? '' }, sink) }),
          }),
        }),
      ],
    });
  }

  it('puts added posts first and takes deleted ones out of the cached query, which then equals the server page and pages on', async () => {
    const author = await aLiveAuthor(server, 8);
    const urql = urqlClient(author.token);
    const variables = { username: author.username, first: 5 };
    const shown: Timeline[] = [];
    const watching = urql.query(TIMELINE, variables).subscribe((result) => result.data && shown.push(result.data));
    onTestFinished(() => watching.unsubscribe());
    await waitFor(() => shown.length > 0, 10_000, 'the first page');
    const current = () => shown.at(-1)!.userByUsername.posts;
    expect(current().edges.map((e) => e.node.content)).toEqual(['post 8', 'post 7', 'post 6', 'post 5', 'post 4']);

    // Everything newer than the newest post shown.
    const changes: PostsChange[] = [];
    const following = urql
      .subscription(POSTS_CHANGED, { authorId: author.id, after: current().pageInfo.startCursor })
      .subscribe((result) => result.data && changes.push(result.data.postsChanged));
    onTestFinished(() => following.unsubscribe());
    await waitFor(() => server.app.services.live.subscriptions === 1, 10_000, 'the subscription on the server');

    const create = async (content: string) =>
      (await urql.mutation(gql`mutation ($content: String!) { createPost(input: { content: $content }) { post { id } } }`, { content }).toPromise()).data.createPost.post.id as string;
    const remove = (id: string) => urql.mutation(gql`mutation ($id: ID!) { deletePost(input: { id: $id }) { deletedPostId } }`, { id }).toPromise();
    await create('live 1');
    const live2 = await create('live 2');
    await create('live 3');
    await remove(live2);
    await remove(author.postIds.get('post 6')!);
    await remove(author.postIds.get('post 4')!); // the last edge shown

    await waitFor(() => changes.length === 6, 10_000, 'six changes');
    await waitFor(() => current().edges.length === 5 && current().edges[0]!.node.content === 'live 3', 10_000, 'the cached query to take them in');
    expect(current().edges.map((e) => e.node.content)).toEqual(['live 3', 'live 1', 'post 8', 'post 7', 'post 5']);
    const fresh = await serverTimeline(server, author.username, 5);
    expect(withoutTypenames(current().edges)).toEqual(fresh.edges);
    expect(current().pageInfo).toMatchObject({ startCursor: fresh.pageInfo.startCursor, hasNextPage: true, hasPreviousPage: false });

    // The next page, after the (deleted) last post the page held, joins without a gap;
    // relayPagination answers any page of the field with every page it holds, joined.
    const next = await urql.query(TIMELINE, { ...variables, after: current().pageInfo.endCursor }).toPromise();
    const everything = await serverTimeline(server, author.username, 100);
    expect(everything.edges.map((e) => e.node.content)).toEqual(['live 3', 'live 1', 'post 8', 'post 7', 'post 5', 'post 3', 'post 2', 'post 1']);
    expect(withoutTypenames(next.data!.userByUsername.posts)).toEqual(everything);
    await waitFor(() => current().edges.length === 8, 10_000, 'the next page in the watched query');
    expect(withoutTypenames(current())).toEqual(everything);

    // With two pages cached: a deletion in the older page, an addition to the newest.
    await remove(author.postIds.get('post 2')!);
    await create('live 4');
    await waitFor(() => changes.length === 8, 10_000, 'two more changes');
    await waitFor(() => current().edges[0]!.node.content === 'live 4', 10_000, 'the cached query to take them in');
    const now = await serverTimeline(server, author.username, 100);
    expect(now.edges.map((e) => e.node.content)).toEqual(['live 4', 'live 3', 'live 1', 'post 8', 'post 7', 'post 5', 'post 3', 'post 1']);
    expect(withoutTypenames(current())).toEqual(now);
    expect(changes).toHaveLength(8);

    following.unsubscribe();
    await waitFor(() => server.app.services.live.subscriptions === 0, 10_000, 'the subscription to end');
  });
});
