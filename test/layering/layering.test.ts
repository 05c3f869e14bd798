/**
 * The layering of DESIGN.md, kept by a small import scan of src/: dependencies point
 * down (graphql -> features -> paging, saga -> store), only the composition root picks
 * a store adapter, only the entry points and the application import the composition
 * root, the GraphQL layer builds no query (it imports no table declaration), the
 * configuration knows no feature and of an adapter only the settings it declares, the
 * store reads no configuration, src/'s root holds only what a newcomer opens first,
 * and the areas of src/ (each feature folder an area of its own) form no import cycle.
 * CONTRIBUTING.md lists the rules for contributors.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

/** One import: the importing file and the imported one, both relative to the project root. */
interface ImportEdge {
  readonly from: string;
  readonly to: string;
}

/** A layering rule: files matching `from` must not import files matching `to`. */
interface Rule {
  readonly name: string;
  readonly from: RegExp;
  readonly to: RegExp;
  /** Files the rule does not apply to. */
  readonly except?: RegExp;
  /** Imported files the rule allows. */
  readonly allow?: RegExp;
}

const ADAPTERS = /^src\/store\/(cassandra|sqlite)\//;
/** The settings an adapter declares: types and defaults, no driver code (the configuration produces them). */
const ADAPTER_SETTINGS = /^src\/store\/[a-z]+\/[a-z]+-settings\.ts$/;
/** What a query is built from: table declarations, and the store's statement and table builders. */
const TABLE_DECLARATIONS = /(-tables\.ts$|^src\/store\/(table|statements)\.ts$)/;

