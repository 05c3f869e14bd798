/**
 * The production install holds what the server needs, and `engines` tells the truth.
 *
 * `npm ci --omit=dev` installs `dependencies` only, so every package that `src/`
 * imports at run time must be listed there (a package that is only a devDependency,
 * or only present because another package happens to depend on it, breaks the image).
 * `.ci/run` additionally installs production-only into a copy and starts it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
  engines: { node: string };
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as {
  packages: Record<string, { engines?: { node?: string } | string[]; dev?: boolean }>;
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.ts$/.test(entry.name) && !/\.d\.ts$/.test(entry.name) ? [path] : [];
  });
}

/** The package a bare specifier names: `@scope/name/sub` -> `@scope/name`. */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** Packages a file loads at run time: static imports and re-exports (not `import type`), dynamic imports. */
function runtimeImports(source: string): string[] {
  const found: string[] = [];
  const statement = /^\s*(import|export)\s+(type\s+)?([^;]*?)\s+from\s+'([^']+)'/gms;
  for (const m of source.matchAll(statement)) if (!m[2]) found.push(m[4]!);
  for (const m of source.matchAll(/^\s*import\s+'([^']+)'/gm)) found.push(m[1]!);
  for (const m of source.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) found.push(m[1]!);
  // Relative paths and absolute URLs (a browser module in a page's template) name no package.
  return found.filter((s) => !s.startsWith('.') && !s.startsWith('/') && !s.startsWith('node:') && !builtinModules.includes(s)).map(packageOf);
}

/** Packages the server loads by file rather than by import: the playground's browser assets. */
function assetPackages(): string[] {
  const playground = readFileSync('src/graphql/playground.ts', 'utf8');
  return [...playground.matchAll(/pkg: '([^']+)'/g)].map((m) => m[1]!);
}

describe('dependencies', () => {
  const imported = new Set(sourceFiles('src').flatMap((file) => runtimeImports(readFileSync(file, 'utf8'))));

  it('finds the imports of a module, skipping type-only ones', () => {
    expect(
      runtimeImports(`import type { A } from 'types-only';\nimport {\n  b,\n  c,\n} from '@scope/pkg/sub';\nexport { d } from 'reexported';\nimport 'side-effect';\nconst e = await import('lazy');\nimport { f } from './local.js';\nimport { g } from 'node:fs';`),
    ).toEqual(['@scope/pkg', 'reexported', 'side-effect', 'lazy']);
  });

  it('lists every package src/ imports at run time in `dependencies`', () => {
    const missing = [...imported].filter((name) => !(name in pkg.dependencies)).sort();
    expect(missing).toEqual([]);
  });

  it('lists nothing in `dependencies` that the server does not load', () => {
    const used = new Set([...imported, ...assetPackages()]);
    // The types of a runtime package are not needed at run time either.
    const unused = Object.keys(pkg.dependencies).filter((name) => !used.has(name)).sort();
    expect(unused).toEqual([]);
  });

  it('accepts in `engines` only Node versions every locked package supports (no EBADENGINE)', () => {
    const conflicts = Object.entries(lock.packages)
      .map(([path, info]) => ({ path, node: Array.isArray(info.engines) ? undefined : info.engines?.node }))
      .filter((p): p is { path: string; node: string } => p.path !== '' && typeof p.node === 'string')
      .filter((p) => !semver.subset(pkg.engines.node, p.node, { includePrerelease: false }))
      .map((p) => `${p.path.replace(/^.*node_modules\//, '')} needs node ${p.node}`);
    expect(conflicts).toEqual([]);
  });
});
