/**
 * The AUTH_* settings: an identity provider's key set or a shared secret, never both;
 * AUTH_ISSUER and AUTH_AUDIENCE required with AUTH_JWKS_URL in production, and the URL
 * https; AUTH_PREVIOUS_SECRETS under AUTH_SECRET's rules; AUTH_ROLES_CLAIM's forms.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

const real = () => randomBytes(32).toString('base64');
const JWKS = 'https://idp.example.com/.well-known/jwks.json';

describe('authentication settings', () => {
  it('reads an identity provider: its key set, issuer, audiences and roles claim', () => {
    const c = loadConfig({
      AUTH_JWKS_URL: JWKS,
      AUTH_ISSUER: 'https://idp.example.com/',
      AUTH_AUDIENCE: 'api://relay, 6f1c0f2e-0000-4000-8000-000000000000',
      AUTH_ROLES_CLAIM: 'realm_access.roles',
    });
    expect(c.auth).toEqual({
      kind: 'identity-provider',
      jwksUrl: JWKS,
      issuer: 'https://idp.example.com/',
      audiences: ['api://relay', '6f1c0f2e-0000-4000-8000-000000000000'],
      rolesClaim: 'realm_access.roles',
    });
    // No shared secret is in use, so none fell back to the development one.
    expect(c.devSecrets).toEqual(['CURSOR_SECRET']);
  });

  it('refuses a shared secret beside an identity provider', () => {
    expect(() => loadConfig({ AUTH_JWKS_URL: JWKS, AUTH_SECRET: real() })).toThrow(
      new ConfigError("AUTH_SECRET must not be set with AUTH_JWKS_URL: tokens are verified against the identity provider's keys only; unset one of them"),
    );
    expect(() => loadConfig({ AUTH_JWKS_URL: JWKS, AUTH_PREVIOUS_SECRETS: real() })).toThrow(/^AUTH_PREVIOUS_SECRETS must not be set with AUTH_JWKS_URL/);
  });

  it('in production, requires AUTH_ISSUER and AUTH_AUDIENCE with AUTH_JWKS_URL, naming what is missing, and an https URL', () => {
    const production = (env: Record<string, string>) => loadConfig({ NODE_ENV: 'production', CURSOR_SECRET: real(), AUTH_JWKS_URL: JWKS, ...env });
    expect(() => production({})).toThrow(/^AUTH_JWKS_URL needs AUTH_ISSUER and AUTH_AUDIENCE when NODE_ENV=production/);
    expect(() => production({ AUTH_ISSUER: 'https://idp.example.com/' })).toThrow(/^AUTH_JWKS_URL needs AUTH_AUDIENCE when NODE_ENV=production/);
    expect(() => production({ AUTH_AUDIENCE: 'api://relay' })).toThrow(/^AUTH_JWKS_URL needs AUTH_ISSUER when NODE_ENV=production/);
    const both = { AUTH_ISSUER: 'https://idp.example.com/', AUTH_AUDIENCE: 'api://relay' };
    expect(production(both).auth).toMatchObject({ kind: 'identity-provider', issuer: 'https://idp.example.com/', audiences: ['api://relay'] });
    expect(() => production({ ...both, AUTH_JWKS_URL: 'http://idp.example.com/jwks.json' })).toThrow(
      'AUTH_JWKS_URL must be an https URL when NODE_ENV=production, got "http://idp.example.com/jwks.json"',
    );
    // Outside production a local provider over http is fine.
    expect(loadConfig({ AUTH_JWKS_URL: 'http://127.0.0.1:8080/jwks.json' }).auth).toMatchObject({ jwksUrl: 'http://127.0.0.1:8080/jwks.json' });
    expect(() => loadConfig({ AUTH_JWKS_URL: 'idp.example.com/jwks' })).toThrow(/^AUTH_JWKS_URL must be the URL of the identity provider's JSON Web Key Set/);
    expect(() => loadConfig({ AUTH_JWKS_URL: 'ftp://idp.example.com/jwks' })).toThrow(/^AUTH_JWKS_URL must be an https URL \(or http, outside production\)/);
  });

  it('reads AUTH_PREVIOUS_SECRETS under the rules of AUTH_SECRET', () => {
    const [current, old1, old2] = [real(), real(), real()];
    expect(loadConfig({ AUTH_SECRET: current, AUTH_PREVIOUS_SECRETS: ` ${old1} ,${old2}` }).auth).toMatchObject({
      kind: 'shared-secret',
      secret: current,
      previousSecrets: [old1, old2],
    });
    expect(() => loadConfig({ AUTH_SECRET: current, AUTH_PREVIOUS_SECRETS: `${old1},short` })).toThrow(
      'AUTH_PREVIOUS_SECRETS (entry 2) must be at least 16 bytes long, got 5',
    );
    const production = { NODE_ENV: 'production', AUTH_SECRET: current, CURSOR_SECRET: real() };
    expect(() => loadConfig({ ...production, AUTH_PREVIOUS_SECRETS: 'x'.repeat(20) })).toThrow(/^AUTH_PREVIOUS_SECRETS \(entry 1\) must be at least 32 bytes/);
    expect(() => loadConfig({ ...production, AUTH_PREVIOUS_SECRETS: 'ab'.repeat(20) })).toThrow(/^AUTH_PREVIOUS_SECRETS \(entry 1\) must not be one character or a short pattern/);
    expect(loadConfig({ ...production, AUTH_PREVIOUS_SECRETS: old1 }).auth).toMatchObject({ previousSecrets: [old1] });
  });

  it('reads AUTH_ROLES_CLAIM as a claim name, a namespaced URL or a dotted path, and refuses an empty segment', () => {
    for (const claim of ['roles', 'groups', 'cognito:groups', 'realm_access.roles', 'https://example.com/roles']) {
      expect(loadConfig({ AUTH_ROLES_CLAIM: claim }).auth.rolesClaim).toBe(claim);
    }
    for (const bad of ['realm_access.', '.roles', 'a..b', 'my roles']) {
      expect(() => loadConfig({ AUTH_ROLES_CLAIM: bad })).toThrow(/^AUTH_ROLES_CLAIM must be a claim name/);
    }
  });
});
