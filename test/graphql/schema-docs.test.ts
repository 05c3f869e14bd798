/**
 * The schema documents itself: graphql-schema-linter's description rules (configured in
 * package.json, also `npm run lint:schema`) find nothing, so every type, field, argument
 * and input value has a description in the playground's docs pane.
 */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const CLI = join(dirname(require.resolve('graphql-schema-linter/package.json')), 'lib/cli.js');

describe('schema.graphql', () => {
  it('has a description on every type, field, argument and input value (0 linter findings)', async () => {
    const { stdout } = await run(process.execPath, [CLI, '--format', 'json', 'schema.graphql']).catch((err: { stdout: string }) => err);
    const { errors } = JSON.parse(stdout) as { errors: Array<{ message: string; location: { line: number } }> };
    expect(errors.map((e) => `schema.graphql:${e.location.line} ${e.message}`)).toEqual([]);
  });
});
