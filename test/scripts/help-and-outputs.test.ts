/**
 * The server and the benchmarks answer --help with their usage (no stack trace,
 * nothing started; seed and token have their own tests), and
 * what commands write (benchmark results, builds, data, screenshots, packed SDKs) is
 * ignored by git, so running them leaves the tree clean.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

describe('commands', () => {
  it.each([
    ['src/main.ts', /^usage: node dist\/main\.js/],
    ['bench/run.ts', /^usage: npm run bench\n/],
    ['bench/cassandra.ts', /^usage: npm run bench:cassandra\n/],
  ])('%s --help prints its usage and exits 0', async (script, usage) => {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', script, '--help']);
    expect(stdout).toMatch(usage);
    expect(stderr).toBe('');
  });

  it('write only where git ignores', async () => {
    const outputs = ['bench/results/latest.json', 'bench/results/cassandra-latest.json', '.bench-build/mercurius.js', 'dist/main.js', 'data/app.db', 'test-results/playground.png', 'sdk/dist/index.js', 'sdk/x-0.1.0.tgz'];
    const { stdout } = await run('git', ['check-ignore', '--no-index', ...outputs]);
    expect(stdout.trim().split('\n')).toEqual(outputs);
  });
});
