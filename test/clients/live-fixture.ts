/**
 * What the client-library tests share: the server settings under which a subscription
 * starts exactly when it is made, an author with a timeline, and the server's own page
 * of that timeline to compare a client's cache with.
 */
import { aUser } from '../../src/features/users/user-mother.js';
import type { TestServer } from '../support/test-server.js';

/** One process has no clock skew: a subscription starts when subscribed, or right after its cursor. */
export const LIVE_ENV = Object.freeze({ LIVE_POLL_MS: '50', CLOCK_SKEW_MS: '0' });

/** An edge of `User.posts` as the tests select it. */
export interface PostEdge {
  cursor: string;
  node: { id: string; content: string };
}

/** A page of `User.posts` as the tests select it. */
export interface PostsPage {
  edges: PostEdge[];
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
}

/** The `userByUsername { id posts }` result every client test queries. */
export interface Timeline {
  userByUsername: { id: string; posts: PostsPage };
}

/** A user whose timeline the tests follow, with a token of theirs. */
export interface LiveAuthor {
  readonly id: string;
  readonly username: string;
  readonly token: string;
  /** The global id of each post the fixture published, by its content. */
  readonly postIds: ReadonlyMap<string, string>;
}

/** Create a user and publish `posts` posts as them, "post 1" (oldest) to "post <posts>". */
export async function aLiveAuthor(server: TestServer, posts: number): Promise<LiveAuthor> {
  const { username, displayName } = aUser();
  const token = await server.token(username);
  const created = await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input: { username, displayName } }, token);
  const postIds = new Map<string, string>();
  for (let i = 1; i <= posts; i++) {
    const content = `post ${i}`;
    const post = await server.gql(`mutation ($content: String!) { createPost(input: { content: $content }) { post { id } } }`, { content }, token);
    postIds.set(content, post.data!.createPost.post.id);
  }
  return { id: created.data!.createUser.user.id, username, token, postIds };
}

/** The server's first `first` posts of `username`, newest first: what a client's cache must equal. */
export async function serverTimeline(server: TestServer, username: string, first: number): Promise<PostsPage> {
  const page = await server.gql<Timeline>(
    `query ($username: String!, $first: Int!) { userByUsername(username: $username) { id posts(first: $first) {
      edges { cursor node { id content } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    } } }`,
    { username, first },
  );
  if (!page.data) throw new Error(`the timeline query failed: ${JSON.stringify(page.errors)}`);
  return page.data.userByUsername.posts;
}

/** `value` without the `__typename` fields a client library adds to what it reads, to compare with the server's answer. */
export function withoutTypenames<T>(value: T): T {
  return JSON.parse(JSON.stringify(value, (key, field: unknown) => (key === '__typename' ? undefined : field))) as T;
}