const RULES: Rule[] = [
  { name: 'the GraphQL layer never imports the saga runner', from: /^src\/graphql\//, to: /^src\/saga\// },
  { name: 'the GraphQL layer never imports a store adapter', from: /^src\/graphql\//, to: ADAPTERS },
  { name: 'a feature never imports a store adapter', from: /^src\/features\//, to: ADAPTERS },
  { name: 'a feature never imports the GraphQL layer', from: /^src\/features\//, to: /^src\/graphql\// },
  { name: 'the configuration imports no feature', from: /^src\/config\.ts$/, to: /^src\/features\// },
  {
    name: 'the configuration imports no store adapter (but the settings an adapter declares)',
    from: /^src\/config\.ts$/,
    to: ADAPTERS,
    allow: ADAPTER_SETTINGS,
  },
  { name: 'the store reads no configuration (each adapter declares its own settings)', from: /^src\/store\//, to: /^src\/config\.ts$/ },
  { name: 'the paging engine knows no feature, GraphQL or saga', from: /^src\/paging\//, to: /^src\/(features|graphql|saga)\// },
  { name: 'the saga runner knows no feature or GraphQL', from: /^src\/saga\//, to: /^src\/(features|graphql)\// },
  {
    name: 'only the composition root picks a store adapter',
    from: /^src\//,
    to: ADAPTERS,
    except: /^src\/(composition-root\.ts$|store\/)/,
    allow: ADAPTER_SETTINGS,
  },
  {
    name: 'the GraphQL layer builds no query (imports no table declaration)',
    from: /^src\/graphql\//,
    to: TABLE_DECLARATIONS,
  },
  {
    name: 'only the entry points and the application import the composition root',
    from: /^src\//,
    to: /^src\/composition-root\.ts$/,
    except: /^src\/(main\.ts|serve\.ts|app\.ts|scripts\/)/,
  },
  {
    name: 'nothing below the application imports the composition root or the app',
    from: /^src\/(graphql|features|paging|saga|store)\//,
    to: /^src\/(composition-root|app|serve|main)\.ts$/,
  },
];

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every relative import (static, dynamic, re-export, type-only) of the files under src/. */
function importsOf(files: readonly string[]): ImportEdge[] {
  const specifier = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g;
  return files.flatMap((from) =>
    [...readFileSync(join(ROOT, from), 'utf8').matchAll(specifier)].map((m) => ({
      from,
      to: relative(ROOT, join(ROOT, dirname(from), m[1]!)).replace(/\.js$/, '.ts'),
    })),
  );
}

/**
 * The area of a file: its folder under src/ (`src/paging/engine.ts` -> `paging`), each
 * feature and each store adapter an area of its own (`src/features/lists/lists.ts` ->
 * `features/lists`, `src/store/sqlite/…` -> `store/sqlite`; what features share, like
 * `src/features/actor.ts`, is `features`), or the file itself at the top (`src/app.ts` -> `app`).
 */
function areaOf(file: string): string {
  const parts = file.split('/').slice(1);
  if (parts.length === 1) return parts[0]!.replace(/\.ts$/, '');
  return (parts[0] === 'store' || parts[0] === 'features') && parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

/**
 * What src/'s root may hold: the entry point (main.ts, with serve.ts, the process it
 * runs), the app's assembly, the composition root, the configuration and the shared
 * error types. Everything else sits in a folder named for its layer.
 */
const ROOT_FILES = ['app.ts', 'composition-root.ts', 'config.ts', 'errors.ts', 'main.ts', 'serve.ts'];
const MAX_ROOT_FILES = 7;

/** The files at src/'s root that are not among `allowed`, or every file past the limit. */
function looseFiles(files: readonly string[], allowed: readonly string[] = ROOT_FILES): string[] {
  const atRoot = files.filter((f) => f.split('/').length === 2).map((f) => f.slice('src/'.length));
  const loose = atRoot.filter((f) => !allowed.includes(f));
  return atRoot.length > MAX_ROOT_FILES ? [...loose, `${atRoot.length} files at src/'s root, over ${MAX_ROOT_FILES}`] : loose;
}

/** An import cycle between areas, as "a -> b -> a", or null when every import points down. */
function areaCycle(edges: readonly ImportEdge[]): string | null {
  const next = new Map<string, Set<string>>();
  for (const e of edges) {
    const [from, to] = [areaOf(e.from), areaOf(e.to)];
    if (from !== to) next.set(from, (next.get(from) ?? new Set()).add(to));
  }
  const done = new Set<string>();
  const visit = (area: string, path: string[]): string | null => {
    if (path.includes(area)) return [...path.slice(path.indexOf(area)), area].join(' -> ');
    if (done.has(area)) return null;
    for (const to of next.get(area) ?? []) {
      const cycle = visit(to, [...path, area]);
      if (cycle) return cycle;
    }
    done.add(area);
    return null;
  };
  for (const area of next.keys()) {
    const cycle = visit(area, []);
    if (cycle) return cycle;
  }
  return null;
}

/** The imports that break a rule, as "file -> import (rule)". */
function violations(edges: readonly ImportEdge[], rules: readonly Rule[] = RULES): string[] {
  return edges.flatMap((e) =>
    rules
      .filter((r) => r.from.test(e.from) && r.to.test(e.to) && !r.except?.test(e.from) && !r.allow?.test(e.to))
      .map((r) => `${e.from} -> ${e.to} (${r.name})`),
  );
}

describe('the layering', () => {
  const edges = importsOf(sourceFiles('src'));

  it('finds the imports it checks', () => {
    // The scan itself works: it sees imports that exist, of every kind.
    expect(edges).toContainEqual({ from: 'src/app.ts', to: 'src/composition-root.ts' });
    expect(edges).toContainEqual({ from: 'src/composition-root.ts', to: 'src/store/sqlite/sqlite-store.ts' });
    expect(edges).toContainEqual({ from: 'src/graphql/context.ts', to: 'src/features/actor.ts' });
    expect(edges.length).toBeGreaterThan(100);
  });

  it('holds: no import breaks a rule', () => {
    expect(violations(edges)).toEqual([]);
  });

  it('points down: the areas of src/ import one another without a cycle', () => {
    expect(areaCycle(edges)).toBeNull();
    // The check sees a cycle when there is one.
    expect(areaCycle([...edges, { from: 'src/store/port.ts', to: 'src/graphql/errors.ts' }])).toContain('store -> graphql');
    expect(areaOf('src/features/lists/lists.ts')).toBe('features/lists');
    expect(areaOf('src/features/actor.ts')).toBe('features');
    expect(areaOf('src/store/sqlite/sqlite-store.ts')).toBe('store/sqlite');
    expect(areaOf('src/composition-root.ts')).toBe('composition-root');
  });

  it('keeps every feature folder out of a cycle with another: the check fails when one imports back', () => {
    // The directory implements the port the users feature declares (profile-indexes.ts):
    // directory -> users only. An import the other way closes a cycle, and fails.
    expect(edges.some((e) => areaOf(e.from) === 'features/directory' && areaOf(e.to) === 'features/users')).toBe(true);
    expect(edges.filter((e) => areaOf(e.from) === 'features/users' && areaOf(e.to) === 'features/directory')).toEqual([]);
    const back = { from: 'src/features/users/users.ts', to: 'src/features/directory/name-index.ts' };
    expect(areaCycle([...edges, back])).toMatch(/features\/(users|directory) -> features\/(users|directory) -> features\/(users|directory)/);
  });

  it("keeps src/'s root to what a newcomer opens first, and fails on a loose file", () => {
    const files = sourceFiles('src');
    expect(looseFiles(files)).toEqual([]);
    expect(files.filter((f) => f.split('/').length === 2).length).toBeLessThanOrEqual(MAX_ROOT_FILES);
    // Proven to fail: a file of a layer left at the root, and too many files even when named.
    expect(looseFiles([...files, 'src/ws-server.ts'])).toEqual(['ws-server.ts']);
    const eight = Array.from({ length: 8 }, (_, i) => `src/f${i}.ts`);
    expect(looseFiles(eight, eight.map((f) => f.slice(4)))).toEqual(["8 files at src/'s root, over 7"]);
  });

  it('fails on each kind of import the issue forbids, and passes the imports it allows', () => {
    const broken = (from: string, to: string) => violations([{ from, to }]).map((v) => v.slice(v.indexOf(' (') + 2, -1));
    expect(broken('src/graphql/context.ts', 'src/saga/saga-runner.ts')).toEqual(['the GraphQL layer never imports the saga runner']);
    expect(broken('src/graphql/resolvers/user-resolvers.ts', 'src/store/cassandra/cassandra-store.ts')).toContain(
      'the GraphQL layer never imports a store adapter',
    );
    expect(broken('src/features/users/users.ts', 'src/store/sqlite/sqlite-store.ts')).toContain('a feature never imports a store adapter');
    expect(broken('src/config.ts', 'src/features/suspensions/buckets.ts')).toEqual(['the configuration imports no feature']);
    expect(broken('src/config.ts', 'src/store/cassandra/cassandra-schema.ts')).toContain(
      'the configuration imports no store adapter (but the settings an adapter declares)',
    );
    expect(broken('src/config.ts', 'src/store/cassandra/cassandra-settings.ts')).toEqual([]);
    expect(broken('src/store/cassandra/cassandra-connect.ts', 'src/config.ts')).toEqual([
      'the store reads no configuration (each adapter declares its own settings)',
    ]);
    expect(broken('src/store/port.ts', 'src/config.ts')).toEqual(['the store reads no configuration (each adapter declares its own settings)']);
    expect(broken('src/graphql/loaders.ts', 'src/features/users/users.ts')).toEqual([]);
    expect(broken('src/features/suspensions/suspensions.ts', 'src/saga/saga-runner.ts')).toEqual([]);
    expect(broken('src/composition-root.ts', 'src/store/cassandra/cassandra-store.ts')).toEqual([]);
    expect(broken('src/seed/demo.ts', 'src/composition-root.ts')).toEqual(['only the entry points and the application import the composition root']);
    expect(broken('src/graphql/loaders.ts', 'src/composition-root.ts')).toContain('only the entry points and the application import the composition root');
    expect(broken('src/scripts/seed.ts', 'src/composition-root.ts')).toEqual([]);
    expect(broken('src/serve.ts', 'src/composition-root.ts')).toEqual([]);
    expect(broken('src/graphql/resolvers/list-resolvers.ts', 'src/features/lists/lists-tables.ts')).toEqual([
      'the GraphQL layer builds no query (imports no table declaration)',
    ]);
    expect(broken('src/graphql/context.ts', 'src/store/table.ts')).toEqual(['the GraphQL layer builds no query (imports no table declaration)']);
    expect(broken('src/paging/engine.ts', 'src/features/timeline/timeline.ts')).toEqual(['the paging engine knows no feature, GraphQL or saga']);
  });
});
