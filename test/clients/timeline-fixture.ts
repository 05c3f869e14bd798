/**
 * What the client-library tests share: a live server (one process, so no clock skew to
 * allow for: a subscription starts exactly where it is asked to), an author with three
 * posts, and the timeline's mutations and fresh state over HTTP.
 */
import type { StoreTarget } from '../support/stores.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

/** A server, an author with posts `${prefix}1`..`${prefix}3`, and what the tests do over HTTP. */
export async function aLiveTimeline(target: StoreTarget, username: string, prefix: string) {
  const server: TestServer = await startTestServer({ target, env: { LIVE_POLL_MS: '50', CLOCK_SKEW_MS: '0' } });
  const token = await server.token(username);
  await server.gql(`mutation ($u: String!) { createUser(input: { username: $u, displayName: $u }) { user { id } } }`, { u: username }, token);
  const post = (content: string) => server.gql(`mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`, { c: content }, token);
  for (let i = 1; i <= 3; i++) await post(`${prefix}${i}`);
  return {
    server,
    token,
    post,
    deletePost: (id: string) => server.gql(`mutation ($id: ID!) { deletePost(input: { id: $id }) { deletedPostId } }`, { id }, token),
    /** The author's posts as the server pages them now: cursor, id and content of each. */
    async fresh(): Promise<Array<{ cursor: string; id: string; content: string }>> {
      const res = await server.gql(`query ($u: String!) { userByUsername(username: $u) { posts(first: 50) { edges { cursor node { id content } } } } }`, { u: username });
      return res.data!.userByUsername.posts.edges.map((e: { cursor: string; node: { id: string; content: string } }) => ({ cursor: e.cursor, ...e.node }));
    },
  };
}
