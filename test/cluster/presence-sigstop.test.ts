/**
 * The real server paused past its presence lease (SIGSTOP, then SIGCONT): it takes its
 * clock node back when nobody claimed it meanwhile, and exits when another process
 * holds it now, so two live servers never share a node.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { PRESENCE_TTL_SECONDS, presenceTable } from '../../src/background/presence.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startChildServer, type ChildServer } from '../support/child-server.js';
import { waitFor } from '../support/live-client.js';

const dir = mkdtempSync(join(tmpdir(), 'sigstop-'));

/** A store on the server's file, opened by the test process (WAL allows both); the server made its tables. */
async function observer(file: string): Promise<SqliteStore> {
  const store = new SqliteStore({ database: new Database(file) });
  await store.ensureTables([presenceTable]);
  return store;
}

/** The server's presence row, as the test process reads it. */
async function presenceOf(store: SqliteStore, instance: string) {
  const { rows } = await store.scan(presenceTable, { limit: 100 });
  const row = rows.find((r) => r.instance === instance);
  if (!row) throw new Error(`no presence row of ${instance}`);
  return { node: row.node as number, processId: row.process_id as string };
}

/** Stop the server for longer than its presence lives; its row has expired when this returns. */
async function pausePastTheLease(server: ChildServer, store: SqliteStore, node: number): Promise<void> {
  server.process.kill('SIGSTOP');
  await sleep(PRESENCE_TTL_SECONDS * 1000 + 1_000);
  for (let i = 0; i < 50 && (await store.get(presenceTable, { node })) !== null; i++) await sleep(100);
  expect(await store.get(presenceTable, { node })).toBeNull();
}

describe('a server paused past its presence lease', () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('takes its clock node back when nobody claimed it, and serves again', { timeout: 60_000 }, async () => {
    const file = join(dir, 'reclaim.db');
    const server = await startChildServer(file, { INSTANCE_ID: 'paused-reclaim' });
    const store = await observer(file);
    try {
      const before = await presenceOf(store, 'paused-reclaim');
      await pausePastTheLease(server, store, before.node);
      server.process.kill('SIGCONT');
      await waitFor(() => server.output().includes('holds its clock node again'), 10_000, 'the server to take its node back');
      expect(server.output()).toMatch(/"reclaimed":true[^\n]*holds its clock node again after its presence lapsed/);
      expect(await presenceOf(store, 'paused-reclaim')).toEqual(before);
      expect((await fetch(server.url.replace(/\/graphql$/, '/readyz'))).status).toBe(200);
    } finally {
      server.process.kill('SIGKILL');
      await server.exited;
      await store.close();
    }
  });

  it('exits when another process holds its clock node, and leaves that process its row', { timeout: 60_000 }, async () => {
    const file = join(dir, 'usurped.db');
    const server = await startChildServer(file, { INSTANCE_ID: 'paused-usurped' });
    const store = await observer(file);
    try {
      const { node } = await presenceOf(store, 'paused-usurped');
      await pausePastTheLease(server, store, node);
      // Another server claims the free node meanwhile.
      const other = randomUUID();
      expect((await store.insertIfNotExists(presenceTable, { node, process_id: other, instance: 'newcomer' }, { ttl: 60 })).applied).toBe(true);
      server.process.kill('SIGCONT');
      expect(await server.exited).toBe(1);
      expect(server.output()).toMatch(/another process holds this server's clock node/);
      expect(server.output()).toMatch(/exiting: another server holds this server's clock node/);
      expect(await store.get(presenceTable, { node })).toMatchObject({ process_id: other, instance: 'newcomer' });
    } finally {
      if (server.process.exitCode === null) server.process.kill('SIGKILL');
      await store.close();
    }
  });
});
