/**
 * `totalCount` over HTTP: on `User.posts`, `OrderedList.items`, `suspendedUsers` and
 * `Meeting.acceptedBy` (where it is `acceptanceCount`), current after each write; it
 * costs nothing when not asked for, and one store round trip however many connections
 * ask for it; `suspendedUsers` stays for admins.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { describeEachStore } from '../support/stores.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

interface Member {
  readonly id: string;
  readonly token: string;
}

describeEachStore('totalCount over HTTP', (target) => {
  let server: TestServer;
  let admin: string;
  let alice: Member;
  let bob: Member;
  let listId: string;
  let meetingId: string;
  const posts: string[] = [];
  const items: string[] = [];

  async function member(): Promise<Member> {
    const input = aUser();
    const res = await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input }, admin);
    return { id: res.data!.createUser.user.id, token: await server.token(input.username) };
  }

  async function ok(query: string, variables: Record<string, unknown> = {}, token = admin) {
    const res = await server.gql(query, variables, token);
    expect(res.errors).toBeUndefined();
    return res;
  }

  beforeAll(async () => {
    server = await startTestServer({ target });
    admin = await server.token('root', { admin: true });
    [alice, bob] = [await member(), await member()];
    for (let i = 0; i < 3; i++) {
      posts.push((await ok(`mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`, { c: `post ${i}` }, alice.token)).data!.createPost.post.id);
    }
    listId = (await ok(`mutation { createList(input: { title: "Groceries" }) { list { id } } }`, {}, alice.token)).data!.createList.list.id;
    for (const label of ['milk', 'eggs']) {
      items.push((await ok(`mutation ($l: ID!, $t: String!) { addListItem(input: { listId: $l, label: $t }) { item { id } } }`, { l: listId, t: label }, alice.token)).data!.addListItem.item.id);
    }
    meetingId = (await ok(`mutation { createMeeting(input: { title: "Sync" }) { meeting { id } } }`, {}, alice.token)).data!.createMeeting.meeting.id;
    for (const m of [alice, bob, alice]) await ok(`mutation ($m: ID!) { acceptMeeting(input: { meetingId: $m }) { counted } }`, { m: meetingId }, m.token);
    await ok(`mutation ($u: ID!) { suspendUser(input: { userId: $u, reason: "spam" }) { suspension { reason } } }`, { u: bob.id });
  });
  afterAll(() => server.close());

  const EVERYTHING = `query ($ids: [ID!]!) { nodes(ids: $ids) {
    ... on User { posts(first: 2) { COUNT edges { node { id } } } }
    ... on OrderedList { items(first: 1) { COUNT edges { node { id } } } }
    ... on Meeting { ACCEPTANCES acceptedBy(first: 1) { COUNT edges { node { id } } } } } }`;

  it('gives each connection its size, all pages together, and acceptedBy the acceptance count', async () => {
    const res = await ok(EVERYTHING.replaceAll('COUNT', 'totalCount').replace('ACCEPTANCES', 'acceptanceCount'), { ids: [alice.id, listId, meetingId] });
    expect(res.data!.nodes).toEqual([
      { posts: { totalCount: 3, edges: [{ node: { id: posts[2] } }, { node: { id: posts[1] } }] } },
      { items: { totalCount: 2, edges: [{ node: { id: items[0] } }] } },
      { acceptanceCount: 2, acceptedBy: { totalCount: 2, edges: [expect.anything()] } },
    ]);
    const suspended = await ok(`{ suspendedUsers(first: 5) { totalCount edges { node { reason } } } }`);
    expect(suspended.data!.suspendedUsers).toEqual({ totalCount: 1, edges: [{ node: { reason: 'spam' } }] });
  });

  it('costs no round trip when not asked for, and one for every count of a request', async () => {
    const ids = { ids: [alice.id, listId, meetingId, bob.id] };
    const without = await ok(EVERYTHING.replaceAll('COUNT', '').replace('ACCEPTANCES', ''), ids);
    const withCounts = await ok(EVERYTHING.replaceAll('COUNT', 'totalCount').replace('ACCEPTANCES', 'acceptanceCount'), ids);
    expect(withCounts.extensions!.storeRoundTrips! - without.extensions!.storeRoundTrips!).toBe(1);
    // A page of users, each with its posts' count: still one.
    const page = `query ($m: ID!) { node(id: $m) { ... on Meeting { acceptedBy(first: 10) { edges { node { posts(first: 1) { COUNT edges { node { id } } } } } } } } }`;
    const plain = await ok(page.replace('COUNT', ''), { m: meetingId });
    const counted = await ok(page.replace('COUNT', 'totalCount'), { m: meetingId });
    expect(counted.data!.node.acceptedBy.edges.map((e: any) => e.node.posts.totalCount).sort()).toEqual([0, 3]);
    expect(counted.extensions!.storeRoundTrips! - plain.extensions!.storeRoundTrips!).toBe(1);
  });

  it('follows every write at once: posts deleted, items added and removed, suspensions lifted', async () => {
    const count = async () => {
      const res = await ok(
        `query ($ids: [ID!]!) { nodes(ids: $ids) { ... on User { posts { totalCount } } ... on OrderedList { items { totalCount } } } suspendedUsers { totalCount } }`,
        { ids: [alice.id, listId] },
      );
      return [res.data!.nodes[0].posts.totalCount, res.data!.nodes[1].items.totalCount, res.data!.suspendedUsers.totalCount];
    };
    const before = await count();
    await ok(`mutation ($id: ID!) { deletePost(input: { id: $id }) { deletedPostId } }`, { id: posts[0] }, alice.token);
    await ok(`mutation ($l: ID!) { addListItem(input: { listId: $l, label: "tea" }) { item { id } } }`, { l: listId }, alice.token);
    await ok(`mutation ($i: ID!) { removeListItem(input: { itemId: $i }) { removedItemId } }`, { i: items[0] }, alice.token);
    await ok(`mutation ($i: ID!) { removeListItem(input: { itemId: $i }) { removedItemId } }`, { i: items[1] }, alice.token);
    await ok(`mutation ($u: ID!) { unsuspendUser(input: { userId: $u }) { user { id } } }`, { u: bob.id });
    expect(await count()).toEqual([before[0]! - 1, before[1]! - 1, before[2]! - 1]);
  });

  it('keeps suspendedUsers, count and all, for admins', async () => {
    const res = await server.gql(`{ suspendedUsers { totalCount } }`, {}, alice.token);
    expect(res.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(res.data).toBeNull();
  });
});
