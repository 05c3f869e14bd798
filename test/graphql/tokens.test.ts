/**
 * Tokens must expire (issue 16, defect 11): a token without `exp` is refused, and so
 * is one whose `exp` lies further ahead than MAX_TOKEN_AGE.
 */
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authKey } from '../../src/graphql/auth.js';
import { TEST_AUTH_SECRET, startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

/** A correctly signed admin token with the given expiry (none when undefined). */
function adminToken(expiresIn?: string): Promise<string> {
  const jwt = new SignJWT({ roles: ['admin'] }).setProtectedHeader({ alg: 'HS256' }).setSubject('root').setIssuedAt();
  return (expiresIn ? jwt.setExpirationTime(expiresIn) : jwt).sign(authKey(TEST_AUTH_SECRET));
}

describeEachStore('token expiry', (target) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ target, env: { LIST_APPLIER: 'false', MAX_TOKEN_AGE: '1h' } });
  });
  afterAll(() => server.close());

  const probe = `{ suspendedUsers(first: 1) { edges { cursor } } }`;

  it('refuses a genuine token that never expires', async () => {
    const res = await server.gql(probe, {}, await adminToken());
    expect(res.status).toBe(401);
    expect(res.errors).toEqual([{ message: 'the token has no expiry (`exp`)', extensions: { code: 'UNAUTHENTICATED' } }]);
  });

  it('refuses a token that expires further ahead than MAX_TOKEN_AGE', async () => {
    for (const expiresIn of ['2h', '30d', '100y']) {
      const res = await server.gql(probe, {}, await adminToken(expiresIn));
      expect(res.status, expiresIn).toBe(401);
      expect(res.errors).toEqual([
        { message: 'the token expires too far in the future: at most 3600 s from now (MAX_TOKEN_AGE)', extensions: { code: 'UNAUTHENTICATED' } },
      ]);
    }
  });

  it('accepts a token that expires within MAX_TOKEN_AGE', async () => {
    for (const expiresIn of ['5m', '59m']) {
      const res = await server.gql(probe, {}, await adminToken(expiresIn));
      expect(res.errors, expiresIn).toBeUndefined();
      expect(res.data).toEqual({ suspendedUsers: { edges: [] } });
    }
  });

  it('accepts a token issued for exactly MAX_TOKEN_AGE by a clock ahead of the server, within CLOCK_SKEW_MS', async () => {
    // Issued by a clock 900 ms ahead: on the server's clock it expires up to a second beyond the horizon.
    const issuedAhead = () =>
      new SignJWT({ roles: ['admin'] })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject('root')
        .setIssuedAt()
        .setExpirationTime(Math.floor((Date.now() + 900) / 1000) + 3_600)
        .sign(authKey(TEST_AUTH_SECRET));
    const res = await server.gql(probe, {}, await issuedAhead());
    expect(res.errors).toBeUndefined();
    expect(res.data).toEqual({ suspendedUsers: { edges: [] } });
    const strict = await startTestServer({ target, env: { LIST_APPLIER: 'false', MAX_TOKEN_AGE: '1h', CLOCK_SKEW_MS: '0' } });
    try {
      // With no skew allowed, one issued 1.5 s ahead is beyond the horizon.
      const ahead = await new SignJWT({ roles: ['admin'] })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject('root')
        .setExpirationTime(Math.floor((Date.now() + 1_500) / 1000) + 3_600 + 1)
        .sign(authKey(TEST_AUTH_SECRET));
      expect((await strict.gql(probe, {}, ahead)).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    } finally {
      await strict.close();
    }
  });

  it('accepts the 30-day tokens `npm run token` signs under the default MAX_TOKEN_AGE', async () => {
    const defaults = await startTestServer({ target, env: { LIST_APPLIER: 'false' } });
    try {
      const res = await defaults.gql(probe, {}, await defaults.token('root', { admin: true }));
      expect(res.data).toEqual({ suspendedUsers: { edges: [] } });
    } finally {
      await defaults.close();
    }
  });
});
