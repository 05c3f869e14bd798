/**
 * The authorization table of docs/api.md, checked row by row: for every operation it lists,
 * each kind of caller (anonymous, member, owner, admin, and a ghost: a valid token
 * whose user does not exist) is allowed exactly when the row says so. The table and
 * this test cannot drift apart: a row without a scenario, or a scenario without a row,
 * fails.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { liveClient, waitFor } from '../support/live-client.js';
import { startTestServer, type GqlResponse, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

type Caller = 'anonymous' | 'member' | 'owner' | 'admin' | 'ghost';
const CALLERS: Caller[] = ['anonymous', 'member', 'owner', 'admin', 'ghost'];

/**
 * Fields anonymous callers read as null with FORBIDDEN (docs/api.md says so), while the
 * rest of their answer stands; every other refusal of an anonymous caller is
 * UNAUTHENTICATED.
 */
const MEMBER_FIELDS = new Set(['User.location', 'User.lastName', 'User.firstName']);

/** The table in docs/api.md: operation -> the callers it allows. */
function readTable(): Map<string, Set<Caller>> {
  const guide = readFileSync('docs/api.md', 'utf8');
  const start = guide.indexOf('\n## Authorization\n');
  const end = guide.indexOf('\n## ', start + 1);
  const section = guide.slice(start, end === -1 ? undefined : end);
  const rows = new Map<string, Set<Caller>>();
  for (const m of section.matchAll(/^\| `([\w.]+)` \| ([a-z ]+) \|$/gm)) {
    const rule = m[2]!.trim();
    const allowed: Caller[] =
      rule === 'anonymous' ? CALLERS : rule === 'member' ? ['member', 'owner', 'admin'] : rule === 'admin' ? ['admin'] : rule === 'owner' ? ['owner'] : rule === 'owner or admin' ? ['owner', 'admin'] : [];
    if (allowed.length === 0) throw new Error(`unknown rule "${rule}" for ${m[1]}`);
    rows.set(m[1]!, new Set(allowed));
  }
  return rows;
}

