/**
 * Ordered lists over HTTP: add, move (to the top, before, after), rename and remove,
 * paged in both directions; the applier started with the server empties the ledger;
 * refused requests change nothing.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { readTransactions } from '../../src/features/lists/ledger.js';
import { localIdOf } from '../../src/graphql/ids.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

const ITEMS = `query ($id: ID!, $first: Int, $after: String, $last: Int, $before: String) { node(id: $id) { ... on OrderedList { title
  items(first: $first, after: $after, last: $last, before: $before) { edges { cursor node { id label list { title } } }
  pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } } }`;

describeEachStore('ordered lists over HTTP', (target) => {
  let server: TestServer;
  let owner: string;
  let stranger: string;
  beforeAll(async () => {
    server = await startTestServer({ target, env: { LIST_APPLIER_INTERVAL_MS: '50' } });
    const admin = await server.token('root', { admin: true });
    for (const who of ['owner', 'stranger']) {
      const input = aUser();
      await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input }, admin);
      if (who === 'owner') owner = await server.token(input.username);
      else stranger = await server.token(input.username);
    }
  });
  afterAll(() => server.close());

  async function labels(listId: string): Promise<string[]> {
    const res = await server.gql(ITEMS, { id: listId, first: 100 });
    return res.data!.node.items.edges.map((e: any) => e.node.label);
  }

  async function newList(items: string[]) {
    const list = await server.gql(`mutation { createList(input: { title: "Groceries" }) { list { id title } } }`, {}, owner);
    const listId = list.data!.createList.list.id as string;
    const ids: string[] = [];
    for (const label of items) {
      const res = await server.gql(`mutation ($input: AddListItemInput!) { addListItem(input: $input) { item { id label } } }`, { input: { listId, label } }, owner);
      ids.push(res.data!.addListItem.item.id);
    }
    return { listId, ids };
  }

  const MOVE = `mutation ($input: MoveListItemInput!) { moveListItem(input: $input) { item { id label } } }`;

  it('adds, moves, renames and removes, and reads the result at once and after the applier ran', async () => {
    const { listId, ids } = await newList(['milk', 'eggs', 'bread', 'tea']);
    await server.gql(`mutation ($input: AddListItemInput!) { addListItem(input: $input) { item { id } } }`, { input: { listId, label: 'jam', beforeItemId: ids[2] } }, owner);
    await server.gql(MOVE, { input: { itemId: ids[3], beforeItemId: ids[0] } }, owner); // tea to the top
    await server.gql(MOVE, { input: { itemId: ids[0], afterItemId: ids[2] } }, owner); // milk after bread
    await server.gql(`mutation ($input: RenameListItemInput!) { renameListItem(input: $input) { item { label } } }`, { input: { itemId: ids[1], label: 'free-range eggs' } }, owner);
    const removed = await server.gql(`mutation ($input: RemoveListItemInput!) { removeListItem(input: $input) { removedItemId } }`, { input: { itemId: ids[2] } }, owner);
    expect(removed.data).toEqual({ removeListItem: { removedItemId: ids[2] } });
    const expected = ['tea', 'free-range eggs', 'jam', 'milk'];
    expect(await labels(listId)).toEqual(expected);
    // Paged both ways.
    const p1 = await server.gql(ITEMS, { id: listId, first: 2 });
    expect(p1.data!.node.items.edges.map((e: any) => e.node.label)).toEqual(expected.slice(0, 2));
    const p2 = await server.gql(ITEMS, { id: listId, first: 2, after: p1.data!.node.items.pageInfo.endCursor });
    expect(p2.data!.node.items).toMatchObject({ pageInfo: { hasNextPage: false, hasPreviousPage: true } });
    const back = await server.gql(ITEMS, { id: listId, last: 3, before: p2.data!.node.items.pageInfo.endCursor });
    expect(back.data!.node.items.edges.map((e: any) => e.node.label)).toEqual(expected.slice(0, 3));
    // The server's applier applies every transaction; the order stays.
    const pending = () => readTransactions(server.app.store, localIdOf(listId, 'listId', 'OrderedList'));
    for (let i = 0; i < 100 && (await pending()).length > 0; i++) await sleep(20);
    expect(await pending()).toEqual([]);
    expect(await labels(listId)).toEqual(expected);
    const node = await server.gql(`query ($id: ID!) { node(id: $id) { ... on ListItem { label list { title } } } }`, { id: ids[3] });
    expect(node.data).toEqual({ node: { label: 'tea', list: { title: 'Groceries' } } });
  });

  it('moves an item to the top or the bottom without naming a neighbour', async () => {
    const { listId, ids } = await newList(['milk', 'eggs', 'bread']);
    const top = await server.gql(MOVE, { input: { itemId: ids[2], toEnd: 'TOP', clientMutationId: 'm1' } }, owner);
    expect(top.data).toEqual({ moveListItem: { item: { id: ids[2], label: 'bread' } } });
    expect(await labels(listId)).toEqual(['bread', 'milk', 'eggs']);
    await server.gql(MOVE, { input: { itemId: ids[0], toEnd: 'BOTTOM' } }, owner);
    expect(await labels(listId)).toEqual(['bread', 'eggs', 'milk']);
  });

  it('refuses bad targets and strangers, changing nothing', async () => {
    const a = await newList(['one', 'two']);
    const b = await newList(['other']);
    const before = await labels(a.listId);
    const cases: Array<[Record<string, unknown>, string, string | undefined]> = [
      [{ itemId: a.ids[0] }, 'BAD_USER_INPUT', undefined],
      [{ itemId: a.ids[0], beforeItemId: a.ids[1], afterItemId: a.ids[1] }, 'BAD_USER_INPUT', undefined],
      [{ itemId: a.ids[0], beforeItemId: b.ids[0] }, 'BAD_USER_INPUT', 'beforeItemId'],
      [{ itemId: a.ids[0], afterItemId: 'garbage' }, 'BAD_USER_INPUT', 'afterItemId'],
      [{ itemId: a.ids[0], toEnd: 'TOP', beforeItemId: a.ids[1] }, 'BAD_USER_INPUT', undefined],
      [{ itemId: a.ids[0], toEnd: 'SIDEWAYS' }, 'BAD_USER_INPUT', undefined],
    ];
    for (const [input, code, argumentName] of cases) {
      const res = await server.gql(MOVE, { input }, owner);
      expect(res.errors?.[0]?.extensions?.code, JSON.stringify(input)).toBe(code);
      if (argumentName) expect(res.errors?.[0]?.extensions?.argumentName).toBe(argumentName);
    }
    await server.gql(`mutation ($input: RemoveListItemInput!) { removeListItem(input: $input) { removedItemId } }`, { input: { itemId: a.ids[1] } }, owner);
    const gone = await server.gql(MOVE, { input: { itemId: a.ids[1], beforeItemId: a.ids[0] } }, owner);
    expect(gone.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const forbidden = await server.gql(MOVE, { input: { itemId: a.ids[0], afterItemId: a.ids[0] } }, stranger);
    expect(forbidden.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(await labels(a.listId)).toEqual(before.filter((l) => l !== 'two'));
    expect(await labels(b.listId)).toEqual(['other']);
  });
});
