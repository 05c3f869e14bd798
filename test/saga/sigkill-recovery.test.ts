/**
 * The real server, killed with SIGKILL in the middle of a saga, restarted on the same
 * SQLite file: start-up recovery rolls the open saga back (suspend) or forward
 * (unsuspend), and the invariants hold.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { authKey, signToken } from '../../src/graphql/auth.js';
import { parseGlobalId } from '../../src/graphql/ids.js';
import { SagaLog } from '../../src/saga/saga-log.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startChildServer, type ChildServer } from '../support/child-server.js';
import { checkInvariants, prepare } from '../support/suspension-fixture.js';
import { TEST_AUTH_SECRET } from '../support/test-server.js';

/** The server with slow saga steps (a test-only entry), so the kill lands between two. */
const SLOW_SAGAS = 'test/support/slow-saga-main.ts';
/**
 * Every start is the same instance (as a restarted server on its host and port): it
 * recovers at once the sagas its killed predecessor left, with no grace period.
 */
const INSTANCE_ID = 'sigkill-test-instance';
const dir = mkdtempSync(join(tmpdir(), 'sigkill-'));
const file = join(dir, 'app.db');

async function gql(server: ChildServer, query: string, variables: Record<string, unknown>, token: string) {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return (await res.json()) as { data?: any; errors?: any[] };
}

/** A store on the same file, opened by the test process (WAL allows both). */
function observer(): SqliteStore {
  return new SqliteStore({ database: new Database(file) });
}

/** Wait until the server's saga log shows a saga at `step` or beyond. */
async function waitForOpenSaga(store: SqliteStore, step: number): Promise<void> {
  const log = new SagaLog(store);
  for (let i = 0; i < 200; i++) {
    const open = await log.open();
    if (open.some((s) => s.phase === 'forward' && s.step >= step)) return;
    await sleep(25);
  }
  throw new Error(`no saga reached step ${step}`);
}

describe('a server killed with SIGKILL in the middle of a saga', () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('recovers on restart: suspend rolled back, unsuspend rolled forward, invariants hold', async () => {
    const admin = await signToken(authKey(TEST_AUTH_SECRET), 'root', { admin: true });
    // Slow steps, so the kill lands between two of them.
    let server = await startChildServer(file, { INSTANCE_ID, TEST_SAGA_STEP_DELAY_MS: '300' }, SLOW_SAGAS);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await gql(server, `mutation ($i: CreateUserInput!) { createUser(input: $i) { user { id } } }`, { i: aUser() }, admin);
      ids.push(r.data.createUser.user.id);
    }
    const SUSPEND = `mutation ($i: SuspendUserInput!) { suspendUser(input: $i) { suspension { reason } } }`;
    const UNSUSPEND = `mutation ($i: UnsuspendUserInput!) { unsuspendUser(input: $i) { user { id } } }`;
    expect((await gql(server, SUSPEND, { i: { userId: ids[0], reason: 'kept' } }, admin)).data).toBeTruthy();
    expect((await gql(server, SUSPEND, { i: { userId: ids[1], reason: 'to lift' } }, admin)).data).toBeTruthy();

    const rawIds = ids.map((id) => {
      const ref = parseGlobalId(id, 'id', 'User');
      return ref.type === 'User' ? ref.userId : '';
    });
    const store = observer();
    await prepare(store);
    try {
      // 1. Kill during a suspension, after the reverse lookup and the bucket are written.
      void gql(server, SUSPEND, { i: { userId: ids[2], reason: 'interrupted' } }, admin).catch(() => undefined);
      await waitForOpenSaga(store, 2);
      server.process.kill('SIGKILL');
      expect(await server.exited).toBe('SIGKILL');
      expect((await new SagaLog(store).open()).length).toBe(1);

      server = await startChildServer(file, { INSTANCE_ID, TEST_SAGA_STEP_DELAY_MS: '300' }, SLOW_SAGAS);
      expect(server.output()).toContain('saga rolled back');
      expect(await checkInvariants(store, rawIds)).toEqual([]);
      const afterFirst = await gql(server, `{ suspendedUsers(first: 10) { edges { node { reason } } } }`, {}, admin);
      expect(afterFirst.data.suspendedUsers.edges.map((e: any) => e.node.reason).sort()).toEqual(['kept', 'to lift']);

      // 2. Kill during an unsuspension, after the sorted-set row is deleted.
      void gql(server, UNSUSPEND, { i: { userId: ids[1] } }, admin).catch(() => undefined);
      // Step 1 (the lookup) is logged, so step 0 (the sorted-set row) is done; the
      // slowed step 1 has not run yet.
      await waitForOpenSaga(store, 1);
      server.process.kill('SIGKILL');
      expect(await server.exited).toBe('SIGKILL');

      server = await startChildServer(file, { INSTANCE_ID });
      expect(server.output()).toContain('saga rolled forward');
      expect(await checkInvariants(store, rawIds)).toEqual([]);
      const afterSecond = await gql(server, `{ suspendedUsers(first: 10) { edges { node { reason } } } }`, {}, admin);
      expect(afterSecond.data.suspendedUsers.edges.map((e: any) => e.node.reason)).toEqual(['kept']);
    } finally {
      server.process.kill('SIGTERM');
      await server.exited;
      await store.close();
    }
  }, 60_000);
});
