/**
 * `User.lists`, `User.meetings` and `OrderedList.owner` over HTTP: whole connections,
 * pageInfo included, paged forward and backward across pages; each meeting once however
 * often (and however concurrently) it was accepted; a page of n edges in a fixed number
 * of store round trips; and writes that fail half-way never leave a list or a meeting
 * unreachable, nor an edge to something that is not there.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { listsByOwnerTable, listsTable } from '../../src/features/lists/lists-tables.js';
import { meetingUsersTable, meetingsByUserTable, meetingsTable } from '../../src/features/meetings/meetings-tables.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { localIdOf } from '../../src/graphql/ids.js';
import { FaultyStore } from '../support/faulty-store.js';
import { describeEachStore } from '../support/stores.js';
import { startTestServer, type GqlResponse, type TestServer } from '../support/test-server.js';

const PAGE_INFO = `pageInfo { hasNextPage hasPreviousPage startCursor endCursor }`;
const LISTS = `query ($u: String!, $first: Int, $after: String, $last: Int, $before: String) {
  userByUsername(username: $u) { lists(first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { title owner { username } } } ${PAGE_INFO} } } }`;
const MEETINGS = `query ($u: String!, $first: Int, $after: String, $last: Int, $before: String) {
  userByUsername(username: $u) { meetings(first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { title } } ${PAGE_INFO} } } }`;
const ACCEPT = `mutation ($m: ID!) { acceptMeeting(input: { meetingId: $m }) { counted } }`;

type Edge = { cursor: string; node: Record<string, unknown> };
type Connection = { edges: Edge[]; pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null } };
interface Member {
  id: string;
  username: string;
  token: string;
}

let server: TestServer;
afterEach(() => server?.close());

async function members(n: number): Promise<Member[]> {
  const admin = await server.token('root', { admin: true });
  const out: Member[] = [];
  for (let i = 0; i < n; i++) {
    const input = aUser();
    const res = await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input }, admin);
    out.push({ id: res.data!.createUser.user.id, username: input.username, token: await server.token(input.username) });
  }
  return out;
}

/** The `User.meetings` lookup rows of a user, read straight from the store. */
async function lookupRows(member: Member) {
  return server.app.store.slice(meetingsByUserTable, { partition: { user_id: localIdOf(member.id, 'id', 'User') }, limit: 100 });
}

/** A few milliseconds apart, so creation times (the connections' order) differ. */
const tick = () => new Promise((resolve) => setTimeout(resolve, 3));

async function createList(owner: Member, title: string): Promise<GqlResponse> {
  await tick();
  return server.gql(`mutation ($t: String!) { createList(input: { title: $t }) { list { id } } }`, { t: title }, owner.token);
}

async function createMeeting(creator: Member, title: string): Promise<string> {
  await tick();
  const res = await server.gql(`mutation ($t: String!) { createMeeting(input: { title: $t }) { meeting { id } } }`, { t: title }, creator.token);
  expect(res.errors).toBeUndefined();
  return res.data!.createMeeting.meeting.id;
}

async function connection(query: string, field: 'lists' | 'meetings', variables: Record<string, unknown>): Promise<Connection> {
  const res = await server.gql(query, variables);
  expect(res.errors).toBeUndefined();
  return res.data!.userByUsername[field];
}

/** The page of `all` from index `from` to `to` (exclusive), as the whole connection must read. */
function pageOf(all: Edge[], from: number, to: number): Connection {
  const edges = all.slice(from, to);
  return {
    edges,
    pageInfo: {
      hasNextPage: to < all.length,
      hasPreviousPage: from > 0,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges[edges.length - 1]?.cursor ?? null,
    },
  };
}

/**
 * Page the whole connection both ways, 2 edges at a time, and compare every page with
 * the slice of the full connection it must be; returns the nodes in order.
 */
