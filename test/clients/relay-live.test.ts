/**
 * Relay keeps a `posts` connection current from `postsChanged`, with the edge
 * directives and no code of its own: operations compiled by relay-compiler
 * (test/clients/relay/, artifacts committed and checked current here), a network whose
 * subscriptions run over graphql-ws, `@prependEdge` on the added edge and `@deleteEdge`
 * on the deleted post's id. The connection in Relay's store ends equal to a fresh query
 * of the server, cursors included.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createClient } from 'graphql-ws';
import { Environment, Network, Observable, RecordSource, Store, createOperationDescriptor, fetchQuery, requestSubscription, type GraphQLResponse, type RequestParameters, type Variables } from 'relay-runtime';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import subscriptionArtifact from './relay/__generated__/LiveTimelinePostsChangedSubscription.graphql.js';
import queryArtifact, { type LiveTimelineQuery$data } from './relay/__generated__/LiveTimelineQuery.graphql.js';
import { waitFor } from '../support/live-client.js';
import { describeEachStore } from '../support/stores.js';
import type { TestServer } from '../support/test-server.js';
import { aLiveTimeline } from './timeline-fixture.js';

const RELAY_DIR = join(import.meta.dirname, 'relay');

describeEachStore('Relay kept current by a subscription', (target) => {
  let timeline: Awaited<ReturnType<typeof aLiveTimeline>>;
  let server: TestServer;
  let token: string;
  const username = 'relay_live';

  beforeAll(async () => {
    timeline = await aLiveTimeline(target, username, 'r');
    ({ server, token } = timeline);
  });
  afterAll(() => server.close());

  it('compiles the operations: the committed artifacts are what relay-compiler makes of them', async () => {
    const compiler = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'relay-compiler');
    const { stdout } = await promisify(execFile)(compiler, ['--validate'], { cwd: RELAY_DIR });
    expect(stdout).toMatch(/compil/i);
  }, 60_000);

  it('prepends added edges (@prependEdge) and drops deleted posts (@deleteEdge) in the connection, cursors intact', async () => {
    const ws = createClient({ url: server.url.replace(/^http/, 'ws'), webSocketImpl: WebSocket });
    const fetchFn = async (operation: RequestParameters, variables: Variables) => {
      const res = await fetch(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query: operation.text, variables }),
      });
      return (await res.json()) as GraphQLResponse;
    };
    const subscribeFn = (operation: RequestParameters, variables: Variables) =>
      Observable.create<any>((sink) => ws.subscribe({ operationName: operation.name, query: operation.text!, variables }, sink));
    const environment = new Environment({ network: Network.create(fetchFn, subscribeFn), store: new Store(new RecordSource()) });

    const variables = { username };
    const first = (await fetchQuery(environment, queryArtifact, variables).toPromise()) as LiveTimelineQuery$data;
    const posts = first.userByUsername!.posts;
    expect(posts.edges!.map((e) => e!.node!.content)).toEqual(['r3', 'r2', 'r1']);
    const operation = createOperationDescriptor(queryArtifact, variables);
    const retained = environment.retain(operation);
    const read = () => (environment.lookup(operation.fragment).data as LiveTimelineQuery$data).userByUsername!.posts.edges!.map((e) => ({ cursor: e!.cursor, id: e!.node!.id, content: e!.node!.content }));

    const subscription = requestSubscription(environment, {
      subscription: subscriptionArtifact,
      // Everything newer than the first edge shown, into this connection.
      variables: { authorId: first.userByUsername!.id, after: posts.edges![0]!.cursor, connections: [posts.__id] },
    });
    await waitFor(() => server.app.services.live.subscriptions === 1, 5_000, 'the subscription');
    const r2 = posts.edges![1]!.node!.id;
    for (const c of ['r4', 'r5']) await timeline.post(c);
    await timeline.deletePost(r2);

    await waitFor(() => read().map((e) => e.content).join() === 'r5,r4,r3,r1', 10_000, 'the changes in the store');
    expect(read()).toEqual(await timeline.fresh());

    subscription.dispose();
    retained.dispose();
    await ws.dispose();
  });
});
