/**
 * Every environment variable the code reads is in the configuration table of
 * docs/operations.md. The variables are found two ways, so a new one cannot slip past
 * either: a scan of src/ for the ways code reads the environment (`process.env.X`,
 * `env.X`, `env['X']`, `int(env, 'X', …)`, `const { X } = process.env`), and
 * `loadConfig` run on an environment that records every name it is asked for, in
 * development and in production (names it builds at run time, such as the secrets').
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { readDoc, ROOT } from './markdown.js';

const NAME = '[A-Z][A-Z0-9_]*';

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return entry.name === '__generated__' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The environment variables `source` reads, by the patterns the code uses. */
export function envReadsIn(source: string): string[] {
  const patterns = [
    new RegExp(`\\benv\\??\\.(${NAME})\\b`, 'g'), // process.env.X, env.X
    new RegExp(`\\benv\\s*\\[\\s*['"\`](${NAME})['"\`]\\s*\\]`, 'g'), // env['X']
    new RegExp(`\\(\\s*(?:process\\.)?env\\s*,\\s*['"\`](${NAME})['"\`]`, 'g'), // int(env, 'X', …)
  ];
  const names = patterns.flatMap((p) => [...source.matchAll(p)].map((m) => m[1]!));
  for (const m of source.matchAll(/\{([^{}]*)\}\s*=\s*(?:process\.)?env\b/g)) {
    for (const part of m[1]!.split(',')) {
      const key = /^\s*(\w+)/.exec(part)?.[1];
      if (key && new RegExp(`^${NAME}$`).test(key)) names.push(key);
    }
  }
  return names;
}

/** The names `loadConfig` asks its environment for, given `base`. */
function namesLoadConfigReads(base: Record<string, string>): string[] {
  const asked = new Set<string>();
  const env = new Proxy(base, {
    get(target, key) {
      if (typeof key === 'string') asked.add(key);
      return target[key as string];
    },
    has(target, key) {
      if (typeof key === 'string') asked.add(key);
      return key in target;
    },
  });
  loadConfig(env);
  return [...asked].filter((k) => new RegExp(`^${NAME}$`).test(k));
}

/** Every variable the code reads, with the files (or `loadConfig`) that read it. */
function variablesTheCodeReads(): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  const add = (name: string, where: string) => found.set(name, (found.get(name) ?? new Set()).add(where));
  for (const file of sourceFiles('src')) for (const name of envReadsIn(readFileSync(join(ROOT, file), 'utf8'))) add(name, file);
  const secret = () => randomBytes(32).toString('base64');
  const bases: Record<string, string>[] = [{}, { NODE_ENV: 'production', AUTH_SECRET: secret(), CURSOR_SECRET: secret() }, { STORE: 'cassandra' }];
  for (const base of bases) {
    for (const name of namesLoadConfigReads(base)) add(name, 'loadConfig');
  }
  return found;
}

/** The variables the configuration table of docs/operations.md lists (first column). */
function documentedVariables(): Set<string> {
  const guide = readDoc('docs/operations.md');
  const start = guide.indexOf('\n## Configuration\n');
  expect(start, 'docs/operations.md has a "## Configuration" section').toBeGreaterThan(-1);
  const end = guide.indexOf('\n## ', start + 1);
  const section = guide.slice(start, end === -1 ? undefined : end);
  const names = new Set<string>();
  for (const row of section.matchAll(/^\|([^|\n]+)\|/gm)) {
    for (const m of row[1]!.matchAll(new RegExp(`\`(${NAME})\``, 'g'))) names.add(m[1]!);
  }
  return names;
}

describe('the configuration table', () => {
  it('finds the variables the code reads, each way they are read', () => {
    const read = variablesTheCodeReads();
    expect(read.get('PORT')).toContain('src/config.ts'); // int(env, 'PORT', …)
    expect(read.get('SQLITE_PATH')).toContain('src/config.ts'); // env.SQLITE_PATH
    expect(read.get('DEBUG_STACK')).toContain('src/scripts/cli.ts'); // process.env.DEBUG_STACK
    expect(read.get('AUTH_SECRET')).toContain('loadConfig'); // a name built at run time
    expect(read.size).toBeGreaterThan(40);
    expect(envReadsIn("const { A_B, c } = process.env; f(env, `X_Y`); env['Z'];").sort()).toEqual(['A_B', 'X_Y', 'Z']);
  });

  it('lists every environment variable the code reads', () => {
    const documented = documentedVariables();
    const missing = [...variablesTheCodeReads()]
      .filter(([name]) => !documented.has(name))
      .map(([name, where]) => `${name} (read by ${[...where].join(', ')})`);
    expect(missing, 'variables to add to the configuration table of docs/operations.md').toEqual([]);
  });
});
