/**
 * Two real server processes on one SQLite file, one clock 300 ms ahead and one 300 ms
 * behind (a test-only entry shifts their time, as `faketime` would; both well within
 * CLOCK_SKEW_MS): every change made after another was acknowledged wins over it, on
 * whichever server, whatever the clocks. One test per symptom of issue 34: an update
 * on the server behind right after a creation on the one ahead, nine updates
 * alternating, a last name changed on the server behind and searched by name, and list
 * items changed right after their add. Each failed before writes were ordered above
 * the write times they overwrite.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB_WINDOW_MS } from '../../src/background/windowed-job.js';
import { authKey, signToken } from '../../src/graphql/auth.js';
import { startChildServer, type ChildServer } from '../support/child-server.js';
import { TEST_AUTH_SECRET } from '../support/test-server.js';

const SKEWED = 'test/support/skewed-main.ts';
const CLUSTER = { CLOCK_SKEW_MS: '1000', STORE_WRITE_TIMEOUT_MS: '2000' };
/** When the name sweeper has closed a change's window and swept it: window + skew + write timeout + a pass, and a margin. */
const SWEPT_MS = JOB_WINDOW_MS + 1_000 + 2_000 + JOB_WINDOW_MS + 2_000;

const dir = mkdtempSync(join(tmpdir(), 'two-servers-order-'));
const file = join(dir, 'app.db');
let ahead: ChildServer;
let behind: ChildServer;
let admin: string;

type Answer = { data?: any; errors?: Array<{ message: string; extensions?: { code?: string } }> };

async function gql(server: ChildServer, query: string, variables: Record<string, unknown> = {}): Promise<Answer> {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
    body: JSON.stringify({ query, variables }),
  });
  return (await res.json()) as Answer;
}

/** The answer's data, or the test fails with its errors. */
async function ok(server: ChildServer, query: string, variables: Record<string, unknown> = {}): Promise<any> {
  const answer = await gql(server, query, variables);
  expect(answer.errors, JSON.stringify(answer.errors)).toBeUndefined();
  return answer.data;
}

const CREATE_USER = `mutation ($i: CreateUserInput!) { createUser(input: $i) { user { id } } }`;
const UPDATE_USER = `mutation ($i: UpdateUserInput!) { updateUser(input: $i) { user { displayName lastName } } }`;
const USER = `query ($id: ID!) { node(id: $id) { ... on User { displayName lastName } } }`;
const BY_NAME = `query ($q: String!) { usersByName(query: $q, first: 10) { edges { node { id } } } }`;

/** The user as each server shows them. */
async function shownOnBoth(id: string): Promise<unknown[]> {
  return Promise.all([ahead, behind].map(async (s) => (await ok(s, USER, { id })).node));
}

/** The users each server finds by name. */
async function foundOnBoth(query: string): Promise<string[][]> {
  return Promise.all([ahead, behind].map(async (s) => (await ok(s, BY_NAME, { q: query })).usersByName.edges.map((e: any) => e.node.id)));
}

beforeAll(async () => {
  admin = await signToken(authKey(TEST_AUTH_SECRET), 'root', { admin: true });
  [ahead, behind] = await Promise.all([
    startChildServer(file, { ...CLUSTER, INSTANCE_ID: 'server-ahead', TEST_CLOCK_OFFSET_MS: '300' }, SKEWED),
    startChildServer(file, { ...CLUSTER, INSTANCE_ID: 'server-behind', TEST_CLOCK_OFFSET_MS: '-300' }, SKEWED),
  ]);
}, 60_000);

