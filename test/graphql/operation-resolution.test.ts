/**
 * An `operationName` that resolves to no operation, and subscriptions over HTTP: refused with a
 * 4xx before anything executes, mutations included, over POST and GET, and before the
 * cost limit could be skipped (issue 16, defects 1 and 8; operation-name.test.ts has
 * the messages).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('operation resolution', (target) => {
  let server: TestServer;
  let member: string;

  beforeAll(async () => {
    server = await startTestServer({ target, env: { LIST_APPLIER: 'false' } });
    const input = aUser();
    member = await server.token(input.username);
    const admin = await server.token('root', { admin: true });
    await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input }, admin);
  });
  afterAll(() => server.close());

  async function post(body: Record<string, unknown>, token?: string) {
    const res = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    return { status: res.status, ...((await res.json()) as { data?: unknown; errors?: Array<{ message: string; extensions?: { code?: string } }> }) };
  }

  const createPost = `mutation Write { createPost(input: { content: "should never be stored" }) { post { id } } }`;

  it('refuses a mutation whose operationName names no operation, and commits nothing', async () => {
    const before = server.dump();
    const res = await post({ query: createPost, operationName: 'Nope' }, member);
    expect(res.status).toBe(400);
    expect(res.errors?.[0]?.extensions?.code).toBe('OPERATION_RESOLUTION_FAILURE');
    expect(res.errors?.[0]?.message).toBe('the document has no operation named "Nope"');
    expect(res.data).toBeUndefined();
    expect(server.dump()).toEqual(before);
  });

  it('refuses the same over GET, and commits nothing', async () => {
    const before = server.dump();
    const search = new URLSearchParams({ query: createPost, operationName: 'Nope' });
    const res = await fetch(`${server.url}?${search}`, { headers: { authorization: `Bearer ${member}`, 'apollo-require-preflight': 'true' } });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { errors: Array<{ extensions: { code: string } }> };
    expect(body.errors[0]!.extensions.code).toBe('OPERATION_RESOLUTION_FAILURE');
    expect(server.dump()).toEqual(before);
  });

  it('refuses an empty operationName and a name given to an anonymous operation', async () => {
    for (const operationName of ['', 'Anything']) {
      const res = await post({ query: `{ viewer { id } }`, operationName });
      expect(res.status, operationName).toBe(400);
      expect(res.errors?.[0]?.extensions?.code).toBe('OPERATION_RESOLUTION_FAILURE');
      expect(res.errors?.[0]?.message).toBe(`the document has no operation named "${operationName}"`);
    }
  });

  it('does not skip the cost limit: an unresolved costly operation is refused before any store call', async () => {
    const ids = JSON.stringify(Array.from({ length: 100 }, () => 'VXNlcjowMDAwMDAwMC0wMDAwLTQwMDAtODAwMC0wMDAwMDAwMDAwMDA='));
    const fields = Array.from({ length: 15 }, (_, i) => `a${i}: nodes(ids: ${ids}) { ... on User { posts(first: 100) { edges { node { id } } } } }`).join(' ');
    const res = await post({ query: `query Costly { ${fields} }`, operationName: 'Other' });
    expect(res.status).toBe(400);
    expect(res.errors?.[0]?.extensions?.code).toBe('OPERATION_RESOLUTION_FAILURE');
    // Named correctly, the cost limit refuses it.
    const named = await post({ query: `query Costly { ${fields} }`, operationName: 'Costly' });
    expect(named.status).toBe(400);
    expect(named.errors?.[0]?.message).toMatch(/Query cost limit of 10000 exceeded/);
  });

  it('says subscriptions are served over WebSocket, with a 400', async () => {
    const res = await post({ query: `subscription { suspensionsChanged { cursor } }` });
    expect(res.status).toBe(400);
    expect(res.errors?.[0]).toMatchObject({
      message: 'subscriptions are served over WebSocket (protocol graphql-transport-ws) at /graphql, not over HTTP',
      extensions: { code: 'BAD_REQUEST' },
    });
  });
});
