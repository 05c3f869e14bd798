/**
 * `npm run seed`: fills every feature with deterministic data, shows progress and a
 * summary, and seeding again with the same seed adds no duplicates.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { ALL_TABLES, createRequestContext, createServices, demoSeeding } from '../../src/composition-root.js';
import { readConnectionCounts } from '../../src/counts/connection-counts.js';
import { listGlobalId, meetingGlobalId } from '../../src/graphql/ids.js';
import { demoIds, seedDemoData } from '../../src/seed/demo.js';
import { featuresOver } from '../support/suspension-fixture.js';
import { startChildServer } from '../support/child-server.js';
import { startTestServer } from '../support/test-server.js';
import { CassandraStore } from '../../src/store/cassandra/cassandra-store.js';
import { cassandraClient, cassandraTarget, describeEachStore, uniqueKeyspace } from '../support/stores.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'seed-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeEachStore('the demo data set of npm start', (target) => {
  it('fills every feature once, and only into an empty store', async () => {
    const server = await startTestServer({ target });
    try {
      const demo = await seedDemoData(demoSeeding(server.app.services));
      expect(demo).not.toBeNull();
      expect(await seedDemoData(demoSeeding(server.app.services))).toBeNull();
      // Every later start finds the ids again, for its log and the playground's tabs.
      expect(await demoIds(server.app.store)).toEqual(demo);
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

describe('npm run seed -- --recount', () => {
  it('counts data written before counts existed, exactly, and changes nothing when run again', async () => {
    const file = join(dir, 'recount.db');
    const env = { ...process.env, SQLITE_PATH: file };
    await run(process.execPath, ['--import', 'tsx', 'src/scripts/seed.ts', '--users', '30', '--posts-per-user', '3', '--seed', '5'], { env });
    // As before this version: no count anywhere.
    const db = new Database(file);
    db.exec('DELETE FROM t_connection_counts; DELETE FROM t_count_events; DELETE FROM t_count_items;');
    const rows = (sql: string) => db.prepare(sql).all() as Array<{ k: string; n: number }>;
    const expected = new Map<string, number>([
      ...rows('SELECT k_user_id AS k, count(*) AS n FROM t_timeline GROUP BY k_user_id').map((r) => [`posts:${r.k}`, Number(r.n)] as const),
      ...rows('SELECT k_meeting_id AS k, count(*) AS n FROM t_meeting_users GROUP BY k_meeting_id').map((r) => [`accepted:${r.k}`, Number(r.n)] as const),
      ...rows('SELECT k_list_id AS k, count(*) AS n FROM t_list_items WHERE k_deleted = 0 GROUP BY k_list_id').map((r) => [`items:${r.k}`, Number(r.n)] as const),
      ['suspended', Number((db.prepare('SELECT count(*) AS n FROM t_users_by_status').get() as { n: number }).n)],
    ]);
    db.close();
    expect(expected.get('suspended')).toBeGreaterThan(0);
    const counts = async () => {
      const store = new SqliteStore({ database: new Database(file) });
      await store.ensureTables(ALL_TABLES);
      const keys = [...expected.keys()];
      const read = await readConnectionCounts(store, keys, { nowMs: Date.now(), cluster: loadConfig({}).cluster, progress: null });
      await store.close();
      return new Map(keys.map((k, i) => [k, read[i]!]));
    };
    expect([...(await counts()).values()].every((n) => n === 0)).toBe(true);

    const first = await run(process.execPath, ['--import', 'tsx', 'src/scripts/seed.ts', '--recount'], { env });
    expect(first.stdout).toMatch(/Recounted in [\d.]+ s/);
    const all = [...expected.values()].reduce((a, b) => a + b, 0);
    expect(first.stdout).toMatch(new RegExp(`items not counted before\\s*│\\s*${all}\\b`));
    expect(await counts()).toEqual(expected);

    const again = await run(process.execPath, ['--import', 'tsx', 'src/scripts/seed.ts', '--recount'], { env });
    expect(again.stdout).toMatch(/items not counted before\s*│\s*0\b/);
    expect(await counts()).toEqual(expected);
  }, 120_000);
});

describe('npm run seed -- --reindex', () => {
  it('writes the name index of users written before it, and nothing when run again', async () => {
    const file = join(dir, 'reindex.db');
    const env = { ...process.env, SQLITE_PATH: file };
    await run(process.execPath, ['--import', 'tsx', 'src/scripts/seed.ts', '--users', '12', '--posts-per-user', '0', '--seed', '7'], { env });
    // As before this version: no name index anywhere.
    const db = new Database(file);
    db.exec("DELETE FROM t_user_name_index; DELETE FROM t_user_index_entries WHERE k_index_name = 'name'; UPDATE t_users SET v_name_ts = NULL;");
    db.close();
    const first = await run(process.execPath, ['--import', 'tsx', 'src/scripts/seed.ts', '--reindex'], { env });
    expect(first.stdout).toMatch(/users\s*│\s*12\b/);
    expect(first.stdout).toMatch(/entries written\s*│\s*12\b/);
    const store = new SqliteStore({ database: new Database(file) });
    await store.ensureTables(ALL_TABLES);
    const { directory } = featuresOver(store);
    const everyone = await directory.byLastName('', { first: 100 });
    for (const e of everyone.edges) {
      const found = await directory.byName(e.node.value, { first: 100 });
      expect(found.edges.map((f) => f.node.userId)).toContain(e.node.userId);
    }
    await store.close();
    const again = await run(process.execPath, ['--import', 'tsx', 'src/scripts/seed.ts', '--reindex'], { env });
    expect(again.stdout).toMatch(/entries written\s*│\s*0\b/);
  }, 120_000);
});

const SEED_ARGS = ['--import', 'tsx', 'src/scripts/seed.ts', '--users', '300', '--posts-per-user', '10', '--seed', '23'];

/** What a seeded file holds: row counts of the tables seeding fills, and every list's items in order. */
async function contentOf(file: string) {
  const db = new Database(file, { readonly: true });
  const count = (table: string) => Number((db.prepare(`SELECT count(*) AS n FROM t_${table}`).get() as { n: number }).n);
  const counts = Object.fromEntries(['users', 'timeline', 'suspended_users', 'meetings', 'meeting_users', 'lists'].map((t) => [t, count(t)]));
  const lists = db.prepare('SELECT k_list_id AS id, v_title AS title FROM t_lists').all() as Array<{ id: string; title: string }>;
  db.close();
  const store = new SqliteStore({ database: new Database(file) });
  await store.ensureTables(ALL_TABLES);
  const services = createServices(loadConfig({ SQLITE_PATH: file }), { store, logger: pino({ level: 'silent' }) });
  const ctx = createRequestContext(services, { username: 'test', isAdmin: true });
  const items: Record<string, string[]> = {};
  for (const list of lists) items[list.title] = (await ctx.lists.items(list.id, { first: 100 })).edges.map((e) => e.node.label);
  await store.close();
  return { counts, lists: items };
}

