/**
 * `listItemsChanged` over a real WebSocket, on every store: added, moved, renamed and
 * removed items arrive once, in the order the list's ledger applied them, each placed by
 * the item now before it; a client that applies them to the page it holds ends with the
 * list the server pages, cursors included.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createListApplier } from '../../src/composition-root.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { localIdOf } from '../../src/graphql/ids.js';
import { liveClient, waitFor, type LiveClient } from '../support/live-client.js';
import { describeEachStore } from '../support/stores.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const ITEMS = `query ($id: ID!) { node(id: $id) { ... on OrderedList { items(first: 100) { edges { cursor node { id label } } } } } }`;
const ADD = `mutation ($input: AddListItemInput!) { addListItem(input: $input) { item { id } } }`;
const MOVE = `mutation ($input: MoveListItemInput!) { moveListItem(input: $input) { item { id } } }`;
const RENAME = `mutation ($input: RenameListItemInput!) { renameListItem(input: $input) { item { id } } }`;
const REMOVE = `mutation ($input: RemoveListItemInput!) { removeListItem(input: $input) { removedItemId } }`;
const CHANGES = `subscription ($listId: ID!, $after: String) {
  listItemsChanged(listId: $listId, after: $after) {
    cursor kind previousItemId removedItemId
    edge { cursor node { id label } }
  }
}`;

interface Edge {
  cursor: string;
  node: { id: string; label: string };
}
interface ListChange {
  listItemsChanged: { cursor: string; kind: string; previousItemId: string | null; removedItemId: string | null; edge: Edge | null };
}

/** What a client does with each change: place the edge after `previousItemId`, relabel, drop. */
function applyChange(edges: Edge[], c: ListChange['listItemsChanged']): Edge[] {
  const without = edges.filter((e) => e.node.id !== (c.edge?.node.id ?? c.removedItemId));
  if (c.kind === 'REMOVED') return without;
  if (c.kind === 'RENAMED') return edges.map((e) => (e.node.id === c.edge!.node.id ? c.edge! : e));
  const at = c.previousItemId === null ? 0 : without.findIndex((e) => e.node.id === c.previousItemId) + 1;
  return [...without.slice(0, at), c.edge!, ...without.slice(at)];
}

/** A user of `server` and their token: a list's owner. */
async function anOwner(server: TestServer): Promise<string> {
  const input = aUser();
  const admin = await server.token('root', { admin: true });
  await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input }, admin);
  return server.token(input.username);
}

