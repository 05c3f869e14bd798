/**
 * Rotating the shared secret (AUTH_PREVIOUS_SECRETS): tokens signed with an earlier
 * secret still verify, new ones are signed with AUTH_SECRET, and a secret dropped from
 * the list is refused. AUTH_ISSUER and AUTH_AUDIENCE are checked on these tokens too.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { authKey, signToken } from '../../src/graphql/auth.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const ADMIN_PROBE = `{ suspendedUsers(first: 1) { edges { cursor } } }`;
const secret = () => randomBytes(24).toString('base64');

describe('shared-secret rotation', () => {
  const servers: TestServer[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
  });
  const start = async (env: Record<string, string>) => {
    const server = await startTestServer({ env: { LIST_APPLIER: 'false', ...env } });
    servers.push(server);
    return server;
  };
  const codeOf = async (server: TestServer, token: string) => (await server.gql(ADMIN_PROBE, {}, token)).errors?.[0]?.extensions?.code ?? 'ok';

  it('accepts tokens of the current and the previous secrets, and refuses the others', async () => {
    const [oldest, old, current, stranger] = [secret(), secret(), secret(), secret()];
    const server = await start({ AUTH_SECRET: current, AUTH_PREVIOUS_SECRETS: `${old},${oldest}` });
    for (const key of [current, old, oldest]) expect(await codeOf(server, await signToken(authKey(key), 'root', { admin: true }))).toBe('ok');
    expect(await codeOf(server, await signToken(authKey(stranger), 'root', { admin: true }))).toBe('UNAUTHENTICATED');
    // An expired token of a previous secret is expired, not "invalid".
    const expired = await server.gql(ADMIN_PROBE, {}, await signToken(authKey(old), 'root', { admin: true, expiresIn: '-1m' }));
    expect(expired.errors?.[0]?.message).toBe('the token has expired');
    // The rotation done: the oldest secret dropped, its tokens refused.
    const rotated = await start({ AUTH_SECRET: current, AUTH_PREVIOUS_SECRETS: old });
    expect(await codeOf(rotated, await signToken(authKey(oldest), 'root', { admin: true }))).toBe('UNAUTHENTICATED');
    expect(await codeOf(rotated, await signToken(authKey(old), 'root', { admin: true }))).toBe('ok');
  });

  it('checks AUTH_ISSUER, AUTH_AUDIENCE and AUTH_ROLES_CLAIM on shared-secret tokens when set', async () => {
    const key = secret();
    const server = await start({ AUTH_SECRET: key, AUTH_ISSUER: 'https://auth.example.com', AUTH_AUDIENCE: 'relay', AUTH_ROLES_CLAIM: 'app.roles' });
    const sign = (options: Parameters<typeof signToken>[2]) => signToken(authKey(key), 'root', { admin: true, ...options });
    expect(await codeOf(server, await sign({ issuer: 'https://auth.example.com', audience: 'relay', rolesClaim: 'app.roles' }))).toBe('ok');
    expect(await codeOf(server, await sign({ issuer: 'https://auth.example.com', audience: 'relay' }))).toBe('FORBIDDEN');
    expect(await codeOf(server, await sign({ audience: 'relay', rolesClaim: 'app.roles' }))).toBe('UNAUTHENTICATED');
    expect(await codeOf(server, await sign({ issuer: 'https://auth.example.com', rolesClaim: 'app.roles' }))).toBe('UNAUTHENTICATED');
  });
});
