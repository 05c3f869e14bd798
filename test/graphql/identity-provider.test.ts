/**
 * Tokens from an identity provider (AUTH_JWKS_URL), against a local provider serving
 * its key set over node:http: each algorithm, the roles claim, the issuer and audience
 * checks, an unknown `kid`, a key rotated at the provider, and the provider down (the
 * keys fetched before keep verifying; a key never fetched is refused with the reason),
 * over HTTP and at a WebSocket's `connection_init`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { authKey, rolesAt, signToken, type RemoteKeyTiming } from '../../src/graphql/auth.js';
import { startIdentityProvider, type IdentityProvider } from '../support/identity-provider.js';
import { liveClient, waitFor, type LiveClient } from '../support/live-client.js';
import { TEST_AUTH_SECRET, startTestServer, type TestServer } from '../support/test-server.js';

const ISSUER = 'https://idp.example.com/realms/app';
const AUDIENCE = 'https://api.example.com';
/** Admin-only: data for an admin, FORBIDDEN for a member, UNAUTHENTICATED without a valid token. */
const ADMIN_PROBE = `{ suspendedUsers(first: 1) { edges { cursor } } }`;
const SUSPENSIONS = `subscription { suspensionsChanged { cursor } }`;
/** Short enough for a test to wait past (jose's defaults: 10 min and 30 s). */
const TIMING: RemoteKeyTiming = { cacheMaxAgeMs: 400, cooldownMs: 150, timeoutMs: 1_000 };
const ADMIN_DATA = { suspendedUsers: { edges: [] } };

/** Claims of a token meant for this API, its roles where Keycloak puts them. */
const claims = (roles: string[], over: Record<string, unknown> = {}) => ({ iss: ISSUER, aud: AUDIENCE, realm_access: { roles }, ...over });

