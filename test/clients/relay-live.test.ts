/**
 * Relay keeps connections current from subscriptions, with the operations compiled by
 * relay-compiler (`test/clients/relay/`): `@prependEdge` and `@deleteEdge` edit a user's
 * timeline through the connection's `__id`, and an `updater` places a list's added and
 * moved items after `previousItemId`. The environment's network fetches over HTTP and
 * subscribes with graphql-ws; no React: the store is read with `environment.lookup`, as
 * a component's query would read it, and must equal the server's own page.
 */
import { describeEachStore } from '../support/stores.js';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { FormattedExecutionResult } from 'graphql';
import type { Client, Sink } from 'graphql-ws';
import {
  ConnectionHandler,
  Environment,
  Network,
  Observable,
  RecordSource,
  Store,
  createOperationDescriptor,
  fetchQuery,
  requestSubscription,
  type GraphQLResponse,
  type OperationType,
  type RecordSourceSelectorProxy,
  type GraphQLTaggedNode,
} from 'relay-runtime';
import { afterAll, beforeAll, expect, it, onTestFinished } from 'vitest';
import { waitFor, wsClient } from '../support/live-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { LIVE_ENV, aLiveAuthor, publish, serverTimeline, unpublish, withoutTypenames } from './live-fixture.js';
import ListItemsChanged, { type liveOperationsListItemsChangedSubscription } from './relay/__generated__/liveOperationsListItemsChangedSubscription.graphql.js';
import ListQuery, { type liveOperationsListQuery } from './relay/__generated__/liveOperationsListQuery.graphql.js';
import PostsChanged from './relay/__generated__/liveOperationsPostsChangedSubscription.graphql.js';
import TimelineQuery, { type liveOperationsTimelineQuery } from './relay/__generated__/liveOperationsTimelineQuery.graphql.js';

const RELAY_DIR = join(import.meta.dirname, 'relay');

/** A Relay environment on a server: queries over HTTP, subscriptions over graphql-ws (Relay's documented setup). */
function relayEnvironment(url: string, token: string, ws: Client): Environment {
  const network = Network.create(
    async (operation, variables) => {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query: operation.text, variables }),
      });
      return (await response.json()) as GraphQLResponse;
    },
    (operation, variables) =>
      Observable.create<GraphQLResponse>((sink) => {
        if (!operation.text) return sink.error(new Error(`a subscription needs its text, got none for ${operation.name}`));
        // The same messages; graphql-ws types `data` as possibly null where Relay says undefined.
        return ws.subscribe({ operationName: operation.name, query: operation.text, variables }, sink as Sink<FormattedExecutionResult>);
      }),
  );
  return new Environment({ network, store: new Store(new RecordSource()) });
}

/**
 * Fetch a query and keep its data in the store until the test ends (retained, as a
 * mounted component would), and read it back from the store whenever asked.
 */
async function storedQuery<Q extends OperationType>(environment: Environment, query: GraphQLTaggedNode, variables: Q['variables']) {
  const operation = createOperationDescriptor(query as Parameters<typeof createOperationDescriptor>[0], variables);
  const retained = environment.retain(operation);
  onTestFinished(() => retained.dispose());
  await fetchQuery<Q>(environment, query, variables).toPromise();
  return { read: () => environment.lookup(operation.fragment).data as Q['response'] };
}

/**
 * The updater for `listItemsChanged`: an added or moved item's edge placed right after
 * `previousItemId` (first when null; left out when that item is not in the loaded page,
 * as it now stands outside it); a renamed item keeps its place and takes the edge's
 * cursor. Removals are `@deleteEdge`'s.
 */
function placeListItem(store: RecordSourceSelectorProxy, connectionId: string): void {
  const change = store.getRootField('listItemsChanged');
  const connection = store.get(connectionId);
  const serverEdge = change.getLinkedRecord('edge');
  const node = serverEdge?.getLinkedRecord('node');
  if (!connection || !serverEdge || !node) return;
  const edgeOf = (id: unknown) => connection.getLinkedRecords('edges')?.find((edge) => edge?.getLinkedRecord('node')?.getDataID() === id);
  if (change.getValue('kind') === 'RENAMED') {
    edgeOf(node.getDataID())?.setValue(serverEdge.getValue('cursor'), 'cursor');
    return;
  }
  ConnectionHandler.deleteNode(connection, node.getDataID());
  const edge = ConnectionHandler.createEdge(store, connection, node, 'ListItemEdge');
  edge.setValue(serverEdge.getValue('cursor'), 'cursor');
  const previousItemId = change.getValue('previousItemId');
  if (previousItemId == null) ConnectionHandler.insertEdgeBefore(connection, edge);
  else {
    const previous = edgeOf(previousItemId);
    if (previous) ConnectionHandler.insertEdgeAfter(connection, edge, previous.getValue('cursor') as string);
  }
}

