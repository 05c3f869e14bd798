/**
 * Rotating CURSOR_SECRET over HTTP: a server started with a new secret and the old one
 * in CURSOR_PREVIOUS_SECRETS reads the cursors the old secret signed (the same page as
 * its own cursor gives) and hands out cursors of the new one; a cursor of a secret it
 * does not list is BAD_USER_INPUT naming the argument.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { localIdOf } from '../../src/graphql/ids.js';
import { createCursorCodec } from '../../src/paging/cursor.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const OLD = 'the-cursor-secret-before-rotation';
const NEW = 'the-cursor-secret-after-rotation!';

const POSTS = `
  query ($username: String!, $first: Int, $after: String) {
    userByUsername(username: $username) {
      id
      posts(first: $first, after: $after) { edges { cursor node { content } } pageInfo { hasNextPage hasPreviousPage endCursor } }
    }
  }`;

type Posts = { id: string; posts: { edges: Array<{ cursor: string; node: { content: string } }>; pageInfo: Record<string, unknown> } };

describe('cursor secret rotation over HTTP', () => {
  let server: TestServer;
  const username = aUser().username;

  beforeAll(async () => {
    server = await startTestServer({ env: { CURSOR_SECRET: NEW, CURSOR_PREVIOUS_SECRETS: OLD } });
    const token = await server.token(username);
    const created = await server.gql(`mutation ($i: CreateUserInput!) { createUser(input: $i) { user { id } } }`, { i: { username, displayName: 'Rotating' } }, token);
    expect(created.errors).toBeUndefined();
    for (let i = 1; i <= 5; i++) {
      const res = await server.gql(`mutation ($i: CreatePostInput!) { createPost(input: $i) { post { id } } }`, { i: { content: `post ${i}` } }, token);
      expect(res.errors).toBeUndefined();
    }
  });

  afterAll(() => server.close());

  async function posts(after?: string) {
    return server.gql<{ userByUsername: Posts }>(POSTS, { username, first: 2, after });
  }

  /** The same cursor, signed with `secret` instead (the connection and key it names). */
  function resigned(cursor: string, userId: string, secret: string): string {
    const connection = `User.posts:${localIdOf(userId, 'id', 'User')}`;
    const key = createCursorCodec(NEW).decodeCursor(connection, cursor);
    expect(key).not.toBeNull();
    return createCursorCodec(secret).encodeCursor(connection, key!);
  }

  it('reads a cursor the previous secret signed, and pages exactly as from its own', async () => {
    const first = (await posts()).data!.userByUsername;
    const own = first.posts.pageInfo.endCursor as string;
    // What the server hands out verifies under the new secret.
    expect(createCursorCodec(NEW).decodeCursor(`User.posts:${localIdOf(first.id, 'id', 'User')}`, own)).not.toBeNull();
    const fromOwn = await posts(own);
    const fromOld = await posts(resigned(own, first.id, OLD));
    expect(fromOld.errors).toBeUndefined();
    expect(fromOld.data).toEqual(fromOwn.data);
    expect(fromOld.data!.userByUsername.posts.edges.map((e) => e.node.content)).toEqual(['post 3', 'post 2']);
  });

  it('refuses a cursor of a secret it does not list, naming the argument', async () => {
    const first = (await posts()).data!.userByUsername;
    const res = await posts(resigned(first.posts.pageInfo.endCursor as string, first.id, 'a-secret-nobody-configured-0123'));
    expect(res.data?.userByUsername ?? null).toBeNull();
    expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: 'after' });
  });
});
