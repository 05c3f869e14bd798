/**
 * Responses are written by JSON.stringify, without Apollo's pretty-printing: whatever
 * the shape, the text is exactly what JSON.stringify gives for the same response, field order
 * and escapes included, with the store round trips in `extensions`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const CREATE_USER = `mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`;
const CREATE_POST = `mutation ($input: CreatePostInput!) { createPost(input: $input) { post { id } } }`;
const TRICKY = 'quotes " and \\ backslash, </script>, \u2028 line separator, é, 😀, a\ttab inside';

describe('response serialisation', () => {
  let server: TestServer;
  const username = aUser().username;

  beforeAll(async () => {
    server = await startTestServer();
    const token = await server.token(username);
    await server.gql(CREATE_USER, { input: { username, displayName: 'Serialiser "Tester"' } }, token);
    for (const content of [TRICKY, 'plain', 'x']) await server.gql(CREATE_POST, { input: { content } }, token);
  });

  afterAll(() => server.close());

  async function raw(query: string, variables: Record<string, unknown> = {}): Promise<string> {
    const res = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
    return res.text();
  }

  const cases: Array<[string, string]> = [
    [
      'without fragments or custom scalars',
      `query ($u: String!) { userByUsername(username: $u) { username displayName posts(first: 5) {
        edges { cursor node { id content author { username } } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }`,
    ],
    [
      'with a custom scalar',
      `query ($u: String!) { userByUsername(username: $u) { createdAt posts(first: 5) { edges { node { content createdAt } } } } }`,
    ],
    ['with a fragment', `query ($u: String!) { userByUsername(username: $u) { ...F } } fragment F on User { username displayName }`],
    ['with an error', `query ($u: String!) { userByUsername(username: $u) { posts(first: 500) { edges { cursor } } } }`],
  ];

  it.each(cases)('writes a response %s exactly as JSON.stringify would', async (_name, query) => {
    const text = await raw(query, { u: username });
    const parsed = JSON.parse(text) as { data?: unknown; errors?: unknown[]; extensions?: { storeRoundTrips?: number } };
    expect(text).toBe(JSON.stringify(parsed));
    expect(parsed.extensions?.storeRoundTrips).toEqual(expect.any(Number));
  });

  it('keeps every character of the data', async () => {
    const text = await raw(cases[0]![1], { u: username });
    const { data } = JSON.parse(text) as { data: { userByUsername: { displayName: string; posts: { edges: Array<{ node: { content: string } }> } } } };
    expect(data.userByUsername.displayName).toBe('Serialiser "Tester"');
    expect(data.userByUsername.posts.edges.map((e) => e.node.content)).toEqual(['x', 'plain', TRICKY]);
  });
});