async function expectPagedBothWays(query: string, field: 'lists' | 'meetings', username: string, expectedNodes: Array<Record<string, unknown>>) {
  const all = await connection(query, field, { u: username, first: 100 });
  expect(all.edges.map((e) => e.node)).toEqual(expectedNodes);
  expect(all.pageInfo).toEqual(pageOf(all.edges, 0, all.edges.length).pageInfo);
  const n = all.edges.length;
  let after: string | null = null;
  for (let from = 0; from < n; from += 2) {
    const page = await connection(query, field, { u: username, first: 2, after });
    expect(page).toEqual(pageOf(all.edges, from, Math.min(from + 2, n)));
    after = page.pageInfo.endCursor;
  }
  let before: string | null = null;
  for (let to = n; to > 0; to -= 2) {
    const page = await connection(query, field, { u: username, last: 2, before });
    expect(page).toEqual(pageOf(all.edges, Math.max(to - 2, 0), to));
    before = page.pageInfo.startCursor;
  }
  // A window: after the first edge and before the last one.
  const window = await connection(query, field, { u: username, first: 100, after: all.edges[0]!.cursor, before: all.edges[n - 1]!.cursor });
  expect(window).toEqual(pageOf(all.edges, 1, n - 1));
  return all;
}

describeEachStore('the user connections over HTTP', (target) => {
  describe('User.lists', () => {
    it('pages the lists a user owns, newest first, the same forward and backward', async () => {
      server = await startTestServer({ target, env: { LIST_APPLIER: 'false' } });
      const [alice, bob] = await members(2);
      for (const title of ['one', 'two', 'three', 'four', 'five']) expect((await createList(alice!, title)).errors).toBeUndefined();
      await createList(bob!, "bob's");
      const byAlice = (title: string) => ({ title, owner: { username: alice!.username } });
      await expectPagedBothWays(LISTS, 'lists', alice!.username, ['five', 'four', 'three', 'two', 'one'].map(byAlice));
      expect((await connection(LISTS, 'lists', { u: bob!.username })).edges.map((e) => e.node)).toEqual([
        { title: "bob's", owner: { username: bob!.username } },
      ]);
    });

    it('skips lookup rows whose list is not there (a batch seen half-applied), with full pages and exact flags', async () => {
      server = await startTestServer({ target, env: { LIST_APPLIER: 'false' } });
      const [alice] = await members(1);
      const orphan = (at: number) =>
        server.app.store.upsert(listsByOwnerTable, { owner_id: localIdOf(alice!.id, 'id', 'User'), created_at: new Date(at), list_id: randomUUID() });
      await orphan(Date.now() - 60_000);
      for (const title of ['one', 'two']) await createList(alice!, title);
      await orphan(Date.now());
      for (const title of ['three', 'four']) await createList(alice!, title);
      await orphan(Date.now() + 60_000);
      const byAlice = (title: string) => ({ title, owner: { username: alice!.username } });
      await expectPagedBothWays(LISTS, 'lists', alice!.username, ['four', 'three', 'two', 'one'].map(byAlice));
    });

    it('is empty for a user with no lists, and refuses a cursor of another user', async () => {
      server = await startTestServer({ target, env: { LIST_APPLIER: 'false' } });
      const [alice, bob] = await members(2);
      await createList(alice!, 'mine');
      expect(await connection(LISTS, 'lists', { u: bob!.username, first: 5 })).toEqual({
        edges: [],
        pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null },
      });
      const cursor = (await connection(LISTS, 'lists', { u: alice!.username })).edges[0]!.cursor;
      const res = await server.gql(LISTS, { u: bob!.username, after: cursor });
      expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0]?.message).toMatch(/`after` is not a valid cursor/);
    });

    it('serves OrderedList.owner through node', async () => {
      server = await startTestServer({ target, env: { LIST_APPLIER: 'false' } });
      const [alice] = await members(1);
      const listId = (await createList(alice!, 'mine')).data!.createList.list.id;
      const res = await server.gql(`query ($id: ID!) { node(id: $id) { ... on OrderedList { title owner { id username } } } }`, { id: listId });
      expect(res.data).toEqual({ node: { title: 'mine', owner: { id: alice!.id, username: alice!.username } } });
    });

    it('reads a page of n lists in the same number of round trips, whatever n', async () => {
      server = await startTestServer({ target, env: { LIST_APPLIER: 'false' } });
      const [alice] = await members(1);
      for (let i = 0; i < 12; i++) await createList(alice!, `list ${i}`);
      const trips = async (first: number) => {
        const res = await server.gql(LISTS, { u: alice!.username, first });
        expect(res.data!.userByUsername.lists.edges).toHaveLength(first);
        return res.extensions!.storeRoundTrips;
      };
      // The username, the user, the lookup slice, the lists (one batch); owners come from the user loader.
      expect([await trips(1), await trips(5), await trips(12)]).toEqual([4, 4, 4]);
    });
  });

  describe('User.meetings', () => {
    it('pages the meetings a user created or accepted, newest meeting first, each once', async () => {
      server = await startTestServer({ target });
      const [alice, bob] = await members(2);
      const m1 = await createMeeting(alice!, 'm1 by alice');
      await createMeeting(bob!, 'm2 by bob');
      const m3 = await createMeeting(alice!, 'm3 by alice');
      const m4 = await createMeeting(bob!, 'm4 by bob');
      await createMeeting(alice!, 'm5 by alice, not accepted by bob');
      // Accepted in another order than created: the order stays the meetings' creation order.
      expect((await server.gql(ACCEPT, { m: m3 }, bob!.token)).data).toEqual({ acceptMeeting: { counted: true } });
      for (let i = 0; i < 3; i++) await server.gql(ACCEPT, { m: m1 }, bob!.token);
      const burst = await Promise.all(Array.from({ length: 8 }, () => server.gql(ACCEPT, { m: m1 }, bob!.token)));
      expect(burst.every((r) => r.data?.acceptMeeting.counted === false)).toBe(true);
      // A creator accepting their own meeting: still one edge.
      await server.gql(ACCEPT, { m: m4 }, bob!.token);
      const titles = ['m4 by bob', 'm3 by alice', 'm2 by bob', 'm1 by alice'];
      await expectPagedBothWays(MEETINGS, 'meetings', bob!.username, titles.map((title) => ({ title })));
      // alice: her 3 meetings; bob: his 2 and the 2 he accepted (m4 once, though created and accepted).
      expect([(await lookupRows(alice!)).length, (await lookupRows(bob!)).length]).toEqual([3, 4]);
    });

    it('counts one edge per meeting under concurrent first accepts, with first-write-wins and with lwt', async () => {
      for (const strategy of ['first-write-wins', 'lwt']) {
        server = await startTestServer({ target, env: { ACCEPTANCE_STRATEGY: strategy } });
        const [alice, bob] = await members(2);
        const meetings = [await createMeeting(alice!, 'a'), await createMeeting(alice!, 'b')];
        const requests = meetings.flatMap((m) => Array.from({ length: 10 }, () => server.gql(ACCEPT, { m }, bob!.token)));
        const responses = await Promise.all(requests);
        expect(responses.filter((r) => r.data?.acceptMeeting.counted)).toHaveLength(2);
        expect((await connection(MEETINGS, 'meetings', { u: bob!.username })).edges.map((e) => e.node)).toEqual([{ title: 'b' }, { title: 'a' }]);
        await server.close();
      }
    });

    it('reads a page of n meetings in the same number of round trips, whatever n', async () => {
      server = await startTestServer({ target });
      const [alice, bob] = await members(2);
      for (let i = 0; i < 6; i++) {
        await createMeeting(bob!, `bob's ${i}`);
        await server.gql(ACCEPT, { m: await createMeeting(alice!, `alice's ${i}`) }, bob!.token);
      }
      const trips = async (first: number) => {
        const res = await server.gql(
          `query ($u: String!, $first: Int) { userByUsername(username: $u) { meetings(first: $first) { edges { node { id title acceptanceCount } } } } }`,
          { u: bob!.username, first },
        );
        expect(res.data!.userByUsername.meetings.edges).toHaveLength(first);
        return res.extensions!.storeRoundTrips;
      };
      // The username, the user, the lookup slice, the meetings, the acceptances that prove
      // the accepted ones (one batch each), the acceptance counts (one batch: heads and
      // open windows by key).
      expect([await trips(2), await trips(7), await trips(12)]).toEqual([6, 6, 6]);
    });
  });

  describe('writes that fail half-way', () => {
    it('a failed createList leaves neither the list nor its lookup row, and the retry is listed once', async () => {
      const faulty: { store?: FaultyStore } = {};
      server = await startTestServer({ target, env: { LIST_APPLIER: 'false' }, wrap: (s) => (faulty.store = new FaultyStore(s)) });
      const [alice] = await members(1);
      const before = server.dump();
      faulty.store!.failWhen((call) => call.operation === 'batch' && call.tables.includes(listsTable.name));
      const failed = await createList(alice!, 'lost');
      expect(failed.errors?.[0]?.message).toBe('Internal server error');
      faulty.store!.heal();
      // Nothing at all was written: no list, no lookup row.
      expect(server.dump()).toEqual(before);
      expect((await createList(alice!, 'kept')).errors).toBeUndefined();
      expect((await connection(LISTS, 'lists', { u: alice!.username })).edges.map((e) => e.node.title)).toEqual(['kept']);
    });

    it('a failed createMeeting leaves neither the meeting nor its lookup row', async () => {
      const faulty: { store?: FaultyStore } = {};
      server = await startTestServer({ target, wrap: (s) => (faulty.store = new FaultyStore(s)) });
      const [alice] = await members(1);
      const before = server.dump();
      faulty.store!.failWhen((call) => call.operation === 'batch' && call.tables.includes(meetingsTable.name));
      const failed = await server.gql(`mutation { createMeeting(input: { title: "lost" }) { meeting { id } } }`, {}, alice!.token);
      expect(failed.errors?.[0]?.message).toBe('Internal server error');
      faulty.store!.heal();
      // Nothing at all was written: no meeting, no lookup row.
      expect(server.dump()).toEqual(before);
      expect((await connection(MEETINGS, 'meetings', { u: alice!.username })).edges).toEqual([]);
    });

    it('an accept that crashes after its lookup row shows no edge until an accept completes, then exactly one', async () => {
      const faulty: { store?: FaultyStore } = {};
      server = await startTestServer({ target, wrap: (s) => (faulty.store = new FaultyStore(s)) });
      const [alice, bob] = await members(2);
      const older = await createMeeting(alice!, 'older');
      const meeting = await createMeeting(alice!, 'crashed');
      await server.gql(ACCEPT, { m: older }, bob!.token);
      // The process dies right after the lookup row: the acceptance is never written.
      faulty.store!.failWhen((call) => call.tables.includes(meetingUsersTable.name));
      const crashed = await server.gql(ACCEPT, { m: meeting }, bob!.token);
      expect(crashed.errors?.[0]?.message).toBe('Internal server error');
      faulty.store!.heal();
      // bob's row for the crashed accept was written; his acceptance was not.
      expect((await lookupRows(bob!)).map((r) => r.meeting_id)).toEqual([localIdOf(meeting, 'id', 'Meeting'), localIdOf(older, 'id', 'Meeting')]);
      const acceptance = { meeting_id: localIdOf(meeting, 'id', 'Meeting'), user_id: localIdOf(bob!.id, 'id', 'User') };
      expect(await server.app.store.get(meetingUsersTable, acceptance)).toBeNull();
      // The lookup row is there, but points at no acceptance: it is skipped, and the page stays exact.
      expect(await connection(MEETINGS, 'meetings', { u: bob!.username, first: 1 })).toEqual({
        edges: [{ cursor: expect.any(String), node: { title: 'older' } }],
        pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: expect.any(String), endCursor: expect.any(String) },
      });
      // The retry completes it: one edge, counted once.
      expect((await server.gql(ACCEPT, { m: meeting }, bob!.token)).data).toEqual({ acceptMeeting: { counted: true } });
      const after = await connection(MEETINGS, 'meetings', { u: bob!.username });
      expect(after.edges.map((e) => e.node.title)).toEqual(['crashed', 'older']);
      expect(after.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: false });
    });
  });
});