describeEachStore('Relay keeps connections current from subscriptions', (target) => {
  let server: TestServer;
  const sockets: Client[] = [];

  beforeAll(async () => {
    server = await startTestServer({ target, env: { ...LIVE_ENV, LIST_APPLIER_INTERVAL_MS: '50' } });
  });
  afterAll(async () => {
    for (const ws of sockets) await ws.dispose();
    await server.close();
  });

  function connect(token: string): Environment {
    const ws = wsClient(server.url, { token });
    sockets.push(ws);
    return relayEnvironment(server.url, token, ws);
  }

  it('uses artifacts that are exactly what relay-compiler makes of the operations and the schema', () => {
    const validate = spawnSync(join(import.meta.dirname, '../../node_modules/.bin/relay-compiler'), ['--validate', '--output', 'quiet-with-errors'], {
      cwd: RELAY_DIR,
      encoding: 'utf8',
    });
    expect(validate.stderr + validate.stdout, 'stale Relay artifacts: run `npm run relay`').toBe('');
    expect(validate.status).toBe(0);
    // --validate reports changed and missing artifacts; a left-over one is found here.
    const operations = [...readFileSync(join(RELAY_DIR, 'live-operations.ts'), 'utf8').matchAll(/^\s*(?:query|subscription|mutation) (\w+)/gm)].map((m) => `${m[1]}.graphql.ts`);
    expect(readdirSync(join(RELAY_DIR, '__generated__')).sort()).toEqual(operations.sort());
  });

  it('prepends added posts and deletes deleted ones with @prependEdge and @deleteEdge, and the connection equals the server page', async () => {
    const author = await aLiveAuthor(server, 6);
    const environment = connect(author.token);
    const timeline = await storedQuery<liveOperationsTimelineQuery>(environment, TimelineQuery, { username: author.username, first: 4 });
    const loaded = timeline.read().userByUsername!;
    expect(loaded.posts.edges.map((e) => e.node.content)).toEqual(['post 6', 'post 5', 'post 4', 'post 3']);

    // Everything newer than the newest post shown, into the connection the query holds.
    const received: string[] = [];
    const subscription = requestSubscription(environment, {
      subscription: PostsChanged,
      variables: { authorId: author.id, after: loaded.posts.pageInfo.startCursor, connections: [loaded.posts.__id] },
      onNext: (response) => received.push((response as { postsChanged: { cursor: string } }).postsChanged.cursor),
    });
    onTestFinished(() => subscription.dispose());
    await waitFor(() => server.app.services.live.subscriptions === 1, 10_000, 'the subscription on the server');
    const create = (content: string) => publish(server, author.token, content);
    const remove = (id: string) => unpublish(server, author.token, id);
    await create('live 1');
    const live2 = await create('live 2');
    await create('live 3');
    await remove(live2);
    await remove(author.postIds.get('post 5')!);

    await waitFor(() => received.length === 5, 10_000, 'five changes');
    const edges = timeline.read().userByUsername!.posts.edges;
    expect(edges.map((e) => e.node.content)).toEqual(['live 3', 'live 1', 'post 6', 'post 4', 'post 3']);
    expect(withoutTypenames(edges)).toEqual((await serverTimeline(server, author.username, edges.length)).edges);
    // The id a component without `__id` would compute names the same connection.
    expect(ConnectionHandler.getConnectionID(loaded.id, 'liveOperations_posts')).toBe(loaded.posts.__id);

    subscription.dispose();
    await waitFor(() => server.app.services.live.subscriptions === 0, 10_000, 'the subscription to end');
  });

  it('places added and moved list items after previousItemId with an updater, deletes removed ones with @deleteEdge, and the list equals the server page', async () => {
    const owner = await aLiveAuthor(server, 0);
    const gql = async (query: string, variables: Record<string, unknown>) => (await server.gql(query, variables, owner.token)).data!;
    const listId = (await gql(`mutation { createList(input: { title: "Relay" }) { list { id } } }`, {})).createList.list.id as string;
    const add = async (label: string, beforeItemId?: string) =>
      (await gql(`mutation ($input: AddListItemInput!) { addListItem(input: $input) { item { id } } }`, { input: { listId, label, beforeItemId } })).addListItem.item.id as string;
    const milk = await add('milk');
    const eggs = await add('eggs');

    const environment = connect(owner.token);
    const list = await storedQuery<liveOperationsListQuery>(environment, ListQuery, { listId });
    const connectionId = list.read().node!.items!.__id;
    const kinds: string[] = [];
    const subscription = requestSubscription<liveOperationsListItemsChangedSubscription>(environment, {
      subscription: ListItemsChanged,
      variables: { listId, connections: [connectionId] },
      updater: (store) => placeListItem(store, connectionId),
      onNext: (response) => kinds.push(response!.listItemsChanged.kind),
    });
    onTestFinished(() => subscription.dispose());
    await waitFor(() => server.app.services.live.subscriptions === 1, 10_000, 'the subscription on the server');

    const tea = await add('tea', milk);
    const move = (input: Record<string, unknown>) => gql(`mutation ($input: MoveListItemInput!) { moveListItem(input: $input) { item { id } } }`, { input });
    await move({ itemId: milk, afterItemId: eggs });
    await gql(`mutation ($input: RenameListItemInput!) { renameListItem(input: $input) { item { id } } }`, { input: { itemId: eggs, label: 'free-range eggs' } });
    const bread = await add('bread');
    await move({ itemId: tea, afterItemId: bread });
    await gql(`mutation ($input: RemoveListItemInput!) { removeListItem(input: $input) { removedItemId } }`, { input: { itemId: milk } });

    await waitFor(() => kinds.length === 6, 10_000, 'six changes');
    expect(kinds).toEqual(['ADDED', 'MOVED', 'RENAMED', 'ADDED', 'MOVED', 'REMOVED']);
    const edges = list.read().node!.items!.edges;
    expect(edges.map((e) => e.node.label)).toEqual(['free-range eggs', 'bread', 'tea']);
    const onServer = await gql(`query ($id: ID!) { node(id: $id) { ... on OrderedList { items(first: 100) { edges { cursor node { id label } } } } } }`, { id: listId });
    expect(withoutTypenames(edges)).toEqual(onServer.node.items.edges);

    subscription.dispose();
    await waitFor(() => server.app.services.live.subscriptions === 0, 10_000, 'the subscription to end');
  });
});