describe('npm run seed beside a running server', () => {
  it('completes, after being killed halfway, exactly as an uninterrupted run', async () => {
    const reference = join(dir, 'reference.db');
    await run(process.execPath, SEED_ARGS, { env: { ...process.env, SQLITE_PATH: reference } });

    const file = join(dir, 'shared.db');
    const server = await startChildServer(file);
    try {
      const env = { ...process.env, SQLITE_PATH: file };
      // Killed once the progress bar shows work done (the bar reports every second).
      const first = spawn(process.execPath, SEED_ARGS, { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let progress = '';
      const killed = new Promise<NodeJS.Signals | number | null>((resolve) => first.once('exit', (code, signal) => resolve(signal ?? code)));
      first.stderr.on('data', (d: Buffer) => {
        progress += d.toString();
        if (/\| [1-9]\d*\/\d+ \|/.test(progress)) first.kill('SIGKILL');
      });
      expect(await killed).toBe('SIGKILL');

      const again = await run(process.execPath, SEED_ARGS, { env });
      expect(again.stdout).toContain(`Seeded ${file} with seed 23`);
      expect(again.stdout).toMatch(/existing\s*│\s*[1-9]/);
      // The server answered throughout and still does.
      expect((await fetch(server.url.replace('/graphql', '/readyz'))).status).toBe(200);
    } finally {
      server.process.kill('SIGTERM');
      await server.exited;
    }
    const expected = await contentOf(reference);
    expect(expected.counts).toMatchObject({ users: 300, timeline: 3000, meetings: 30, lists: 15 });
    expect(await contentOf(file)).toEqual(expected);
  }, 120_000);

  it('prints one clear line when it fails, and its usage on --help', async () => {
    const help = await run(process.execPath, ['--import', 'tsx', 'src/scripts/seed.ts', '--help']);
    expect(help.stdout).toMatch(/^usage: npm run seed -- \[--users N\]/);
    const failed = await run(process.execPath, ['--import', 'tsx', 'src/scripts/seed.ts', '--users', '1'], {
      // A folder where the database file should be: SQLite cannot open it.
      env: { ...process.env, SQLITE_PATH: dir },
    }).catch((err: { code: number; stderr: string }) => err);
    expect(failed).toMatchObject({ code: 1 });
    expect((failed as { stderr: string }).stderr.trim().split('\n')).toEqual([`seed failed: unable to open database file (check SQLITE_PATH: "${dir}" must be a file in a writable folder)`]);
  });
});

describeEachStore(
  'npm run seed on Cassandra',
  (target) => {
    it('creates the schema it is allowed to, and seeds every feature into it', async () => {
      const points = await target.contactPoints!();
      const keyspace = uniqueKeyspace('seed');
      const args = ['--import', 'tsx', 'src/scripts/seed.ts', '--users', '20', '--posts-per-user', '2', '--seed', '11'];
      const env = {
        ...process.env,
        STORE: 'cassandra',
        CASSANDRA_CONTACT_POINTS: points.join(','),
        CASSANDRA_KEYSPACE: keyspace,
        CASSANDRA_AUTO_SCHEMA: 'true',
      };
      const client = await cassandraClient(points);
      try {
        const first = await run(process.execPath, args, { env, cwd: process.cwd() });
        expect(first.stdout).toContain(`Seeded ${keyspace} on ${points.join(',')} with seed 11`);
        expect(first.stdout).toMatch(/users\s*│\s*20/);
        // The data is there and indexed: the directory finds seeded users.
        const store = new CassandraStore({ client, keyspace, schema: 'check' });
        await store.ensureTables(ALL_TABLES);
        const { directory } = featuresOver(store);
        expect((await directory.byLastName('', { first: 100 })).edges).toHaveLength(20);
      } finally {
        await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
        await client.shutdown();
      }
    }, 300_000);
  },
  [await cassandraTarget()],
);

