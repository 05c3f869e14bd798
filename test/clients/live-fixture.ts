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

/**
 * A user's newest posts, and with `after` the next page: the query the Apollo and urql
 * tests watch, and the server's answer they compare it with.
 */
export const TIMELINE_QUERY = `
  query Timeline($username: String!, $first: Int!, $after: String) {
    userByUsername(username: $username) {
      id
      posts(first: $first, after: $after) {
        edges { cursor node { id content } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }
  }
`;

/** The variables of `TIMELINE_QUERY`. */
export interface TimelineVariables {
  username: string;
  first: number;
  after?: string | null;
}

/** A change to a user's timeline as the tests select it. */
export interface PostsChange {
  cursor: string;
  addedEdge: PostEdge | null;
  deletedPostId: string | null;
}

/** A user's timeline changes, everything after `after` when given. */
export const POSTS_CHANGED_SUBSCRIPTION = `
  subscription PostsChanged($authorId: ID!, $after: String) {
    postsChanged(authorId: $authorId, after: $after) {
      cursor
      addedEdge { cursor node { id content } }
      deletedPostId
    }
  }
`;

/** The variables of `POSTS_CHANGED_SUBSCRIPTION`. */
export interface PostsChangedVariables {
  authorId: string;
  after?: string | null;
}

/** A user whose timeline the tests follow, with a token of theirs. */
export interface LiveAuthor {
  readonly id: string;
  readonly username: string;
  readonly token: string;
  /** The global id of each post the fixture published, by its content. */
  readonly postIds: ReadonlyMap<string, string>;
}

/** Publish a post as the holder of `token`; its global id. */
export async function publish(server: TestServer, token: string, content: string): Promise<string> {
  const post = await server.gql(`mutation ($content: String!) { createPost(input: { content: $content }) { post { id } } }`, { content }, token);
  if (!post.data?.createPost) throw new Error(`createPost failed: ${JSON.stringify(post.errors)}`);
  return post.data.createPost.post.id;
}

/** Delete a post as the holder of `token`. */
export async function unpublish(server: TestServer, token: string, id: string): Promise<void> {
  const deleted = await server.gql(`mutation ($id: ID!) { deletePost(input: { id: $id }) { deletedPostId } }`, { id }, token);
  if (!deleted.data?.deletePost) throw new Error(`deletePost failed: ${JSON.stringify(deleted.errors)}`);
}

/** Create a user and publish `posts` posts as them, "post 1" (oldest) to "post <posts>". */
export async function aLiveAuthor(server: TestServer, posts: number): Promise<LiveAuthor> {
  const { username, displayName } = aUser();
  const token = await server.token(username);
  const created = await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input: { username, displayName } }, token);
  const postIds = new Map<string, string>();
  for (let i = 1; i <= posts; i++) postIds.set(`post ${i}`, await publish(server, token, `post ${i}`));
  return { id: created.data!.createUser.user.id, username, token, postIds };
}

/** The server's first `first` posts of `username`, newest first: what a client's cache must equal. */
export async function serverTimeline(server: TestServer, username: string, first: number): Promise<PostsPage> {
  const page = await server.gql<Timeline>(TIMELINE_QUERY, { username, first } satisfies TimelineVariables);
  if (!page.data) throw new Error(`the timeline query failed: ${JSON.stringify(page.errors)}`);
  return page.data.userByUsername.posts;
}

/** `value` without the `__typename` fields a client library adds to what it reads, to compare with the server's answer. */
export function withoutTypenames<T>(value: T): T {
  return JSON.parse(JSON.stringify(value, (key, field: unknown) => (key === '__typename' ? undefined : field))) as T;
}
