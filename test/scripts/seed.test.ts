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
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { ALL_TABLES } from '../../src/composition-root.js';
import { listGlobalId, meetingGlobalId } from '../../src/graphql/ids.js';
import { seedDemoData } from '../../src/seed/demo.js';
import { featuresOver } from '../support/suspension-fixture.js';
import { startTestServer } from '../support/test-server.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'seed-'));

describe('the demo data set of npm start', () => {
  it('fills every feature once, and only into an empty store', async () => {
    const server = await startTestServer();
    try {
      const demo = await seedDemoData(server.app.services);
      expect(demo).not.toBeNull();
      expect(await seedDemoData(server.app.services)).toBeNull();
      const admin = await server.token('root', { admin: true });
      const res = await server.gql(
        `query ($m: ID!, $l: ID!) {
          userByUsername(username: "alice") { posts(first: 1) { pageInfo { hasNextPage } } }
          suspendedUsers(first: 5) { edges { node { user { username } } } }
          usersByLocation(location: "paris", first: 5) { edges { node { username } } }
          meeting: node(id: $m) { ... on Meeting { acceptanceCount } }
          list: node(id: $l) { ... on OrderedList { items(first: 10) { edges { node { label } } } } }
        }`,
        { m: meetingGlobalId(demo!.meetingId), l: listGlobalId(demo!.listId) },
        admin,
      );
      expect(res.errors).toBeUndefined();
      expect(res.data).toEqual({
        userByUsername: { posts: { pageInfo: { hasNextPage: true } } },
        suspendedUsers: { edges: [{ node: { user: { username: 'dave' } } }] },
        usersByLocation: { edges: expect.arrayContaining([{ node: { username: 'alice' } }]) },
        meeting: { acceptanceCount: 3 },
        list: { items: { edges: ['milk', 'eggs', 'bread', 'tea', 'jam'].map((label) => ({ node: { label } })) } },
      });
    } finally {
      await server.close();
    }
  });
});

describe('npm run seed', () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('seeds every feature with progress and a summary, deterministically', async () => {
    const file = join(dir, 'seed.db');
    const args = ['--import', 'tsx', 'src/scripts/seed.ts', '--users', '40', '--posts-per-user', '3', '--seed', '11'];
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
    const { directory } = featuresOver(store);
    const everyone = await directory.byLastName('', { first: 100 });
    expect(everyone.edges).toHaveLength(40);
    await store.close();
  }, 120_000);
});
