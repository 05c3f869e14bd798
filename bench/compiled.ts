/**
 * Runs a benchmark compiled, as the product runs (`npm run build`, then node): tsx
 * keeps function names by wrapping every closure it creates in a helper call, a cost
 * per closure the compiled server never pays, and a page creates many (sources,
 * loaders, callbacks). `runCompiled` transpiles src/ and bench/ file by file into
 * .bench-build/tree/ (each frame keeps its file, for profiles) and runs the same
 * script from there with node; it returns only in that compiled process.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the compiled tree goes (inside the project, so its imports of packages resolve). */
export const COMPILED_TREE = '.bench-build/tree';

const MARK = 'BENCH_COMPILED';

/**
 * Call first thing with the script's `import.meta.url`: under tsx it compiles, runs the
 * compiled script with the same arguments and exits with its status; compiled, it
 * returns at once.
 */
export async function runCompiled(scriptUrl: string): Promise<void> {
  if (process.env[MARK]) return;
  const { build } = await import('esbuild');
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((f) => {
      const path = join(dir, f);
      if (statSync(path).isDirectory()) return f === 'results' || f === 'servers' ? [] : files(path);
      return path.endsWith('.ts') ? [path] : [];
    });
  // test/support: the child servers and the test server some benches start from it.
  await build({ entryPoints: [...files('src'), ...files('bench'), ...files('test/support')], outdir: COMPILED_TREE, outbase: '.', bundle: false, platform: 'node', format: 'esm', target: 'node20', logLevel: 'warning' });
  // What src/ reads beside its code (src/app.ts reads ../schema.graphql), where the compiled files look for it.
  mkdirSync(COMPILED_TREE, { recursive: true });
  copyFileSync('schema.graphql', join(COMPILED_TREE, 'schema.graphql'));
  const script = relative(process.cwd(), fileURLToPath(scriptUrl)).replace(/\.ts$/, '.js');
  const run = spawnSync(process.execPath, [join(COMPILED_TREE, script), ...process.argv.slice(2)], { stdio: 'inherit', env: { ...process.env, [MARK]: '1' } });
  process.exit(run.status ?? 1);
}