describeEachStore('listItemsChanged over WebSocket', (target) => {
  let server: TestServer;
  let owner: string;
  const clients: LiveClient[] = [];

  beforeAll(async () => {
    // One process, one clock: a subscription starts exactly now.
    server = await startTestServer({ target, env: { LIVE_POLL_MS: '50', CLOCK_SKEW_MS: '0', LIST_APPLIER_INTERVAL_MS: '50' } });
    owner = await anOwner(server);
  });
  afterAll(async () => {
    for (const c of clients) await c.dispose();
    await server.close();
  });

  async function serverEdges(listId: string): Promise<Edge[]> {
    return (await server.gql(ITEMS, { id: listId })).data!.node.items.edges;
  }

  it('streams adds, moves, renames and removes in ledger order, and a client applying them holds the list the server pages', async () => {
    const list = await server.gql(`mutation { createList(input: { title: "Live" }) { list { id } } }`, {}, owner);
    const listId = list.data!.createList.list.id as string;
    const add = async (label: string, beforeItemId?: string) =>
      (await server.gql(ADD, { input: { listId, label, beforeItemId } }, owner)).data!.addListItem.item.id as string;
    const milk = await add('milk');
    const eggs = await add('eggs');
    // The client loads the page, then follows the changes from now.
    let held = await serverEdges(listId);
    const client = liveClient(server.url);
    clients.push(client);
    const sub = client.subscribe<ListChange>(CHANGES, { listId });
    await waitFor(() => server.app.services.live.subscriptions === 1, 5_000, 'the subscription');

    const tea = await add('tea', milk);
    await server.gql(MOVE, { input: { itemId: milk, afterItemId: eggs } }, owner);
    await server.gql(RENAME, { input: { itemId: eggs, label: 'free-range eggs' } }, owner);
    await server.gql(MOVE, { input: { itemId: tea, toEnd: 'BOTTOM' } }, owner);
    await server.gql(REMOVE, { input: { itemId: milk } }, owner);

    const changes = (await sub.next(5)).map((c) => c.listItemsChanged);
    expect(changes.map((c) => [c.kind, c.edge?.node.label ?? c.removedItemId])).toEqual([
      ['ADDED', 'tea'],
      ['MOVED', 'milk'],
      ['RENAMED', 'free-range eggs'],
      ['MOVED', 'tea'],
      ['REMOVED', milk],
    ]);
    // tea went before milk: first of the list; milk then moved after eggs.
    expect(changes[0]!.previousItemId).toBeNull();
    expect(changes[1]!.previousItemId).toBe(eggs);
    for (const c of changes) held = applyChange(held, c);
    expect(held).toEqual(await serverEdges(listId));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(sub.values).toHaveLength(5);

    // Resuming after the second change gives the last three, once.
    const again = client.subscribe<ListChange>(CHANGES, { listId, after: changes[1]!.cursor });
    expect((await again.next(3)).map((c) => c.listItemsChanged.kind)).toEqual(['RENAMED', 'MOVED', 'REMOVED']);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(again.values).toHaveLength(3);
    sub.stop();
    again.stop();
  });

  it('leaves out what a page read before subscribing showed pending, though the applier logs it after, and gives every later change', async () => {
    // No applier running: the list's transactions stay pending until the test applies them.
    const paused = await startTestServer({ target, env: { LIVE_POLL_MS: '50', CLOCK_SKEW_MS: '0', LIST_APPLIER: 'false' } });
    try {
      const token = await anOwner(paused);
      const list = await paused.gql(`mutation { createList(input: { title: "Pending" }) { list { id } } }`, {}, token);
      const listId = list.data!.createList.list.id as string;
      const add = (label: string) => paused.gql(ADD, { input: { listId, label } }, token);
      const edges = async (): Promise<Edge[]> => (await paused.gql(ITEMS, { id: listId })).data!.node.items.edges;
      await add('milk');
      await add('eggs');
      // The page shows both, still pending; the client follows the changes from now.
      let held = await edges();
      expect(held.map((e) => e.node.label)).toEqual(['milk', 'eggs']);
      const client = liveClient(paused.url);
      clients.push(client);
      const sub = client.subscribe<ListChange>(CHANGES, { listId });
      await waitFor(() => paused.app.services.live.subscriptions === 1, 5_000, 'the subscription');
      await add('tea');
      // All three logged now, after the subscription started.
      expect(await createListApplier(paused.app.services).drain(localIdOf(listId, 'listId', 'OrderedList'))).toBe(3);

      const changes = (await sub.next(1)).map((c) => c.listItemsChanged);
      expect(changes.map((c) => [c.kind, c.edge?.node.label])).toEqual([['ADDED', 'tea']]);
      for (const c of changes) held = applyChange(held, c);
      expect(held).toEqual(await edges());
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(sub.values).toHaveLength(1);
      sub.stop();
    } finally {
      await paused.close();
    }
  });

  it('answers NOT_FOUND for an unknown list, and BAD_USER_INPUT for a cursor of another list', async () => {
    const client = liveClient(server.url);
    clients.push(client);
    const unknown = client.subscribe(CHANGES, { listId: Buffer.from('OrderedList:00000000-0000-4000-8000-000000000000').toString('base64') });
    await unknown.ended();
    expect(unknown.errors[0]).toMatchObject({ extensions: { code: 'NOT_FOUND' } });

    const lists = await Promise.all(
      ['a', 'b'].map(async (t) => (await server.gql(`mutation ($t: String!) { createList(input: { title: $t }) { list { id } } }`, { t }, owner)).data!.createList.list.id as string),
    );
    const first = client.subscribe<ListChange>(CHANGES, { listId: lists[0] });
    await waitFor(() => server.app.services.live.subscriptions >= 1, 5_000, 'the subscription');
    await server.gql(ADD, { input: { listId: lists[0], label: 'x' } }, owner);
    const [change] = await first.next(1);
    const foreign = client.subscribe(CHANGES, { listId: lists[1], after: change!.listItemsChanged.cursor });
    await foreign.ended();
    expect(foreign.errors[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', argumentName: 'after' } });
    first.stop();
  });
});
