/**
 * The layering of DESIGN.md, kept by a small import scan of src/: dependencies point
 * down (graphql -> features -> paging, saga -> store), only the composition root picks
 * a store adapter, and the configuration knows no feature and no adapter.
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
}

const ADAPTERS = /^src\/store\/(cassandra|sqlite)\//;

const RULES: Rule[] = [
  { name: 'the GraphQL layer never imports the saga runner', from: /^src\/graphql\//, to: /^src\/saga\// },
  { name: 'the GraphQL layer never imports a store adapter', from: /^src\/graphql\//, to: ADAPTERS },
  { name: 'a feature never imports a store adapter', from: /^src\/features\//, to: ADAPTERS },
  { name: 'a feature never imports the GraphQL layer', from: /^src\/features\//, to: /^src\/graphql\// },
  { name: 'the configuration imports no feature', from: /^src\/config\.ts$/, to: /^src\/features\// },
  { name: 'the configuration imports no store adapter', from: /^src\/config\.ts$/, to: ADAPTERS },
  { name: 'the paging engine knows no feature, GraphQL or saga', from: /^src\/paging\//, to: /^src\/(features|graphql|saga)\// },
  { name: 'the saga runner knows no feature or GraphQL', from: /^src\/saga\//, to: /^src\/(features|graphql)\// },
  {
    name: 'only the composition root picks a store adapter',
    from: /^src\//,
    to: ADAPTERS,
    except: /^src\/(composition-root\.ts$|store\/)/,
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

/** The imports that break a rule, as "file -> import (rule)". */
function violations(edges: readonly ImportEdge[], rules: readonly Rule[] = RULES): string[] {
  return edges.flatMap((e) =>
    rules
      .filter((r) => r.from.test(e.from) && r.to.test(e.to) && !r.except?.test(e.from))
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

  it('fails on each kind of import the issue forbids, and passes the imports it allows', () => {
    const broken = (from: string, to: string) => violations([{ from, to }]).map((v) => v.slice(v.indexOf(' (') + 2, -1));
    expect(broken('src/graphql/context.ts', 'src/saga/saga-runner.ts')).toEqual(['the GraphQL layer never imports the saga runner']);
    expect(broken('src/graphql/resolvers/user-resolvers.ts', 'src/store/cassandra/cassandra-store.ts')).toContain(
      'the GraphQL layer never imports a store adapter',
    );
    expect(broken('src/features/users/users.ts', 'src/store/sqlite/sqlite-store.ts')).toContain('a feature never imports a store adapter');
    expect(broken('src/config.ts', 'src/features/suspensions/buckets.ts')).toEqual(['the configuration imports no feature']);
    expect(broken('src/config.ts', 'src/store/cassandra/cassandra-schema.ts')).toContain('the configuration imports no store adapter');
    expect(broken('src/graphql/loaders.ts', 'src/features/users/users.ts')).toEqual([]);
    expect(broken('src/features/suspensions/suspensions.ts', 'src/saga/saga-runner.ts')).toEqual([]);
    expect(broken('src/composition-root.ts', 'src/store/cassandra/cassandra-store.ts')).toEqual([]);
  });
});
