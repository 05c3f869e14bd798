/**
 * Query texts hashed once: the memo behind Apollo's APQ cache, and what a client sees
 * over HTTP (plain queries answered as before, APQ requests as Apollo answers them,
 * malformed requests refused exactly as before).
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueryHashes, queryHash } from '../../src/graphql/query-hashes.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

describe('QueryHashes', () => {
  it('gives the SHA-256 Apollo computes, and holds the text under it', async () => {
    const hashes = new QueryHashes();
    const hash = hashes.pin('{ viewer { id } }')?.sha256Hash;
    expect(hash).toBe(createHash('sha256').update('{ viewer { id } }').digest('hex'));
    expect(queryHash('{ viewer { id } }')).toBe(hash);
    // Asked again, the same hash from the memo.
    expect(hashes.pin('{ viewer { id } }')).toEqual({ version: 1, sha256Hash: hash });
    expect(await hashes.get(hash!)).toBe('{ viewer { id } }');
  });

  it('leaves empty and overlong texts to Apollo', () => {
    const hashes = new QueryHashes(10, 100);
    expect(hashes.pin('')).toBeNull();
    expect(hashes.pin('x'.repeat(101))).toBeNull();
    expect(hashes.size).toBe(0);
  });

  it('drops the oldest unpinned texts beyond its size, never a pinned one', async () => {
    const hashes = new QueryHashes(3);
    const first = hashes.pin('q0')!.sha256Hash; // pinned, as by a request in flight
    const others = ['q1', 'q2', 'q3', 'q4', 'q5'].map((q) => {
      const h = hashes.pin(q)!.sha256Hash;
      hashes.unpin(h);
      return h;
    });
    expect(hashes.size).toBe(3);
    expect(await hashes.get(first)).toBe('q0');
    expect(await hashes.get(others[0]!)).toBeUndefined();
    expect(await hashes.get(others[4]!)).toBe('q5');
    // Unpinned, the oldest goes with the next new text.
    hashes.unpin(first);
    hashes.pin('q6');
    expect(await hashes.get(first)).toBeUndefined();
    expect(await hashes.delete(others[4]!)).toBe(true);
    expect(await hashes.get(others[4]!)).toBeUndefined();
  });

  it('keeps a text over its size while every entry is pinned, and lets it go after', async () => {
    const hashes = new QueryHashes(2);
    const pinned = ['a', 'b', 'c'].map((q) => hashes.pin(q)!.sha256Hash);
    expect(hashes.size).toBe(3);
    for (const h of pinned) expect(await hashes.get(h)).toBeDefined();
    expect(await hashes.delete(pinned[0]!)).toBe(false);
    for (const h of pinned) hashes.unpin(h);
    hashes.pin('d');
    expect(hashes.size).toBe(2);
  });
});

describeEachStore('query texts over HTTP', (target) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ target });
  });
  afterAll(() => server.close());

  const post = async (body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as { data?: any; errors?: Array<{ message: string; extensions?: { code?: string } }> } };
  };
  const QUERY = '{ userByUsername(username: "nobody-here") { id } }';

  it('answers the same plain query alike every time, with its extensions kept', async () => {
    const answers = await Promise.all(Array.from({ length: 5 }, () => post({ query: QUERY, extensions: { client: 'test' } })));
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(a.json.data).toEqual({ userByUsername: null });
      expect(a.json.errors).toBeUndefined();
    }
  });

  it('serves automatic persisted queries as Apollo does: unknown hash, registration, then the hash alone', async () => {
    const text = '{ userByUsername(username: "apq-only") { id username } }';
    const hash = queryHash(text);
    const persisted = { persistedQuery: { version: 1, sha256Hash: hash } };
    const unknown = await post({ extensions: persisted });
    expect(unknown.json.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    const registered = await post({ query: text, extensions: persisted });
    expect(registered.json).toEqual({ data: { userByUsername: null }, extensions: expect.any(Object) });
    const byHash = await post({ extensions: persisted });
    expect(byHash.json.data).toEqual({ userByUsername: null });
    // A text whose hash is not the one given is refused, and not registered.
    const wrong = await post({ query: '{ viewer { id } }', extensions: { persistedQuery: { version: 1, sha256Hash: '0'.repeat(64) } } });
    expect(wrong.status).toBe(400);
    expect(wrong.json.errors?.[0]).toMatchObject({ message: 'provided sha does not match query', extensions: { code: 'BAD_REQUEST' } });
    const version = await post({ extensions: { persistedQuery: { version: 2, sha256Hash: hash } } });
    expect(version.status).toBe(400);
    expect(version.json.errors?.[0]).toMatchObject({ message: 'Unsupported persisted query version', extensions: { code: 'BAD_REQUEST' } });
  });

  it('refuses malformed requests exactly as before', async () => {
    const empty = await post({ query: '' });
    expect(empty.status).toBe(400);
    expect(empty.json.errors?.[0]?.message).toMatch(/non-empty `query`/);
    const badExtensions = await post({ query: QUERY, extensions: 'x' });
    expect(badExtensions.status).toBe(400);
    expect(badExtensions.json.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
    const badVariables = await post({ query: QUERY, variables: 'x' });
    expect(badVariables.status).toBe(400);
    expect(badVariables.json.errors?.[0]?.message).toMatch(/`variables` in a POST body/);
    const syntax = await post({ query: '{ viewer { ' });
    expect(syntax.status).toBe(400);
    expect(syntax.json.errors?.[0]?.extensions?.code).toBe('GRAPHQL_PARSE_FAILED');
    const badName = await post({ query: QUERY, operationName: 'Nope' });
    expect(badName.json.errors?.[0]?.extensions?.code).toBe('OPERATION_RESOLUTION_FAILURE');
  });

  it('refuses requests a form could send (CSRF), and takes them with a preflight header', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'Text/Plain; charset=utf-8']) {
      const res = await fetch(server.url, { method: 'POST', headers: { 'content-type': type }, body: JSON.stringify({ query: QUERY }) });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { errors: Array<{ message: string; extensions: { code: string } }> };
      expect(body.errors[0]!.extensions.code).toBe('BAD_REQUEST');
      expect(body.errors[0]!.message).toMatch(/Cross-Site Request Forgery/);
    }
    const get = await fetch(`${server.url}?query=${encodeURIComponent(QUERY)}`);
    expect(get.status).toBe(400);
    const withHeader = await fetch(`${server.url}?query=${encodeURIComponent(QUERY)}`, { headers: { 'apollo-require-preflight': 'true' } });
    expect(withHeader.status).toBe(200);
    expect(((await withHeader.json()) as { data: unknown }).data).toEqual({ userByUsername: null });
  });
});
