/**
 * An operation name the document does not hold is the client's mistake: a 400 that
 * says so, not an internal error.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('operationName', (target) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ target });
  });
  afterAll(() => server.close());

  async function post(body: Record<string, unknown>) {
    const res = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it('names an operation the document does not have', async () => {
    expect(await post({ query: 'query A { viewer { username } }', operationName: 'B' })).toEqual({
      status: 400,
      body: { errors: [{ message: 'the document has no operation named "B"', extensions: { code: 'OPERATION_RESOLUTION_FAILURE' } }], extensions: { storeRoundTrips: 0, storeStatements: 0 } },
    });
  });

  it('asks for a name when the document has several operations', async () => {
    const res = await post({ query: 'query A { viewer { username } } query B { viewer { id } }' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([
      { message: 'the document has several operations: name the one to run in operationName', extensions: { code: 'OPERATION_RESOLUTION_FAILURE' } },
    ]);
  });

  it('runs the named operation', async () => {
    const res = await post({ query: 'query A { viewer { username } } query B { viewer { id } }', operationName: 'B' });
    expect(res).toEqual({ status: 200, body: { data: { viewer: null }, extensions: { storeRoundTrips: 0, storeStatements: 0 } } });
  });
});
