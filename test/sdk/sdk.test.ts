/**
 * The server through the generated, typed SDK: every feature once, with the types the
 * codegen derived from documents/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SdkError, createSdk } from '../../sdk/client.js';
import { aUser } from '../../src/features/users/user-mother.js';
import WebSocket from 'ws';
import { localIdOf } from '../../src/graphql/ids.js';
import { waitFor } from '../support/live-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('the typed SDK', (target) => {
  let server: TestServer;
  beforeAll(async () => {
    // One process, one clock: a subscription without `after` starts exactly now.
    server = await startTestServer({ target, env: { LIVE_POLL_MS: '50', CLOCK_SKEW_MS: '0' } });
  });
  afterAll(() => server.close());

  it('drives every feature with typed calls', async () => {
    const admin = createSdk(server.url, { token: await server.token('root', { admin: true }) });
    const input = { ...aUser(), location: 'Lisbon', lastName: 'Pessoa' };
    const me = createSdk(server.url, { token: await server.token(input.username) });
    const { createUser } = await me.CreateUser({ input });
    expect(createUser?.user).toMatchObject({ username: input.username, location: 'Lisbon', lastName: 'Pessoa' });
    const userId = createUser!.user.id;

    for (let i = 0; i < 3; i++) await me.CreatePost({ input: { content: `sdk ${i}` } });
    const page = await me.Timeline({ username: input.username, first: 2 });
    expect(page.userByUsername?.posts.edges.map((e) => e.node.content)).toEqual(['sdk 2', 'sdk 1']);
    const next = await me.Timeline({ username: input.username, first: 2, after: page.userByUsername!.posts.pageInfo.endCursor });
    expect(next.userByUsername?.posts).toMatchObject({ pageInfo: { hasNextPage: false, hasPreviousPage: true } });

    const meeting = (await me.CreateMeeting({ input: { title: 'SDK sync' } })).createMeeting!.meeting;
    expect((await me.AcceptMeeting({ input: { meetingId: meeting.id } })).acceptMeeting?.counted).toBe(true);
    expect((await me.AcceptMeeting({ input: { meetingId: meeting.id } })).acceptMeeting?.counted).toBe(false);
    const accepted = await me.MeetingAcceptances({ id: meeting.id, first: 5 });
    expect(accepted.node).toMatchObject({ acceptanceCount: 1, acceptedBy: { edges: [{ node: { id: userId } }] } });
    expect((await admin.ReconcileMeeting({ input: { meetingId: meeting.id } })).reconcileMeeting?.previousCount).toBe(1);

    const list = (await me.CreateList({ input: { title: 'SDK list' } })).createList!.list;
    const a = (await me.AddListItem({ input: { listId: list.id, label: 'a' } })).addListItem!.item;
    const b = (await me.AddListItem({ input: { listId: list.id, label: 'b' } })).addListItem!.item;
    await me.MoveListItem({ input: { itemId: b.id, beforeItemId: a.id } });
    await me.RenameListItem({ input: { itemId: a.id, label: 'A' } });
    const items = await me.ListItems({ id: list.id, first: 10 });
    expect(items.node && 'items' in items.node ? items.node.items.edges.map((e) => e.node.label) : []).toEqual(['b', 'A']);
    await me.RemoveListItem({ input: { itemId: b.id } });
    const mine = await me.UserLists({ username: input.username, first: 5 });
    expect(mine.userByUsername?.lists.edges.map((e) => e.node)).toEqual([{ id: list.id, title: 'SDK list', owner: { id: userId, username: input.username } }]);
    const meetings = await me.UserMeetings({ username: input.username, last: 5 });
    expect(meetings.userByUsername?.meetings).toMatchObject({
      edges: [{ node: { id: meeting.id, title: 'SDK sync', acceptanceCount: 1 } }],
      pageInfo: { hasNextPage: false, hasPreviousPage: false },
    });

    expect((await me.UsersByLocation({ location: 'lisbon', first: 5 })).usersByLocation.edges.map((e) => e.node.id)).toEqual([userId]);
    expect((await me.UsersByLastName({ prefix: 'pess', first: 5 })).usersByLastName.edges.map((e) => e.node.id)).toEqual([userId]);
    await me.UpdateUser({ input: { id: userId, location: 'Porto' } });

    await admin.SuspendUser({ input: { userId, reason: 'sdk test' } });
    const suspended = await admin.SuspendedUsers({ first: 5 });
    expect(suspended.suspendedUsers.edges.map((e) => e.node.user.id)).toContain(userId);
    await admin.UnsuspendUser({ input: { userId } });

    const viewer = await me.Viewer();
    expect(viewer.viewer).toMatchObject({ id: userId, location: 'Porto' });
    const node = await me.Node({ id: userId });
    expect(node.node?.__typename).toBe('User');
    const post = page.userByUsername!.posts.edges[0]!.node.id;
    expect((await me.DeletePost({ input: { id: post } })).deletePost?.deletedPostId).toBe(post);
  });

  it('raises errors with their codes', async () => {
    const anonymous = createSdk(server.url);
    const error = await anonymous.CreatePost({ input: { content: 'x' } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SdkError);
    expect((error as SdkError).code).toBe('UNAUTHENTICATED');
  });
  it('follows live changes as typed AsyncIterables over WebSocket, resumes with after, and raises their errors with codes', async () => {
    const input = aUser();
    const me = createSdk(server.url, { token: await server.token(input.username), webSocketImpl: WebSocket });
    const userId = (await me.CreateUser({ input })).createUser!.user.id;
    const changes = me.PostsChanged({ authorId: userId })[Symbol.asyncIterator]();
    const first = changes.next();
    await waitFor(() => server.app.services.live.subscribersOf(`posts:${localIdOf(userId, 'id', 'User')}`) === 1, 5_000, 'the subscription');
    const made = (await me.CreatePost({ input: { content: 'live sdk 1' } })).createPost!.post;
    await me.CreatePost({ input: { content: 'live sdk 2' } });
    const one = (await first).value!;
    // Typed: the change's fields as documents/subscriptions.graphql selects them.
    expect(one.postsChanged.addedEdge?.node).toMatchObject({ id: made.id, content: 'live sdk 1' });
    expect((await changes.next()).value!.postsChanged.addedEdge?.node.content).toBe('live sdk 2');
    await changes.return!();

    await me.DeletePost({ input: { id: made.id } });
    const resumed = me.PostsChanged({ authorId: userId, after: one.postsChanged.cursor })[Symbol.asyncIterator]();
    const later = [(await resumed.next()).value!, (await resumed.next()).value!];
    expect(later.map((c) => c.postsChanged.addedEdge?.node.content ?? `deleted ${c.postsChanged.deletedPostId}`)).toEqual(['live sdk 2', `deleted ${made.id}`]);
    await resumed.return!();

    const refused = await me.SuspensionsChanged({})[Symbol.asyncIterator]().next().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SdkError);
    expect((refused as SdkError).code).toBe('FORBIDDEN');
    await me.dispose();
  });
});
