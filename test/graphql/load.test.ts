/**
 * Load without loss: mixed reads and writes over HTTP at concurrency 64 for a bounded
 * number of requests (LOAD_REQUESTS, default 1,500): posts, meeting acceptances, list
 * moves, suspensions and profile updates. No request may fail; afterwards every
 * acknowledged write is readable and every feature's invariants hold.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { localIdOf, parseGlobalId } from '../../src/graphql/ids.js';
import { readPendingTransactions } from '../../src/features/lists/ledger.js';
import { KeyedLock } from '../../src/saga/keyed-lock.js';
import { checkInvariants } from '../support/suspension-fixture.js';
import { startTestServer, type GqlResponse, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

const REQUESTS = Number(process.env.LOAD_REQUESTS ?? 1_500);
const CONCURRENCY = 64;
const CITIES = ['Accra', 'Bogotá', 'Cairo', 'Dhaka'];

type Member = { id: string; rawId: string; username: string; token: string };

describeEachStore('load without loss', (target) => {
  let server: TestServer;
  let admin: string;
  const members: Member[] = [];
  let meetingId: string;
  let listId: string;
  let items: string[] = [];
  let listOwner: Member;

  beforeAll(async () => {
    server = await startTestServer({ target, env: { LIST_APPLIER_INTERVAL_MS: '50' } });
    admin = await server.token('root', { admin: true });
    await server.gql(`mutation { createUser(input: { username: "root", displayName: "Root" }) { user { id } } }`, {}, admin);
    for (let i = 0; i < 32; i++) {
      const input = { ...aUser(), location: CITIES[i % 4], lastName: `Load${i}` };
      const res = await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input }, admin);
      const id = res.data!.createUser.user.id as string;
      const ref = parseGlobalId(id, 'id', 'User');
      members.push({ id, rawId: ref.type === 'User' ? ref.userId : '', username: input.username, token: await server.token(input.username) });
    }
    listOwner = members[0]!;
    meetingId = (await server.gql(`mutation { createMeeting(input: { title: "Load" }) { meeting { id } } }`, {}, listOwner.token)).data!.createMeeting.meeting.id;
    listId = (await server.gql(`mutation { createList(input: { title: "Load" }) { list { id } } }`, {}, listOwner.token)).data!.createList.list.id;
    for (let i = 0; i < 20; i++) {
      const r = await server.gql(`mutation ($l: ID!, $x: String!) { addListItem(input: { listId: $l, label: $x }) { item { id } } }`, { l: listId, x: `item ${i}` }, listOwner.token);
      items.push(r.data!.addListItem.item.id);
    }
  });
  afterAll(() => server.close());

  it(`serves ${REQUESTS} mixed requests at concurrency ${CONCURRENCY} with zero failures and no lost write`, async () => {
    const failures: string[] = [];
    const posts = new Map<string, string>();
    const accepted = new Set<string>();
    const suspended = new Set<string>();
    const suspensionLock = new KeyedLock();
    let moves = 0;
    let next = 0;

    const call = async (query: string, variables: Record<string, unknown>, token?: string): Promise<GqlResponse> => {
      const res = await server.gql(query, variables, token);
      if (res.status !== 200 || res.errors) failures.push(`${query.slice(0, 40)}: ${res.status} ${JSON.stringify(res.errors)}`);
      return res;
    };

    const ops: Array<(i: number) => Promise<void>> = [
      async (i) => {
        const m = members[i % members.length]!;
        const content = `load post ${i}`;
        const r = await call(`mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`, { c: content }, m.token);
        if (r.data?.createPost) posts.set(r.data.createPost.post.id, content);
      },
      async (i) => {
        const m = members[(i * 7) % members.length]!;
        const r = await call(`mutation ($m: ID!) { acceptMeeting(input: { meetingId: $m }) { counted } }`, { m: meetingId }, m.token);
        if (r.data?.acceptMeeting) accepted.add(m.id);
      },
      async (i) => {
        const a = items[i % items.length]!;
        const b = items[(i * 13 + 5) % items.length]!;
        if (a === b) return;
        const r = await call(`mutation ($a: ID!, $b: ID!) { moveListItem(input: { itemId: $a, ${i % 2 ? 'beforeItemId' : 'afterItemId'}: $b }) { item { id } } }`, { a, b }, listOwner.token);
        if (r.data?.moveListItem) moves++;
      },
      async (i) => {
        // Suspensions toggle one user at a time (a second suspension would rightly be CONFLICT).
        const m = members[8 + (i % 16)]!;
        await suspensionLock.with(m.id, async () => {
          if (suspended.has(m.id)) {
            const r = await call(`mutation ($u: ID!) { unsuspendUser(input: { userId: $u }) { user { id } } }`, { u: m.id }, admin);
            if (r.data?.unsuspendUser) suspended.delete(m.id);
          } else {
            const r = await call(`mutation ($u: ID!) { suspendUser(input: { userId: $u, reason: "load" }) { suspension { reason } } }`, { u: m.id }, admin);
            if (r.data?.suspendUser) suspended.add(m.id);
          }
        });
      },
      async (i) => {
        const m = members[(i * 5) % members.length]!;
        await call(`mutation ($id: ID!, $l: String!) { updateUser(input: { id: $id, location: $l }) { user { id } } }`, { id: m.id, l: CITIES[i % 4] }, m.token);
      },
      async (i) => {
        const m = members[i % members.length]!;
        await call(`query ($u: String!) { userByUsername(username: $u) { posts(first: 10) { edges { node { id author { username } } } } } }`, { u: m.username });
      },
      async () => {
        await call(`{ suspendedUsers(first: 20) { edges { node { reason user { username } } } pageInfo { hasNextPage } } }`, {}, admin);
      },
      async () => {
        await call(`query ($l: ID!) { node(id: $l) { ... on OrderedList { items(first: 25) { edges { node { id } } } } } }`, { l: listId });
      },
      async (i) => {
        await call(`query ($c: String!) { usersByLocation(location: $c, first: 20) { edges { node { id } } } }`, { c: CITIES[i % 4] }, admin);
      },
    ];

    const worker = async () => {
      for (let i = next++; i < REQUESTS; i = next++) await ops[i % ops.length]!(i);
    };
    const started = Date.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const seconds = (Date.now() - started) / 1000;
    expect(failures).toEqual([]);
    console.log(`load: ${REQUESTS} requests at concurrency ${CONCURRENCY} in ${seconds.toFixed(1)} s (${Math.round(REQUESTS / seconds)} req/s)`);

    // Every acknowledged post is readable, with its content.
    const postIds = [...posts.keys()];
    for (let k = 0; k < postIds.length; k += 100) {
      const chunk = postIds.slice(k, k + 100);
      const r = await server.gql(`query ($ids: [ID!]!) { nodes(ids: $ids) { ... on Post { id content } } }`, { ids: chunk });
      expect(r.data!.nodes.map((n: { content: string } | null) => n?.content)).toEqual(chunk.map((id) => posts.get(id)));
    }
    // Each accepting user counted once.
    const meeting = await server.gql(`query ($m: ID!) { node(id: $m) { ... on Meeting { acceptanceCount acceptedBy(first: 100) { edges { node { id } } } } } }`, { m: meetingId });
    expect(meeting.data!.node.acceptanceCount).toBe(accepted.size);
    expect(new Set(meeting.data!.node.acceptedBy.edges.map((e: { node: { id: string } }) => e.node.id))).toEqual(accepted);
    // The list: every item exactly once, pending moves or not, and after the applier drained.
    const listNow = async () =>
      (await server.gql(`query ($l: ID!) { node(id: $l) { ... on OrderedList { items(first: 100) { edges { node { id } } } } } }`, { l: listId })).data!.node.items.edges.map(
        (e: { node: { id: string } }) => e.node.id,
      );
    expect([...(await listNow())].sort()).toEqual([...items].sort());
    // Drained: no transaction pending (applied ones stay readable for the trailing passes' horizon).
    const pending = async () => (await readPendingTransactions(server.app.store, localIdOf(listId, 'id', 'OrderedList'))).length;
    for (let k = 0; k < 200 && (await pending()) > 0; k++) await sleep(25);
    expect(await pending()).toBe(0);
    expect([...(await listNow())].sort()).toEqual([...items].sort());
    expect(moves).toBeGreaterThan(0);
    // Suspensions: the saga invariants, and exactly the users the client left suspended.
    expect(await checkInvariants(server.app.store, members.map((m) => m.rawId))).toEqual([]);
    const s = await server.gql(`{ suspendedUsers(first: 100) { edges { node { user { id } } } } }`, {}, admin);
    expect(new Set(s.data!.suspendedUsers.edges.map((e: { node: { user: { id: string } } }) => e.node.user.id))).toEqual(suspended);
    // The directory: each user in exactly the location its row holds.
    const rows = await server.gql(`query ($ids: [ID!]!) { nodes(ids: $ids) { ... on User { id location } } }`, { ids: members.map((m) => m.id) }, admin);
    const where = new Map<string, string>(rows.data!.nodes.map((n: { id: string; location: string }) => [n.id, n.location]));
    const found = new Map<string, string[]>();
    for (const city of CITIES) {
      const r = await server.gql(`query ($c: String!) { usersByLocation(location: $c, first: 100) { edges { node { id } } } }`, { c: city }, admin);
      for (const e of r.data!.usersByLocation.edges) found.set(e.node.id, [...(found.get(e.node.id) ?? []), city]);
    }
    for (const m of members) expect(found.get(m.id), m.username).toEqual([where.get(m.id)]);
  }, 300_000);
});
