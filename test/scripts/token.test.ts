/**
 * `npm run -s token`: the token alone on stdout (so `TOKEN=$(npm run -s token -- alice)`
 * works), one that the server accepts; usage on --help and on a missing username.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { authKey, viewerFromAuthorization } from '../../src/graphql/auth.js';
import { TEST_AUTH_SECRET } from '../support/test-server.js';

const run = promisify(execFile);
const env = { ...process.env, AUTH_SECRET: TEST_AUTH_SECRET };

describe('the token command', () => {
  it('prints the token alone on stdout, signed with AUTH_SECRET', async () => {
    const { stdout } = await run('npm', ['run', '-s', 'token', '--', 'alice', '--admin'], { env });
    expect(stdout).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/);
    expect(await viewerFromAuthorization(`Bearer ${stdout.trim()}`, authKey(TEST_AUTH_SECRET), 30 * 86_400)).toMatchObject({ username: 'alice', isAdmin: true });
  });

  it('prints its usage on --help, and with a usage error when the username is missing', async () => {
    const help = await run(process.execPath, ['--import', 'tsx', 'src/scripts/token.ts', '--help'], { env });
    expect(help.stdout).toMatch(/^usage: npm run -s token -- <username> \[--admin\] \[--expires 30d\]/);
    const missing = await run(process.execPath, ['--import', 'tsx', 'src/scripts/token.ts'], { env }).catch((e: { code: number; stderr: string }) => e);
    expect(missing).toMatchObject({ code: 2, stderr: expect.stringMatching(/^a username is required\n\nusage: /) });
  });
});