afterAll(async () => {
  for (const s of [ahead, behind]) {
    s?.process.kill('SIGTERM');
    await s?.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('two servers on one store, clocks 300 ms ahead and 300 ms behind', () => {
  it('keep an update made on the server behind right after the creation on the one ahead', async () => {
    for (let i = 0; i < 5; i++) {
      const id = (await ok(ahead, CREATE_USER, { i: { username: `created_${i}`, displayName: 'Old', lastName: 'Before' } })).createUser.user.id;
      const updated = await ok(behind, UPDATE_USER, { i: { id, displayName: 'New', lastName: 'After' } });
      expect(updated.updateUser.user).toEqual({ displayName: 'New', lastName: 'After' });
      expect(await shownOnBoth(id)).toEqual([updated.updateUser.user, updated.updateUser.user]);
    }
  }, 30_000);

  it('keep the last of nine updates alternating between them, each sent after the previous was acknowledged', async () => {
    const id = (await ok(ahead, CREATE_USER, { i: { username: 'alternating', displayName: 'Start' } })).createUser.user.id;
    for (let i = 1; i <= 9; i++) {
      await ok(i % 2 === 1 ? behind : ahead, UPDATE_USER, { i: { id, displayName: `Update ${i}` } });
      expect(await shownOnBoth(id), `after update ${i}`).toEqual([
        { displayName: `Update ${i}`, lastName: null },
        { displayName: `Update ${i}`, lastName: null },
      ]);
    }
  }, 30_000);

  it('find a user by the last name changed on the server behind, and never again by the old one once the sweeper has run', async () => {
    const id = (await ok(ahead, CREATE_USER, { i: { username: 'renamed', displayName: 'Renamed', lastName: 'Oldfield' } })).createUser.user.id;
    await ok(behind, UPDATE_USER, { i: { id, lastName: 'Newman' } });
    expect(await foundOnBoth('newman')).toEqual([[id], [id]]);
    expect(await foundOnBoth('oldfield')).toEqual([[], []]);
    // The sweeper closes the change's window and keeps only the version the row names.
    await sleep(SWEPT_MS);
    expect(await foundOnBoth('newman')).toEqual([[id], [id]]);
    expect(await foundOnBoth('oldfield')).toEqual([[], []]);
  }, 60_000);

  it('rename, move and remove an item right after its add on the server behind, on either server', async () => {
    await ok(ahead, CREATE_USER, { i: { username: 'root', displayName: 'Root' } });
    const listId = (await ok(ahead, `mutation { createList(input: { title: "skewed" }) { list { id } } }`)).createList.list.id;
    const ADD = `mutation ($i: AddListItemInput!) { addListItem(input: $i) { item { id } } }`;
    const RENAME = `mutation ($i: RenameListItemInput!) { renameListItem(input: $i) { item { label } } }`;
    const MOVE = `mutation ($i: MoveListItemInput!) { moveListItem(input: $i) { item { id } } }`;
    const REMOVE = `mutation ($i: RemoveListItemInput!) { removeListItem(input: $i) { removedItemId } }`;
    const add = async (server: ChildServer, label: string) => (await ok(server, ADD, { i: { listId, label } })).addListItem.item.id as string;
    const first = await add(ahead, 'first');
    // Let the server ahead apply its add: an add below an applied transaction was the trap.
    await sleep(200);
    const expected: string[] = ['first'];
    for (let i = 0; i < 4; i++) {
      const changer = i % 2 === 0 ? behind : ahead;
      const item = await add(behind, `added ${i}`);
      expect((await ok(changer, RENAME, { i: { itemId: item, label: `renamed ${i}` } })).renameListItem.item.label).toBe(`renamed ${i}`);
      await ok(changer, MOVE, { i: { itemId: item, beforeItemId: first } });
      if (i === 3) await ok(ahead, REMOVE, { i: { itemId: item } });
      else expected.splice(expected.indexOf('first'), 0, `renamed ${i}`);
    }
    const labels = async (server: ChildServer) =>
      (await ok(server, `query ($id: ID!) { node(id: $id) { ... on OrderedList { items(first: 20) { edges { node { label } } } } } }`, { id: listId })).node.items.edges.map(
        (e: any) => e.node.label,
      );
    expect(await labels(ahead)).toEqual(expected);
    expect(await labels(behind)).toEqual(expected);
  }, 30_000);
});