describe('tokens from an identity provider (AUTH_JWKS_URL)', () => {
  let provider: IdentityProvider;
  const servers: TestServer[] = [];
  const clients: LiveClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.dispose();
    for (const s of servers.splice(0)) await s.close();
    await provider.close();
  });

  /** A provider and a server trusting it, with Keycloak's roles claim. */
  async function setUp(env: Record<string, string> = {}) {
    provider = await startIdentityProvider();
    const server = await startTestServer({
      env: {
        AUTH_SECRET: '',
        AUTH_JWKS_URL: provider.jwksUrl,
        AUTH_ISSUER: ISSUER,
        AUTH_AUDIENCE: AUDIENCE,
        AUTH_ROLES_CLAIM: 'realm_access.roles',
        LIST_APPLIER: 'false',
        ...env,
      },
      remoteKeys: TIMING,
    });
    servers.push(server);
    return server;
  }

  /** The error code and message of the probe with `token`. */
  async function refusal(server: TestServer, token: string) {
    const res = await server.gql(ADMIN_PROBE, {}, token);
    return { status: res.status, code: res.errors?.[0]?.extensions?.code, message: res.errors?.[0]?.message };
  }

  it('accepts RS256, ES256 and EdDSA tokens signed with the published keys, admin by the roles claim', async () => {
    const server = await setUp();
    const keys = [await provider.newKey('RS256'), await provider.newKey('ES256'), await provider.newKey('EdDSA')];
    provider.publish(...keys);
    const started = Date.now();
    for (const key of keys) {
      const admin = await server.gql(ADMIN_PROBE, {}, await provider.sign(key, 'root', claims(['admin', 'offline_access'])));
      expect(admin.errors, key.alg).toBeUndefined();
      expect(admin.data).toEqual(ADMIN_DATA);
      const member = await server.gql(ADMIN_PROBE, {}, await provider.sign(key, 'alice', claims(['user'])));
      expect(member.errors?.[0]?.extensions?.code, key.alg).toBe('FORBIDDEN');
    }
    // The key set was fetched once, and kept for its cache's age (400 ms here: a slow
    // machine may pass it while the six requests run, and fetch once more each time).
    const ages = Math.floor((Date.now() - started) / TIMING.cacheMaxAgeMs);
    expect(provider.fetches).toBeGreaterThanOrEqual(1);
    expect(provider.fetches).toBeLessThanOrEqual(1 + ages);
  });

  it('refuses a token of another issuer, of another audience, without an issuer, or signed with a shared secret', async () => {
    const server = await setUp();
    const key = await provider.newKey('ES256');
    provider.publish(key);
    expect(await refusal(server, await provider.sign(key, 'root', claims(['admin'], { iss: 'https://other.example.com/' })))).toEqual({
      status: 401,
      code: 'UNAUTHENTICATED',
      message: 'the token was issued by another issuer (`iss` is not AUTH_ISSUER)',
    });
    expect(await refusal(server, await provider.sign(key, 'root', claims(['admin'], { aud: 'https://other-api.example.com' })))).toEqual({
      status: 401,
      code: 'UNAUTHENTICATED',
      message: 'the token is meant for another audience (`aud` names none of AUTH_AUDIENCE)',
    });
    const noIssuer = await provider.sign(key, 'root', { aud: AUDIENCE, realm_access: { roles: ['admin'] } });
    expect(await refusal(server, noIssuer)).toMatchObject({ code: 'UNAUTHENTICATED' });
    // A shared-secret token, even with the right claims, is not one of the provider's.
    const hs256 = await signToken(authKey(TEST_AUTH_SECRET), 'root', { admin: true, issuer: ISSUER, audience: AUDIENCE });
    expect(await refusal(server, hs256)).toEqual({ status: 401, code: 'UNAUTHENTICATED', message: 'the token is invalid' });
    // The right token still passes.
    expect((await server.gql(ADMIN_PROBE, {}, await provider.sign(key, 'root', claims(['admin'])))).data).toEqual(ADMIN_DATA);
  });

  it('fetches the key set again for an unknown kid, and refuses the token when the provider does not publish it', async () => {
    const server = await setUp();
    const published = await provider.newKey('RS256');
    const unpublished = await provider.newKey('RS256');
    provider.publish(published);
    expect((await server.gql(ADMIN_PROBE, {}, await provider.sign(published, 'root', claims(['admin'])))).data).toEqual(ADMIN_DATA);
    await sleep(TIMING.cooldownMs + 50);
    expect(await refusal(server, await provider.sign(unpublished, 'root', claims(['admin'])))).toEqual({
      status: 401,
      code: 'UNAUTHENTICATED',
      message: "the token's signing key (`kid`) is not among the identity provider's keys (AUTH_JWKS_URL)",
    });
    expect(provider.fetches).toBe(2);
  });

  it('accepts the new key once the provider rotates to it, and refuses the retired one once the keys are fetched again', async () => {
    const server = await setUp();
    const old = await provider.newKey('RS256');
    provider.publish(old);
    const oldToken = await provider.sign(old, 'root', claims(['admin']));
    expect((await server.gql(ADMIN_PROBE, {}, oldToken)).data).toEqual(ADMIN_DATA);
    const next = await provider.newKey('RS256');
    provider.publish(next);
    await sleep(TIMING.cooldownMs + 50);
    // A token with the new kid makes the server fetch the key set again.
    expect((await server.gql(ADMIN_PROBE, {}, await provider.sign(next, 'root', claims(['admin'])))).data).toEqual(ADMIN_DATA);
    expect(await refusal(server, oldToken)).toMatchObject({ code: 'UNAUTHENTICATED', message: expect.stringMatching(/`kid`/) });
  });

  it('keeps verifying with the keys it holds while the provider is down, and refuses a key it never fetched with the reason', async () => {
    const server = await setUp();
    const cached = await provider.newKey('EdDSA');
    const later = await provider.newKey('EdDSA');
    provider.publish(cached);
    const token = await provider.sign(cached, 'root', claims(['admin']));
    expect((await server.gql(ADMIN_PROBE, {}, token)).data).toEqual(ADMIN_DATA);
    provider.setDown(true);
    provider.publish(cached, later);
    // Past jose's cache age: the server tries the provider again, which fails.
    await sleep(TIMING.cacheMaxAgeMs + 50);
    for (let i = 0; i < 3; i++) expect((await server.gql(ADMIN_PROBE, {}, token)).data).toEqual(ADMIN_DATA);
    expect(await refusal(server, await provider.sign(later, 'root', claims(['admin'])))).toEqual({
      status: 401,
      code: 'UNAUTHENTICATED',
      message:
        "the token's signing key is not among the identity provider's keys this server holds, and the provider cannot be reached now (AUTH_JWKS_URL); try again later",
    });
    // Back up: the key it could not fetch verifies.
    provider.setDown(false);
    await sleep(TIMING.cooldownMs + 50);
    expect((await server.gql(ADMIN_PROBE, {}, await provider.sign(later, 'root', claims(['admin'])))).data).toEqual(ADMIN_DATA);
  });

  it("reads an Auth0-style namespaced roles claim", async () => {
    const server = await setUp({ AUTH_ROLES_CLAIM: 'https://api.example.com/roles' });
    const key = await provider.newKey('RS256');
    provider.publish(key);
    const admin = await provider.sign(key, 'root', { iss: ISSUER, aud: [AUDIENCE, 'https://idp.example.com/userinfo'], 'https://api.example.com/roles': ['admin'] });
    expect((await server.gql(ADMIN_PROBE, {}, admin)).data).toEqual(ADMIN_DATA);
    // Keycloak's place means nothing under this setting.
    expect((await refusal(server, await provider.sign(key, 'root', claims(['admin'])))).code).toBe('FORBIDDEN');
  });

  it('over WebSocket: serves a provider token, and closes with 4403 for a refused one or a key it cannot fetch', async () => {
    const server = await setUp();
    const key = await provider.newKey('ES256');
    const uncached = await provider.newKey('ES256');
    provider.publish(key);
    const connect = (token: string) => {
      const c = liveClient(server.url, { token });
      clients.push(c);
      return c;
    };
    const admin = connect(await provider.sign(key, 'root', claims(['admin'])));
    const served = admin.subscribe(SUSPENSIONS);
    await waitFor(() => server.app.services.live.subscriptions === 1, 5_000, 'the admin subscription');
    expect(served.errors).toEqual([]);
    const wrongAudience = connect(await provider.sign(key, 'root', claims(['admin'], { aud: 'https://other-api.example.com' })));
    wrongAudience.subscribe(SUSPENSIONS);
    await waitFor(() => wrongAudience.closes.length > 0, 5_000, 'the socket to close');
    expect(wrongAudience.closes[0]).toEqual({ code: 4403, reason: 'Forbidden: the token is meant for another audience (`aud` names none of AUTH_AUDIENCE)' });
    provider.setDown(true);
    await sleep(TIMING.cacheMaxAgeMs + 50);
    const unreachable = connect(await provider.sign(uncached, 'root', claims(['admin'])));
    unreachable.subscribe(SUSPENSIONS);
    await waitFor(() => unreachable.closes.length > 0, 5_000, 'the socket to close');
    expect(unreachable.closes[0]).toMatchObject({ code: 4403, reason: expect.stringMatching(/^Forbidden: the token's signing key is not among the identity provider's keys/) });
    // The cached key still opens a socket.
    const again = connect(await provider.sign(key, 'root', claims(['admin'])));
    again.subscribe(SUSPENSIONS);
    await waitFor(() => server.app.services.live.subscriptions === 2, 5_000, 'the second admin subscription');
    expect(again.closes).toEqual([]);
  });
});

describe('the roles claim (AUTH_ROLES_CLAIM)', () => {
  it('reads a claim by name, a namespaced URL claim, or a dotted path into nested claims', () => {
    expect(rolesAt({ roles: ['admin'] }, 'roles')).toEqual(['admin']);
    expect(rolesAt({ groups: 'admin' }, 'groups')).toEqual(['admin']);
    expect(rolesAt({ 'cognito:groups': ['admin', 'staff'] }, 'cognito:groups')).toEqual(['admin', 'staff']);
    expect(rolesAt({ 'https://example.com/roles': ['admin'] }, 'https://example.com/roles')).toEqual(['admin']);
    expect(rolesAt({ realm_access: { roles: ['admin', 7] } }, 'realm_access.roles')).toEqual(['admin']);
    expect(rolesAt({ resource_access: { api: { roles: ['admin'] } } }, 'resource_access.api.roles')).toEqual(['admin']);
    // Absent, or not a list of names: no role.
    expect(rolesAt({ roles: ['admin'] }, 'realm_access.roles')).toEqual([]);
    expect(rolesAt({ realm_access: ['admin'] }, 'realm_access.roles')).toEqual([]);
    expect(rolesAt({ roles: { admin: true } }, 'roles')).toEqual([]);
  });
});
