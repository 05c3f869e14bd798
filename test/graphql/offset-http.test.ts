/**
 * `offset` over HTTP on every counted connection (`User.posts`, `OrderedList.items`,
 * `Meeting.acceptedBy`, `suspendedUsers`), once writes have settled: pages from the
 * start, the end and a cursor, in both directions, equal the slices of the whole
 * connection, flags included; past the end a page is empty with exact flags; every
 * edge keeps the cursor a plain page gives it, so paging goes on from a jumped-to page;
 * a negative offset is BAD_USER_INPUT naming `offset`.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { MonotonicClock } from '../../src/store/clock.js';
import { modelOffsetPage } from '../support/paging-model.js';
import { describeEachStore } from '../support/stores.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const SIZE = 13;
const PAGE_INFO = 'pageInfo { hasNextPage hasPreviousPage startCursor endCursor }';
const ARGS = '$first: Int, $after: String, $last: Int, $before: String, $offset: Int';
const PASS = 'first: $first, after: $after, last: $last, before: $before, offset: $offset';

/** Each connection: its query (over `$id` but `suspendedUsers`), and where its page is in the answer. */
const CONNECTIONS = {
  'User.posts': { query: `query ($id: ID!, ${ARGS}) { node(id: $id) { ... on User { page: posts(${PASS}) { totalCount edges { cursor node { id } } ${PAGE_INFO} } } } }`, nested: true },
  'OrderedList.items': { query: `query ($id: ID!, ${ARGS}) { node(id: $id) { ... on OrderedList { page: items(${PASS}) { totalCount edges { cursor node { id } } ${PAGE_INFO} } } } }`, nested: true },
  'Meeting.acceptedBy': { query: `query ($id: ID!, ${ARGS}) { node(id: $id) { ... on Meeting { page: acceptedBy(${PASS}) { totalCount edges { cursor node { id } } ${PAGE_INFO} } } } }`, nested: true },
  suspendedUsers: { query: `query (${ARGS}) { page: suspendedUsers(${PASS}) { totalCount edges { cursor node { user { id } } } ${PAGE_INFO} } }`, nested: false },
} as const;

interface Edge {
  readonly cursor: string;
  readonly node: unknown;
}

describeEachStore('offset over HTTP', (target) => {
  let server: TestServer;
  let admin: string;
  let aheadMs = 0;
  const ids: Record<string, string | undefined> = {};

  async function ok(query: string, variables: Record<string, unknown> = {}, token = admin) {
    const res = await server.gql(query, variables, token);
    expect(res.errors).toBeUndefined();
    return res.data!;
  }

  beforeAll(async () => {
    // The server's clock, moved on by the test to let the windows close and the verifier settle them.
    server = await startTestServer({ target, clock: new MonotonicClock({ now: () => Date.now() + aheadMs }) });
    admin = await server.token('root', { admin: true });
    const people = [];
    for (let i = 0; i < SIZE; i++) {
      const input = aUser();
      const id = (await ok(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input })).createUser.user.id;
      people.push({ id, token: await server.token(input.username) });
    }
    const owner = people[0]!;
    ids['User.posts'] = owner.id;
    for (let i = 0; i < SIZE; i++) await ok(`mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`, { c: `post ${i}` }, owner.token);
    const listId = (await ok(`mutation { createList(input: { title: "Numbered" }) { list { id } } }`, {}, owner.token)).createList.list.id;
    ids['OrderedList.items'] = listId;
    for (let i = 0; i < SIZE; i++) await ok(`mutation ($l: ID!, $t: String!) { addListItem(input: { listId: $l, label: $t }) { item { id } } }`, { l: listId, t: `item ${i}` }, owner.token);
    const meetingId = (await ok(`mutation { createMeeting(input: { title: "All hands" }) { meeting { id } } }`, {}, owner.token)).createMeeting.meeting.id;
    ids['Meeting.acceptedBy'] = meetingId;
    for (const p of people) {
      await ok(`mutation ($m: ID!) { acceptMeeting(input: { meetingId: $m }) { counted } }`, { m: meetingId }, p.token);
      await ok(`mutation ($u: ID!) { suspendUser(input: { userId: $u, reason: "numbered" }) { suspension { reason } } }`, { u: p.id });
    }
    // Settled: every window closed, and the verifier passed.
    aheadMs = 30_000;
    await server.app.services.countVerifier.runOnce();
  }, 120_000);
  afterAll(() => server.close());

  for (const [name, spec] of Object.entries(CONNECTIONS)) {
    const page = async (args: Record<string, unknown>, token = admin) => {
      const data = await ok(spec.query, { ...(spec.nested && { id: ids[name] }), ...args }, token);
      return (spec.nested ? data.node.page : data.page) as { totalCount: number; edges: Edge[]; pageInfo: Record<string, unknown> };
    };

    it(`${name}: pages from the start, the end and cursors, both ways, are the connection's slices`, async () => {
      const whole = await page({ first: 100 });
      expect(whole.totalCount).toBe(SIZE);
      const all = whole.edges;
      const order = (a: Edge, b: Edge) => all.indexOf(a) - all.indexOf(b);
      const cases: Array<{ backward: boolean; size: number; offset: number; cursorAt?: number }> = [
        { backward: false, size: 5, offset: 5 },
        { backward: false, size: 4, offset: 3, cursorAt: 2 },
        { backward: true, size: 5, offset: 4 },
        { backward: true, size: 3, offset: 2, cursorAt: SIZE - 2 },
        { backward: false, size: 5, offset: SIZE + 3 },
        { backward: true, size: 5, offset: SIZE },
        { backward: false, size: 5, offset: SIZE - 3, cursorAt: 0 },
      ];
      for (const c of cases) {
        const cursor = c.cursorAt === undefined ? undefined : all[c.cursorAt]!;
        const got = await page(c.backward ? { last: c.size, before: cursor?.cursor, offset: c.offset } : { first: c.size, after: cursor?.cursor, offset: c.offset });
        const want = modelOffsetPage(all, order, c.backward ? 'backward' : 'forward', c.size, c.offset, cursor);
        // Edges and their cursors, as the whole page gave them.
        expect(got.edges, JSON.stringify(c)).toEqual(want.nodes);
        expect(got.pageInfo, JSON.stringify(c)).toEqual({
          hasNextPage: want.hasNextPage,
          hasPreviousPage: want.hasPreviousPage,
          startCursor: want.nodes[0]?.cursor ?? null,
          endCursor: want.nodes[want.nodes.length - 1]?.cursor ?? null,
        });
      }
      // Paging goes on from a page jumped to: `first: 4, offset: 4` is page 2, and its end cursor leads to page 3.
      const second = await page({ first: 4, offset: 4 });
      expect((await page({ first: 4, after: second.pageInfo.endCursor })).edges).toEqual(all.slice(8, 12));
    });

    it(`${name}: refuses a negative offset as BAD_USER_INPUT naming it`, async () => {
      const res = await server.gql(spec.query, { ...(spec.nested && { id: ids[name] }), first: 2, offset: -1 }, admin);
      expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: 'offset' });
    });
  }
});