describeEachStore('authorization, as the table in docs/api.md says', (target) => {
  let server: TestServer;
  const tokens = {} as Record<Caller, string | undefined>;
  let owner: { id: string; username: string };
  let admin: string;

  async function newUser() {
    const input = { ...aUser(), location: 'Lisbon', lastName: 'Pessoa', firstName: 'Fernando' };
    const res = await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id username } } }`, { input }, admin);
    return { ...(res.data!.createUser.user as { id: string; username: string }), token: await server.token(input.username) };
  }
  async function as<T = any>(token: string, query: string, variables: Record<string, unknown> = {}) {
    const res = await server.gql(query, variables, token);
    expect(res.errors, query).toBeUndefined();
    return res.data as T;
  }

  beforeAll(async () => {
    server = await startTestServer({ target, env: { LIST_APPLIER: 'false' } });
    admin = await server.token('root', { admin: true });
    // An admin is a member with the admin role: it has a user too.
    await as(admin, `mutation { createUser(input: { username: "root", displayName: "Root" }) { user { id } } }`);
    const o = await newUser();
    const m = await newUser();
    owner = o;
    tokens.owner = o.token;
    tokens.member = m.token;
    tokens.admin = admin;
    tokens.anonymous = undefined;
    // A genuine token of a username nobody has created: a member of nothing.
    tokens.ghost = await server.token('ghost_of_nobody');
    // The owner is suspended, so User.suspension has something to show.
    await as(admin, `mutation ($u: ID!) { suspendUser(input: { userId: $u, reason: "x" }) { suspension { reason } } }`, { u: o.id });
  });
  afterAll(() => server.close());

  /** Fresh objects the owner owns, per attempt (an allowed delete must not affect the next). */
  const post = async () => (await as(tokens.owner!, `mutation { createPost(input: { content: "p" }) { post { id } } }`)).createPost.post.id as string;
  const list = async () => {
    const listId = (await as(tokens.owner!, `mutation { createList(input: { title: "l" }) { list { id } } }`)).createList.list.id as string;
    const add = async (label: string) =>
      (await as(tokens.owner!, `mutation ($l: ID!, $x: String!) { addListItem(input: { listId: $l, label: $x }) { item { id } } }`, { l: listId, x: label })).addListItem.item.id as string;
    return { listId, a: await add('a'), b: await add('b') };
  };
  const meeting = async () => (await as(tokens.owner!, `mutation { createMeeting(input: { title: "m" }) { meeting { id } } }`)).createMeeting.meeting.id as string;

  /**
   * Subscribe over WebSocket as a caller (the token in connection_init): refused when an
   * error arrives, allowed once the server holds the subscription; then it is ended.
   */
  async function subscribeAs(token: string | undefined, query: string, variables: Record<string, unknown> = {}): Promise<GqlResponse> {
    const client = liveClient(server.url, { token });
    const held = server.app.services.live.subscriptions;
    const sub = client.subscribe(query, variables);
    await waitFor(() => sub.errors.length > 0 || server.app.services.live.subscriptions > held, 5_000, 'the subscription or its refusal');
    sub.stop();
    await client.dispose();
    // Gone again before the next attempt counts.
    await waitFor(() => server.app.services.live.subscriptions === held, 5_000, 'the subscription to end');
    return { status: 101, ...(sub.errors.length > 0 && { errors: sub.errors as GqlResponse['errors'] }) };
  }

  /** How to attempt each operation as a caller; the response decides allowed or not. */
  const scenarios: Record<string, (token: string | undefined, caller: Caller) => Promise<GqlResponse>> = {
    'Query.node': (t) => server.gql(`query ($id: ID!) { node(id: $id) { id } }`, { id: owner.id }, t),
    'Query.nodes': (t) => server.gql(`query ($id: ID!) { nodes(ids: [$id]) { id } }`, { id: owner.id }, t),
    'Query.viewer': (t) => server.gql(`{ viewer { id } }`, {}, t),
    'Query.rateLimit': (t) => server.gql(`{ rateLimit { remaining } }`, {}, t),
    'Query.userByUsername': (t) => server.gql(`query ($u: String!) { userByUsername(username: $u) { id } }`, { u: owner.username }, t),
    'Query.usersByLocation': (t) => server.gql(`{ usersByLocation(location: "Nowhere", first: 1) { edges { cursor } } }`, {}, t),
    'Query.usersByLastName': (t) => server.gql(`{ usersByLastName(prefix: "x", first: 1) { edges { cursor } } }`, {}, t),
    'Query.usersByName': (t) => server.gql(`{ usersByName(query: "fer pes", first: 1) { edges { cursor } } }`, {}, t),
    'Query.suspendedUsers': (t) => server.gql(`{ suspendedUsers(first: 1) { edges { cursor } } }`, {}, t),
    'User.location': (t) => server.gql(`query ($u: String!) { userByUsername(username: $u) { id location } }`, { u: owner.username }, t),
    'User.lastName': (t) => server.gql(`query ($id: ID!) { node(id: $id) { ... on User { id lastName } } }`, { id: owner.id }, t),
    'User.firstName': (t) => server.gql(`query ($id: ID!) { node(id: $id) { ... on User { id firstName } } }`, { id: owner.id }, t),
    'User.lists': (t) => server.gql(`query ($u: String!) { userByUsername(username: $u) { lists(first: 1) { edges { node { id } } } } }`, { u: owner.username }, t),
    'User.meetings': (t) => server.gql(`query ($u: String!) { userByUsername(username: $u) { meetings(first: 1) { edges { node { id } } } } }`, { u: owner.username }, t),
    'User.suspension': (t) => server.gql(`query ($u: String!) { userByUsername(username: $u) { suspension { reason } } }`, { u: owner.username }, t),
    'Mutation.createUser': async (t, caller) => {
      // The owner of a createUser is the token named after the new user.
      const input = aUser();
      const token = caller === 'owner' ? await server.token(input.username) : t;
      return server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input }, token);
    },
    'Mutation.updateUser': (t) => server.gql(`mutation ($id: ID!) { updateUser(input: { id: $id, displayName: "Renamed" }) { user { id } } }`, { id: owner.id }, t),
    'Mutation.createPost': (t) => server.gql(`mutation { createPost(input: { content: "mine" }) { post { id } } }`, {}, t),
    'Mutation.deletePost': async (t) => server.gql(`mutation ($id: ID!) { deletePost(input: { id: $id }) { deletedPostId } }`, { id: await post() }, t),
    'Mutation.suspendUser': async (t) => {
      const victim = await newUser();
      return server.gql(`mutation ($u: ID!) { suspendUser(input: { userId: $u, reason: "r" }) { suspension { reason } } }`, { u: victim.id }, t);
    },
    'Mutation.unsuspendUser': async (t) => {
      const victim = await newUser();
      await as(admin, `mutation ($u: ID!) { suspendUser(input: { userId: $u, reason: "r" }) { suspension { reason } } }`, { u: victim.id });
      return server.gql(`mutation ($u: ID!) { unsuspendUser(input: { userId: $u }) { user { id } } }`, { u: victim.id }, t);
    },
    'Mutation.createMeeting': (t) => server.gql(`mutation { createMeeting(input: { title: "t" }) { meeting { id } } }`, {}, t),
    'Mutation.acceptMeeting': async (t) => server.gql(`mutation ($m: ID!) { acceptMeeting(input: { meetingId: $m }) { counted } }`, { m: await meeting() }, t),
    'Mutation.reconcileMeeting': async (t) => server.gql(`mutation ($m: ID!) { reconcileMeeting(input: { meetingId: $m }) { previousCount } }`, { m: await meeting() }, t),
    'Mutation.createList': (t) => server.gql(`mutation { createList(input: { title: "t" }) { list { id } } }`, {}, t),
    'Mutation.addListItem': async (t) => server.gql(`mutation ($l: ID!) { addListItem(input: { listId: $l, label: "c" }) { item { id } } }`, { l: (await list()).listId }, t),
    'Mutation.moveListItem': async (t) => {
      const l = await list();
      return server.gql(`mutation ($i: ID!, $b: ID!) { moveListItem(input: { itemId: $i, beforeItemId: $b }) { item { id } } }`, { i: l.b, b: l.a }, t);
    },
    'Mutation.renameListItem': async (t) => server.gql(`mutation ($i: ID!) { renameListItem(input: { itemId: $i, label: "z" }) { item { id } } }`, { i: (await list()).a }, t),
    'Mutation.removeListItem': async (t) => server.gql(`mutation ($i: ID!) { removeListItem(input: { itemId: $i }) { removedItemId } }`, { i: (await list()).a }, t),
    'Subscription.postsChanged': (t) => subscribeAs(t, `subscription ($a: ID!) { postsChanged(authorId: $a) { cursor } }`, { a: owner.id }),
    'Subscription.listItemsChanged': async (t) => subscribeAs(t, `subscription ($l: ID!) { listItemsChanged(listId: $l) { cursor } }`, { l: (await list()).listId }),
    'Subscription.meetingChanged': async (t) => subscribeAs(t, `subscription ($m: ID!) { meetingChanged(meetingId: $m) { cursor } }`, { m: await meeting() }),
    'Subscription.suspensionsChanged': (t) => subscribeAs(t, `subscription { suspensionsChanged { cursor } }`),
  };

  it('has a scenario for every row of the table and a row for every scenario', () => {
    expect([...readTable().keys()].sort()).toEqual(Object.keys(scenarios).sort());
  });

  for (const [operation, attempt] of Object.entries(scenarios)) {
    it(`enforces ${operation}`, async () => {
      const allowed = readTable().get(operation)!;
      for (const caller of CALLERS) {
        const res = await attempt(tokens[caller], caller);
        const code = res.errors?.[0]?.extensions?.code;
        if (allowed.has(caller)) {
          expect(res.errors, `${operation} as ${caller} should be allowed`).toBeUndefined();
        } else {
          const expected = caller === 'anonymous' && !MEMBER_FIELDS.has(operation) ? 'UNAUTHENTICATED' : 'FORBIDDEN';
          expect(code, `${operation} as ${caller} should be refused`).toBe(expected);
        }
        if (MEMBER_FIELDS.has(operation)) {
          // Refused: the field is null and the user itself is still answered.
          const user = (res.data?.userByUsername ?? res.data?.node) as Record<string, unknown>;
          const field = operation.split('.')[1]!;
          expect(user.id, `${operation} as ${caller}`).toBe(owner.id);
          expect(user[field], `${operation} as ${caller}`).toBe(allowed.has(caller) ? { location: 'Lisbon', lastName: 'Pessoa', firstName: 'Fernando' }[field] : null);
        }
      }
    });
  }
});
