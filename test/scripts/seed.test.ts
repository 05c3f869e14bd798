/**
 * `npm run seed`: fills every feature with deterministic data, shows progress and a
 * summary, and seeding again with the same seed adds no duplicates.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { Directory } from '../../src/features/directory/directory.js';
import { Users } from '../../src/features/users/users.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { ALL_TABLES } from '../../src/app.js';
import { codec } from '../support/suspension-fixture.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'seed-'));

describe('npm run seed', () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('seeds every feature with progress and a summary, deterministically', async () => {
    const file = join(dir, 'seed.db');
    const args = ['--import', 'tsx', 'scripts/seed.ts', '--users', '40', '--posts-per-user', '3', '--seed', '11'];
    const env = { ...process.env, SQLITE_PATH: file };
    const first = await run(process.execPath, args, { env, cwd: process.cwd() });
    expect(first.stderr).toContain('seeding [');
    expect(first.stdout).toContain(`Seeded ${file} with seed 11`);
    expect(first.stdout).toMatch(/users\s*│\s*40/);
    expect(first.stdout).toMatch(/posts\s*│\s*120/);
    expect(first.stdout).toMatch(/meetings\s*│\s*4/);

    const again = await run(process.execPath, args, { env, cwd: process.cwd() });
    expect(again.stdout).toMatch(/existing\s*│\s*40/);

    // The data is there and indexed: the directory finds seeded users.
    const store = new SqliteStore({ database: new Database(file) });
    await store.ensureTables(ALL_TABLES);
    let users!: Users;
    const directory = new Directory({ store, codec, loadUsers: (ids) => users.byIds(ids) });
    users = new Users(store);
    const everyone = await directory.byLastName('', { first: 100 });
    expect(everyone.edges).toHaveLength(40);
    await store.close();
  }, 120_000);
});
