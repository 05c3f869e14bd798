/**
 * `npm run -s token`: the token alone on stdout (so `TOKEN=$(npm run -s token -- alice)`
 * works), one that the server accepts; usage on --help and on a missing username; no
 * token the server would refuse (an expiry beyond MAX_TOKEN_AGE).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { createTokenVerifier } from '../../src/graphql/auth.js';
import { loadConfig } from '../../src/config.js';
import { TEST_AUTH_SECRET } from '../support/test-server.js';

const run = promisify(execFile);
const env = { ...process.env, AUTH_SECRET: TEST_AUTH_SECRET };

describe('the token command', () => {
  it('prints the token alone on stdout, signed with AUTH_SECRET', async () => {
    const { stdout } = await run('npm', ['run', '-s', 'token', '--', 'alice', '--admin'], { env });
    expect(stdout).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/);
    const tokens = createTokenVerifier(loadConfig({ AUTH_SECRET: TEST_AUTH_SECRET }).auth, { maxAgeSeconds: 30 * 86_400 });
    expect(await tokens.viewer(`Bearer ${stdout.trim()}`)).toMatchObject({ username: 'alice', isAdmin: true });
  });

  it('prints its usage on --help, and with a usage error when the username is missing', async () => {
    const help = await run(process.execPath, ['--import', 'tsx', 'src/scripts/token.ts', '--help'], { env });
    expect(help.stdout).toMatch(/^usage: npm run -s token -- <username> \[--admin\] \[--expires 30d\]/);
    const missing = await run(process.execPath, ['--import', 'tsx', 'src/scripts/token.ts'], { env }).catch((e: { code: number; stderr: string }) => e);
    expect(missing).toMatchObject({ code: 2, stderr: expect.stringMatching(/^a username is required\n\nusage: /) });
  });

  it('signs for 30 days by default, and refuses to sign beyond MAX_TOKEN_AGE', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/scripts/token.ts', 'alice'], { env: { ...env, MAX_TOKEN_AGE: '30d' } });
    const claims = decodeJwt(stdout.trim());
    expect(claims.exp! - claims.iat!).toBe(30 * 86_400);
    const beyond = await run(process.execPath, ['--import', 'tsx', 'src/scripts/token.ts', 'alice', '--expires', '90d'], { env: { ...env, MAX_TOKEN_AGE: '30d' } }).catch(
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    expect(beyond).toMatchObject({ code: 2, stdout: '' });
    expect((beyond as { stderr: string }).stderr).toMatch(/^--expires 90d is beyond MAX_TOKEN_AGE \(2592000 s\): the server would refuse this token\n/);
  });

  it('signs with AUTH_SECRET (not a previous one) as the server checks it: AUTH_ISSUER, AUTH_AUDIENCE and AUTH_ROLES_CLAIM', async () => {
    const settings = {
      AUTH_SECRET: TEST_AUTH_SECRET,
      AUTH_PREVIOUS_SECRETS: 'an-earlier-auth-secret-0123456789',
      AUTH_ISSUER: 'https://auth.example.com',
      AUTH_AUDIENCE: 'relay,relay-admin',
      AUTH_ROLES_CLAIM: 'realm_access.roles',
    };
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/scripts/token.ts', 'alice', '--admin'], { env: { ...env, ...settings } });
    expect(decodeJwt(stdout.trim())).toMatchObject({ sub: 'alice', iss: 'https://auth.example.com', aud: 'relay', realm_access: { roles: ['admin'] } });
    const server = createTokenVerifier(loadConfig(settings).auth, { maxAgeSeconds: 30 * 86_400 });
    expect(await server.viewer(`Bearer ${stdout.trim()}`)).toEqual({ username: 'alice', isAdmin: true });
    // Signed with the current secret: a server that knows only the earlier one refuses it.
    const earlierOnly = createTokenVerifier(loadConfig({ ...settings, AUTH_SECRET: settings.AUTH_PREVIOUS_SECRETS, AUTH_PREVIOUS_SECRETS: '' }).auth, { maxAgeSeconds: 30 * 86_400 });
    await expect(earlierOnly.viewer(`Bearer ${stdout.trim()}`)).rejects.toThrow('the token is invalid');
  });

  it('refuses to sign when the server takes its tokens from an identity provider (AUTH_JWKS_URL)', async () => {
    const jwks = { ...env, AUTH_SECRET: '', AUTH_JWKS_URL: 'https://idp.example.com/.well-known/jwks.json' };
    const refused = await run(process.execPath, ['--import', 'tsx', 'src/scripts/token.ts', 'alice'], { env: jwks }).catch((e: { code: number; stdout: string; stderr: string }) => e);
    expect(refused).toMatchObject({ code: 2, stdout: '' });
    expect((refused as { stderr: string }).stderr).toMatch(/^AUTH_JWKS_URL is set: the server accepts only tokens your identity provider signs/);
  });
});
