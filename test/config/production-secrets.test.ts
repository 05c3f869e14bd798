/**
 * Production secrets and defaults (issue 16, defect 11): secrets of at least 32
 * bytes, none of the examples printed in the docs or docker-compose.yml, no single
 * repeated character or short pattern; demo data only on request; MAX_TOKEN_AGE.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, EXAMPLE_SECRETS, loadConfig } from '../../src/config.js';
import { startChildServer, type ChildServer } from '../support/child-server.js';

const real = () => randomBytes(32).toString('base64');
const production = (overrides: Record<string, string> = {}) => ({ NODE_ENV: 'production', AUTH_SECRET: real(), CURSOR_SECRET: real(), ...overrides });

/** Every secret value the docs (README.md, docs/*.md) and docker-compose.yml print as an example. */
function publishedExamples(): string[] {
  const compose = readFileSync('docker-compose.yml', 'utf8');
  const docs = ['README.md', ...readdirSync('docs').filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const readme = docs.map((file) => readFileSync(file, 'utf8')).join('\n');
  return [
    // Literal values only: `${VAR:?…}`, `$(openssl …)` and printf's `%s` are not secrets.
    ...[...compose.matchAll(/_SECRET: \$\{\w+:-([^}]+)\}/g)].map((m) => m[1]!),
    ...[...compose.matchAll(/_SECRET: ["']?([\w-]{8,})/g)].map((m) => m[1]!),
    ...[...readme.matchAll(/_SECRET=["']?([\w-]{8,})/g)].map((m) => m[1]!),
  ];
}

describe('production secrets', () => {
  it('accepts random secrets of 32 bytes and more', () => {
    expect(loadConfig(production())).toMatchObject({ production: true, devSecrets: [] });
  });

  it('refuses secrets shorter than 32 bytes', () => {
    const short = 'k7#Qz9!pL2@wX4$vB8%nM1^cR6&tY3*'; // 31 bytes
    expect(() => loadConfig(production({ AUTH_SECRET: short }))).toThrow(
      new ConfigError('AUTH_SECRET must be at least 32 bytes long when NODE_ENV=production, got 31'),
    );
    expect(() => loadConfig(production({ CURSOR_SECRET: short }))).toThrow(/CURSOR_SECRET must be at least 32 bytes/);
    // Outside production, 16 bytes remain enough.
    expect(loadConfig({ AUTH_SECRET: short }).auth).toMatchObject({ secret: short });
  });

  it('refuses every example secret the docs and docker-compose.yml print', () => {
    // The defaults docker-compose.yml once printed stay refused, with whatever the files print now.
    const examples = [...publishedExamples(), 'change-me-cursor-secret-0000', 'change-me-auth-secret-000000'];
    for (const example of examples) {
      expect(EXAMPLE_SECRETS, example).toContain(example);
      for (const name of ['AUTH_SECRET', 'CURSOR_SECRET']) {
        expect(() => loadConfig(production({ [name]: example })), `${name}=${example}`).toThrow(ConfigError);
      }
    }
    for (const example of EXAMPLE_SECRETS.filter((e) => Buffer.byteLength(e) >= 32)) {
      expect(() => loadConfig(production({ AUTH_SECRET: example }))).toThrow(/development secret|example secret/);
    }
  });

  it('refuses a single repeated character or a short repeated pattern, however long', () => {
    for (const weak of ['a'.repeat(16), 'a'.repeat(64), '0'.repeat(40), 'ab'.repeat(20), 'abcd'.repeat(10), '€'.repeat(20)]) {
      expect(() => loadConfig(production({ AUTH_SECRET: weak })), weak).toThrow(/must (be at least 32 bytes|not be one character or a short pattern repeated)/);
    }
    expect(() => loadConfig(production({ CURSOR_SECRET: 'x'.repeat(48) }))).toThrow(
      'CURSOR_SECRET must not be one character or a short pattern repeated when NODE_ENV=production; generate one, e.g. `openssl rand -base64 48`',
    );
  });
});

describe('production defaults', () => {
  it('loads the demo data only when SEED_DEMO=true', () => {
    expect(loadConfig(production()).seedDemo).toBe(false);
    expect(loadConfig(production({ SEED_DEMO: 'true' })).seedDemo).toBe(true);
    expect(loadConfig({}).seedDemo).toBe(true);
    expect(loadConfig({ SEED_DEMO: 'false' }).seedDemo).toBe(false);
  });

  it('starts a production server with an empty store: no demo users unless asked', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'prod-seed-'));
    const env = { NODE_ENV: 'production', AUTH_SECRET: real(), CURSOR_SECRET: real(), SEED_DEMO: '' };
    const aliceOn = async (server: ChildServer) => {
      const res = await fetch(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ userByUsername(username: "alice") { username } }' }),
      });
      return ((await res.json()) as { data: { userByUsername: unknown } }).data.userByUsername;
    };
    const plain = await startChildServer(join(dir, 'plain.db'), env);
    try {
      expect(await aliceOn(plain)).toBeNull();
      expect(plain.output()).not.toContain('seeded the demo data set');
    } finally {
      plain.process.kill('SIGKILL');
    }
    const asked = await startChildServer(join(dir, 'asked.db'), { ...env, SEED_DEMO: 'true' });
    try {
      expect(await aliceOn(asked)).toEqual({ username: 'alice' });
    } finally {
      asked.process.kill('SIGKILL');
    }
  }, 60_000);

  it('reads MAX_TOKEN_AGE as seconds or with a unit, 30 days by default', () => {
    expect(loadConfig({}).maxTokenAgeSeconds).toBe(30 * 86_400);
    expect(loadConfig({ MAX_TOKEN_AGE: '3600' }).maxTokenAgeSeconds).toBe(3_600);
    expect(loadConfig({ MAX_TOKEN_AGE: '12h' }).maxTokenAgeSeconds).toBe(43_200);
    expect(loadConfig({ MAX_TOKEN_AGE: '15m' }).maxTokenAgeSeconds).toBe(900);
    for (const bad of ['forever', '0', '10s', '400d', '-1d', '1.5h']) {
      expect(() => loadConfig({ MAX_TOKEN_AGE: bad }), bad).toThrow(`MAX_TOKEN_AGE must be a duration between 60s and 366d, such as 3600, 12h or 30d, got "${bad}"`);
    }
  });

  it('reads CURSOR_PREVIOUS_SECRETS as comma-separated secrets under the same rules, none by default', () => {
    expect(loadConfig({}).cursorPreviousSecrets).toEqual([]);
    const [a, b] = [real(), real()];
    expect(loadConfig(production({ CURSOR_PREVIOUS_SECRETS: ` ${a}, ${b} ` })).cursorPreviousSecrets).toEqual([a, b]);
    expect(() => loadConfig({ CURSOR_PREVIOUS_SECRETS: 'short' })).toThrow('CURSOR_PREVIOUS_SECRETS (entry 1) must be at least 16 bytes long, got 5');
    expect(() => loadConfig(production({ CURSOR_PREVIOUS_SECRETS: `${a},${'x'.repeat(40)}` }))).toThrow(
      /CURSOR_PREVIOUS_SECRETS \(entry 2\) must not be one character or a short pattern repeated/,
    );
    const current = real();
    expect(() => loadConfig(production({ CURSOR_SECRET: current, CURSOR_PREVIOUS_SECRETS: current }))).toThrow(
      'CURSOR_PREVIOUS_SECRETS (entry 1) is the current secret: list only the secrets it replaced',
    );
    // The refusal never prints the secret it refused.
    const refusal = (() => {
      try {
        loadConfig(production({ CURSOR_PREVIOUS_SECRETS: 'x'.repeat(40) }));
        return null;
      } catch (err) {
        return err as Error;
      }
    })();
    expect(refusal).toBeInstanceOf(ConfigError);
    expect(refusal?.message).not.toContain('x'.repeat(40));
  });
});
