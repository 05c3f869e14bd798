/**
 * A browser app as a developer writes one: Apollo Client with relayStylePagination,
 * calling the API on another origin with a bearer token. Bundled by esbuild in the
 * test; the page calls `window.pageTimeline(...)` and reads back what the cache holds.
 */
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { relayStylePagination } from '@apollo/client/utilities';

const TIMELINE = gql`
  query Timeline($username: String!, $first: Int, $after: String) {
    viewer { username }
    userByUsername(username: $username) {
      id
      posts(first: $first, after: $after) {
        edges { cursor node { id content } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
`;

type Timeline = {
  viewer: { username: string } | null;
  userByUsername: { posts: { edges: Array<{ node: { content: string } }>; pageInfo: { hasNextPage: boolean; endCursor: string | null } } };
};

/** Page a user's whole timeline through fetchMore; resolve with the viewer and every post, in order. */
async function pageTimeline(options: { uri: string; token: string; username: string; pageSize: number }) {
  const client = new ApolloClient({
    link: new HttpLink({ uri: options.uri, headers: { authorization: `Bearer ${options.token}` } }),
    cache: new InMemoryCache({ typePolicies: { User: { fields: { posts: relayStylePagination() } } } }),
  });
  const variables = { username: options.username, first: options.pageSize };
  const observable = client.watchQuery<Timeline>({ query: TIMELINE, variables });
  const subscription = observable.subscribe(() => undefined);
  let data = (await client.query<Timeline>({ query: TIMELINE, variables })).data!;
  let pages = 1;
  while (data.userByUsername.posts.pageInfo.hasNextPage) {
    await observable.fetchMore({ variables: { after: data.userByUsername.posts.pageInfo.endCursor } });
    data = client.readQuery<Timeline>({ query: TIMELINE, variables })!;
    pages++;
  }
  subscription.unsubscribe();
  return { viewer: data.viewer?.username ?? null, pages, posts: data.userByUsername.posts.edges.map((e) => e.node.content) };
}

(globalThis as unknown as { pageTimeline: typeof pageTimeline }).pageTimeline = pageTimeline;
