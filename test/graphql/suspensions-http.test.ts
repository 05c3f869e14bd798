/**
 * Suspended users over HTTP: admin-only access, who sees a suspension, the error
 * codes, the DataLoader round-trip bound, and a failed saga answered with a code.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { usersByStatusTable } from '../../src/features/suspensions/suspensions-tables.js';
import { StoreOutcomeUnknownError } from '../../src/store/port.js';
import { FaultyStore } from '../support/faulty-store.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

const SUSPEND = `mutation ($input: SuspendUserInput!) { suspendUser(input: $input) { suspension { reason suspendedAt user { username } } clientMutationId } }`;
const UNSUSPEND = `mutation ($input: UnsuspendUserInput!) { unsuspendUser(input: $input) { user { username suspension { reason } } } }`;
const PAGE = `query ($first: Int, $after: String, $last: Int, $before: String) {
  suspendedUsers(first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { reason suspendedAt user { username suspension { reason } } } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  } }`;

describeEachStore('suspended users over HTTP', (target) => {
  let server: TestServer;
  let faulty: FaultyStore;
  let admin: string;

  beforeAll(async () => {
    server = await startTestServer({ target, wrap: (s) => (faulty = new FaultyStore(s)) });
    admin = await server.token('root', { admin: true });
  });
  afterAll(() => server.close());

  async function newUser() {
    const input = aUser();
    const res = await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id username } } }`, { input }, admin);
    return { ...(res.data!.createUser.user as { id: string; username: string }), token: await server.token(input.username) };
  }

  it('lets an admin suspend, list and unsuspend, newest first', async () => {
    const a = await newUser();
    const b = await newUser();
    const s1 = await server.gql(SUSPEND, { input: { userId: a.id, reason: 'spam', suspendedAt: '2026-03-04T05:06:07Z', clientMutationId: 'm1' } }, admin);
    expect(s1.data).toEqual({
      suspendUser: { suspension: { reason: 'spam', suspendedAt: '2026-03-04T05:06:07.000Z', user: { username: a.username } }, clientMutationId: 'm1' },
    });
    await server.gql(SUSPEND, { input: { userId: b.id, reason: 'abuse' } }, admin);
    const page = await server.gql(PAGE, { first: 10 }, admin);
    const nodes = page.data!.suspendedUsers.edges.map((e: { node: unknown }) => e.node);
    expect(nodes.slice(0, 2)).toEqual([
      { reason: 'abuse', suspendedAt: expect.any(String), user: { username: b.username, suspension: { reason: 'abuse' } } },
      { reason: 'spam', suspendedAt: '2026-03-04T05:06:07.000Z', user: { username: a.username, suspension: { reason: 'spam' } } },
    ]);
    const un = await server.gql(UNSUSPEND, { input: { userId: b.id } }, admin);
    expect(un.data).toEqual({ unsuspendUser: { user: { username: b.username, suspension: null } } });
    await server.gql(UNSUSPEND, { input: { userId: a.id } }, admin);
  });

  it('answers CONFLICT for a second suspension and NOT_FOUND for unsuspending someone not suspended', async () => {
    const u = await newUser();
    await server.gql(SUSPEND, { input: { userId: u.id, reason: 'first' } }, admin);
    const again = await server.gql(SUSPEND, { input: { userId: u.id, reason: 'second' } }, admin);
    expect(again.errors?.[0]?.extensions).toEqual({ code: 'CONFLICT', argumentName: 'userId' });
    await server.gql(UNSUSPEND, { input: { userId: u.id } }, admin);
    const notSuspended = await server.gql(UNSUSPEND, { input: { userId: u.id } }, admin);
    expect(notSuspended.errors?.[0]?.extensions).toEqual({ code: 'NOT_FOUND', argumentName: 'userId' });
    const badId = await server.gql(SUSPEND, { input: { userId: 'nope', reason: 'x' } }, admin);
    expect(badId.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argumentName: 'userId' });
    const badTime = await server.gql(SUSPEND, { input: { userId: u.id, reason: 'x', suspendedAt: 'yesterday' } }, admin);
    expect(badTime.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('keeps the admin view and the mutations to admins', async () => {
    const member = await newUser();
    const other = await newUser();
    const list = await server.gql(PAGE, { first: 1 }, member.token);
    expect(list.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const anonymous = await server.gql(PAGE, { first: 1 });
    expect(anonymous.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const suspend = await server.gql(SUSPEND, { input: { userId: other.id, reason: 'x' } }, member.token);
    expect(suspend.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const unsuspend = await server.gql(UNSUSPEND, { input: { userId: other.id } }, member.token);
    expect(unsuspend.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it("shows a suspension to its user and to admins, and refuses it to anyone else", async () => {
    const suspended = await newUser();
    const other = await newUser();
    await server.gql(SUSPEND, { input: { userId: suspended.id, reason: 'visible to me' } }, admin);
    const q = `query ($u: String!) { userByUsername(username: $u) { suspension { reason } } }`;
    const own = await server.gql(q, { u: suspended.username }, suspended.token);
    expect(own.data).toEqual({ userByUsername: { suspension: { reason: 'visible to me' } } });
    const asAdmin = await server.gql(q, { u: suspended.username }, admin);
    expect(asAdmin.data).toEqual({ userByUsername: { suspension: { reason: 'visible to me' } } });
    const asOther = await server.gql(q, { u: suspended.username }, other.token);
    expect(asOther.data).toEqual({ userByUsername: { suspension: null } });
    expect(asOther.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const notSuspended = await server.gql(q, { u: other.username }, other.token);
    expect(notSuspended.data).toEqual({ userByUsername: { suspension: null } });
    expect(notSuspended.errors).toBeUndefined();
    await server.gql(UNSUSPEND, { input: { userId: suspended.id } }, admin);
  });

  it('serves a page of 50 suspensions with users and their suspensions in at most 4 round trips', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) {
      const u = await newUser();
      ids.push(u.id);
      // All in the newest bucket (this month; a second apart), so the page lies in one
      // bucket. (Older buckets emptied by other tests stay registered: the registry is
      // never pruned, and the walk would read them as empty.)
      const at = new Date(Date.now() - i * 1_000).toISOString();
      await server.gql(SUSPEND, { input: { userId: u.id, reason: `r${i}`, suspendedAt: at } }, admin);
    }
    const small = await server.gql(PAGE, { first: 5 }, admin);
    const large = await server.gql(PAGE, { first: 50 }, admin);
    expect(small.data!.suspendedUsers.edges).toHaveLength(5);
    expect(large.data!.suspendedUsers.edges).toHaveLength(50);
    // Bucket registry, one slice, users, suspensions: the same for 5 and for 50.
    expect(large.extensions?.storeRoundTrips).toBeLessThanOrEqual(4);
    expect(large.extensions?.storeRoundTrips).toBe(small.extensions?.storeRoundTrips);
    for (const id of ids) await server.gql(UNSUSPEND, { input: { userId: id } }, admin);
  });

  it('answers OUTCOME_UNKNOWN when a saga could not be rolled back either; after recovery, a retry with its key suspends once', async () => {
    const u = await newUser();
    // Every write of the reverse lookup times out with an unknown outcome: the step and its compensation.
    faulty.failWhen(
      (c) => c.table === usersByStatusTable.name && !['get', 'getMany', 'slice', 'readCells'].includes(c.operation),
      () => new StoreOutcomeUnknownError('injected write timeout', { timedOut: true }),
    );
    const input = { userId: u.id, reason: 'outcome unknown', clientMutationId: 'suspend-once' };
    const res = await server.gql(SUSPEND, { input }, admin);
    faulty.heal();
    expect(res.errors?.[0]).toMatchObject({
      message: 'suspendUser could not be completed; it will be finished or rolled back automatically. Retry it with the same clientMutationId to learn its outcome.',
      extensions: { code: 'OUTCOME_UNKNOWN' },
    });
    await server.app.recoverSagas();
    const retry = await server.gql(SUSPEND, { input }, admin);
    expect(retry.errors).toBeUndefined();
    expect(retry.data?.suspendUser).toMatchObject({ suspension: { reason: 'outcome unknown' }, clientMutationId: 'suspend-once' });
    expect(await server.gql(SUSPEND, { input }, admin)).toMatchObject({ data: retry.data });
  });

  it('answers a failed saga with a code, having rolled it back', async () => {
    const u = await newUser();
    faulty.failWhen((c) => c.operation === 'upsert' && c.table === usersByStatusTable.name);
    const res = await server.gql(SUSPEND, { input: { userId: u.id, reason: 'will fail' } }, admin);
    faulty.failWhen(null);
    expect(res.errors?.[0]).toMatchObject({
      message: 'suspendUser could not be completed and was rolled back; nothing changed. Retry later.',
      extensions: { code: 'INTERNAL_SERVER_ERROR' },
    });
    const check = await server.gql(`query ($u: String!) { userByUsername(username: $u) { suspension { reason } } }`, { u: u.username }, admin);
    expect(check.data).toEqual({ userByUsername: { suspension: null } });
    // And it can be done again.
    const retry = await server.gql(SUSPEND, { input: { userId: u.id, reason: 'works now' } }, admin);
    expect(retry.data?.suspendUser.suspension.reason).toBe('works now');
  });
});
