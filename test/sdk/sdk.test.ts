/**
 * The server through the generated, typed SDK: every feature once, with the types the
 * codegen derived from documents/; every subscription over WebSocket, typed, resumed
 * after its last cursor, and its errors.
 */
import * as graphqlWs from 'graphql-ws';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SdkError, SdkSocketClosed, createSdk, type SdkOptions } from '../../sdk/client.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { waitFor } from '../support/live-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { createListApplier } from '../../src/composition-root.js';
import { localIdOf } from '../../src/graphql/ids.js';
import { MonotonicClock } from '../../src/store/clock.js';
import { describeEachStore } from '../support/stores.js';

/** The iterator of a subscription: its first `next()` subscribes. */
const changes = <T>(subscription: AsyncIterable<T>): AsyncIterator<T> => subscription[Symbol.asyncIterator]();

/** The next `count` changes of a subscription. */
async function take<T>(iterator: AsyncIterator<T>, count: number): Promise<T[]> {
  const got: T[] = [];
  while (got.length < count) {
    const step = await iterator.next();
    if (step.done) throw new Error(`the subscription ended after ${got.length} of ${count} changes`);
    got.push(step.value);
  }
  return got;
}

describeEachStore('the typed SDK', (target) => {
  let server: TestServer;
  let aheadMs = 0;
  beforeAll(async () => {
    // One process, one clock: a subscription without `after` starts exactly when the server holds it.
    // The server's clock, moved on by the test to let the count windows close.
    server = await startTestServer({ target, env: { LIVE_POLL_MS: '50', CLOCK_SKEW_MS: '0' }, clock: new MonotonicClock({ now: () => Date.now() + aheadMs }) });
  });
  afterAll(() => server.close());

  /** An SDK whose subscriptions run on graphql-ws (Node 20 has no global WebSocket: ws's). */
  const live = (token?: string, options: SdkOptions = {}) => createSdk(server.url, { token, graphqlWs, webSocketImpl: WebSocket, ...options });
  /** Wait until the server holds `n` subscriptions. */
  const subscribed = (n: number) => waitFor(() => server.app.services.live.subscriptions === n, 5_000, `${n} subscriptions on the server`);
  /** A new user, their id and an SDK with their token. */
  async function aMember(overrides: Parameters<typeof aUser>[0] = {}) {
    const input = aUser(overrides);
    const sdk = live(await server.token(input.username));
    const { createUser } = await sdk.CreateUser({ input });
    return { sdk, id: createUser!.user.id, username: input.username };
  }

  it('drives every feature with typed calls', async () => {
    const admin = createSdk(server.url, { token: await server.token('root', { admin: true }) });
    const input = { ...aUser(), location: 'Lisbon', firstName: 'Fernando', lastName: 'Pessoa' };
    const me = createSdk(server.url, { token: await server.token(input.username) });
    const { createUser } = await me.CreateUser({ input });
    expect(createUser?.user).toMatchObject({ username: input.username, location: 'Lisbon', lastName: 'Pessoa' });
    const userId = createUser!.user.id;

    for (let i = 0; i < 3; i++) await me.CreatePost({ input: { content: `sdk ${i}` } });
    const page = await me.Timeline({ username: input.username, first: 2 });
    expect(page.userByUsername?.posts.edges.map((e) => e.node.content)).toEqual(['sdk 2', 'sdk 1']);
    expect(page.userByUsername?.posts.totalCount).toBe(3);
    const next = await me.Timeline({ username: input.username, first: 2, after: page.userByUsername!.posts.pageInfo.endCursor });
    expect(next.userByUsername?.posts).toMatchObject({ pageInfo: { hasNextPage: false, hasPreviousPage: true } });

    const meeting = (await me.CreateMeeting({ input: { title: 'SDK sync' } })).createMeeting!.meeting;
    expect((await me.AcceptMeeting({ input: { meetingId: meeting.id } })).acceptMeeting?.counted).toBe(true);
    expect((await me.AcceptMeeting({ input: { meetingId: meeting.id } })).acceptMeeting?.counted).toBe(false);
    const accepted = await me.MeetingAcceptances({ id: meeting.id, first: 5 });
    expect(accepted.node).toMatchObject({ acceptanceCount: 1, acceptedBy: { totalCount: 1, edges: [{ node: { id: userId } }] } });
    expect((await admin.ReconcileMeeting({ input: { meetingId: meeting.id } })).reconcileMeeting?.previousCount).toBe(1);

    const list = (await me.CreateList({ input: { title: 'SDK list' } })).createList!.list;
    const a = (await me.AddListItem({ input: { listId: list.id, label: 'a' } })).addListItem!.item;
    const b = (await me.AddListItem({ input: { listId: list.id, label: 'b' } })).addListItem!.item;
    await me.MoveListItem({ input: { itemId: b.id, beforeItemId: a.id } });
    await me.RenameListItem({ input: { itemId: a.id, label: 'A' } });
    const items = await me.ListItems({ id: list.id, first: 10 });
    expect(items.node && 'items' in items.node ? items.node.items.edges.map((e) => e.node.label) : []).toEqual(['b', 'A']);
    expect(items.node && 'items' in items.node ? items.node.items.totalCount : null).toBe(2);
    // Page 2 of one edge each, by offset, once the list's changes are applied and settled
    // (an offset counts settled changes: docs/api.md, "Before writes have settled").
    await createListApplier(server.app.services).drain(localIdOf(list.id, 'id', 'OrderedList'));
    aheadMs = 30_000;
    await server.app.services.countVerifier.runOnce();
    const second = await me.ListItems({ id: list.id, first: 1, offset: 1 });
    expect(second.node && 'items' in second.node ? second.node.items : null).toMatchObject({ edges: [{ node: { label: 'A' } }], pageInfo: { hasNextPage: false, hasPreviousPage: true } });
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
    expect((await me.UsersByName({ query: 'pess fern', first: 5 })).usersByName.edges.map((e) => e.node)).toEqual([
      { id: userId, username: input.username, displayName: input.displayName, firstName: 'Fernando', lastName: 'Pessoa', location: 'Lisbon' },
    ]);
    await me.UpdateUser({ input: { id: userId, location: 'Porto' } });

    await admin.SuspendUser({ input: { userId, reason: 'sdk test' } });
    const suspended = await admin.SuspendedUsers({ first: 5 });
    expect(suspended.suspendedUsers.edges.map((e) => e.node.user.id)).toContain(userId);
    expect(suspended.suspendedUsers.totalCount).toBeGreaterThanOrEqual(1);
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

  it('delivers a timeline\'s changes typed, and resumes after a change\'s cursor with every later one', async () => {
    const author = await aMember();
    const timeline = changes(author.sdk.PostsChanged({ authorId: author.id }));
    const first = timeline.next();
    await subscribed(1);
    const one = (await author.sdk.CreatePost({ input: { content: 'live 1' } })).createPost!.post;
    const two = (await author.sdk.CreatePost({ input: { content: 'live 2' } })).createPost!.post;
    await author.sdk.DeletePost({ input: { id: one.id } });
    const got = [(await first).value!, ...(await take(timeline, 2))].map((c) => c.postsChanged);
    const page = await author.sdk.Timeline({ username: author.username, first: 5 });
    // Edges of User.posts, with the very cursors its pages give.
    expect(got.map(({ cursor, ...change }) => change)).toEqual([
      { addedEdge: { cursor: expect.any(String), node: { ...one, author: { id: author.id, username: author.username } } }, deletedPostId: null },
      { addedEdge: { ...page.userByUsername!.posts.edges[0]!, node: { ...two, author: { id: author.id, username: author.username } } }, deletedPostId: null },
      { addedEdge: null, deletedPostId: one.id },
    ]);
    expect(page.userByUsername!.posts.edges.map((e) => e.node.id)).toEqual([two.id]);
    await timeline.return!();
    await subscribed(0);

    // Resuming after the first change's cursor gives the two after it, and then what comes.
    const resumed = changes(author.sdk.PostsChanged({ authorId: author.id, after: got[0]!.cursor }));
    expect((await take(resumed, 2)).map((c) => c.postsChanged)).toEqual(got.slice(1));
    const three = (await author.sdk.CreatePost({ input: { content: 'live 3' } })).createPost!.post;
    expect((await take(resumed, 1))[0]!.postsChanged.addedEdge!.node.id).toBe(three.id);
    await resumed.return!();
    await subscribed(0);
  });

  it('delivers a list\'s items, a meeting\'s acceptors and the suspensions, typed', async () => {
    const owner = await aMember();
    const guest = await aMember();
    const admin = live(await server.token('root', { admin: true }));

    const list = (await owner.sdk.CreateList({ input: { title: 'Live list' } })).createList!.list;
    const meeting = (await owner.sdk.CreateMeeting({ input: { title: 'Live meeting' } })).createMeeting!.meeting;
    const items = changes(owner.sdk.ListItemsChanged({ listId: list.id }));
    const acceptors = changes(owner.sdk.MeetingChanged({ meetingId: meeting.id }));
    const suspensions = changes(admin.SuspensionsChanged());
    const firsts = [items.next(), acceptors.next(), suspensions.next()] as const;
    await subscribed(3);

    const a = (await owner.sdk.AddListItem({ input: { listId: list.id, label: 'a' } })).addListItem!.item;
    const b = (await owner.sdk.AddListItem({ input: { listId: list.id, label: 'b' } })).addListItem!.item;
    await owner.sdk.MoveListItem({ input: { itemId: b.id, beforeItemId: a.id } });
    await owner.sdk.RenameListItem({ input: { itemId: a.id, label: 'A' } });
    await owner.sdk.RemoveListItem({ input: { itemId: b.id } });
    await guest.sdk.AcceptMeeting({ input: { meetingId: meeting.id } });
    await admin.SuspendUser({ input: { userId: guest.id, reason: 'live sdk test' } });
    await admin.UnsuspendUser({ input: { userId: guest.id } });

    const listChanges = [(await firsts[0]).value!, ...(await take(items, 4))].map(({ listItemsChanged: { cursor, edge, ...change } }) => ({
      ...change,
      item: edge?.node ?? null,
    }));
    expect(listChanges).toEqual([
      { kind: 'ADDED', item: a, previousItemId: null, removedItemId: null },
      { kind: 'ADDED', item: b, previousItemId: a.id, removedItemId: null },
      { kind: 'MOVED', item: b, previousItemId: null, removedItemId: null },
      { kind: 'RENAMED', item: { id: a.id, label: 'A' }, previousItemId: null, removedItemId: null },
      { kind: 'REMOVED', item: null, previousItemId: null, removedItemId: b.id },
    ]);
    const { cursor: meetingCursor, ...accepted } = (await firsts[1]).value!.meetingChanged;
    expect(meetingCursor).toMatch(/\S/);
    expect(accepted).toEqual({
      meeting: { id: meeting.id, title: 'Live meeting', acceptanceCount: 1 },
      acceptedEdge: { cursor: expect.any(String), node: { id: guest.id, username: guest.username } },
    });
    const suspended = [(await firsts[2]).value!, ...(await take(suspensions, 1))].map(({ suspensionsChanged: { cursor, ...change } }) => change);
    expect(suspended).toEqual([
      {
        addedEdge: { cursor: expect.any(String), node: { reason: 'live sdk test', suspendedAt: expect.stringMatching(/^\d{4}-/), user: { id: guest.id, username: guest.username } } },
        unsuspendedUserId: null,
      },
      { addedEdge: null, unsuspendedUserId: guest.id },
    ]);
    for (const iterator of [items, acceptors, suspensions]) await iterator.return!();
    await subscribed(0);
  });

  it('ends a subscription with SdkError and its code, and with SdkSocketClosed when the socket closes; the last cursor resumes it', async () => {
    const author = await aMember();
    const refused = async (subscription: AsyncIterable<unknown>) => (await changes(subscription).next().catch((e: unknown) => e)) as SdkError;
    expect((await refused(live().SuspensionsChanged())).code).toBe('UNAUTHENTICATED');
    expect((await refused(author.sdk.SuspensionsChanged())).code).toBe('FORBIDDEN');
    const badCursor = await refused(author.sdk.PostsChanged({ authorId: author.id, after: 'not-a-cursor' }));
    expect(badCursor).toBeInstanceOf(SdkError);
    expect(badCursor.errors[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', argumentName: 'after' } });
    expect(() => createSdk(server.url).PostsChanged({ authorId: author.id })).toThrow(/graphql-ws/);

    // A token about to expire: the server closes the socket (4403) under the subscription.
    const shortLived = live(await server.token(author.username, { expiresIn: '2s' }));
    const timeline = changes(shortLived.PostsChanged({ authorId: author.id }));
    const first = timeline.next();
    await subscribed(1);
    await author.sdk.CreatePost({ input: { content: 'before the close' } });
    const last = (await first).value!.postsChanged;
    const closed = await timeline.next().catch((e: unknown) => e);
    expect(closed).toBeInstanceOf(SdkSocketClosed);
    expect(closed).toMatchObject({ code: 4403 });
    expect(await timeline.next()).toEqual({ done: true, value: undefined });
    await author.sdk.CreatePost({ input: { content: 'while closed' } });

    // With a new token, after the last cursor received: what was missed, then what comes.
    const renewed = changes(author.sdk.PostsChanged({ authorId: author.id, after: last.cursor }));
    expect((await take(renewed, 1))[0]!.postsChanged.addedEdge!.node.content).toBe('while closed');
    await author.sdk.CreatePost({ input: { content: 'after the resume' } });
    expect((await take(renewed, 1))[0]!.postsChanged.addedEdge!.node.content).toBe('after the resume');
    await renewed.return!();
    await subscribed(0);
  });
});
