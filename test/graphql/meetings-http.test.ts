/**
 * Meeting acceptances over HTTP (seed 001): every user counted exactly once under
 * concurrency, with a forced clock that makes requests share a timestamp, after a
 * failed increment (reconcileMeeting), and with the lightweight-transaction variant.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { connectionCountsTable } from '../../src/counts/count-tables.js';
import { FaultyStore } from '../support/faulty-store.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

const ACCEPT = `mutation ($input: AcceptMeetingInput!) { acceptMeeting(input: $input) { counted meeting { id acceptanceCount } } }`;
const MEETING = `query ($id: ID!, $after: String) { node(id: $id) { ... on Meeting { title acceptanceCount
  acceptedBy(first: 20, after: $after) { edges { node { id username } } pageInfo { hasNextPage endCursor } } } } }`;

let server: TestServer;
afterEach(() => server?.close());

async function members(n: number) {
  const admin = await server.token('root', { admin: true });
  const out: Array<{ id: string; username: string; token: string }> = [];
  for (let i = 0; i < n; i++) {
    const input = aUser();
    const res = await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input }, admin);
    out.push({ id: res.data!.createUser.user.id, username: input.username, token: await server.token(input.username) });
  }
  return out;
}

async function createMeeting(token: string, title = 'Planning') {
  const res = await server.gql(`mutation ($input: CreateMeetingInput!) { createMeeting(input: $input) { meeting { id title acceptanceCount } } }`, { input: { title } }, token);
  expect(res.data!.createMeeting.meeting).toMatchObject({ title, acceptanceCount: 0 });
  return res.data!.createMeeting.meeting.id as string;
}

async function acceptedBy(meetingId: string): Promise<{ count: number; userIds: string[] }> {
  const ids: string[] = [];
  let after: string | null = null;
  let count = 0;
  for (;;) {
    const res: any = await server.gql(MEETING, { id: meetingId, after });
    count = res.data.node.acceptanceCount;
    ids.push(...res.data.node.acceptedBy.edges.map((e: { node: { id: string } }) => e.node.id));
    if (!res.data.node.acceptedBy.pageInfo.hasNextPage) break;
    after = res.data.node.acceptedBy.pageInfo.endCursor;
  }
  return { count, userIds: ids };
}

describeEachStore('meeting acceptances over HTTP', (target) => {
  for (const strategy of ['first-write-wins', 'lwt'] as const) {
    describe(`acceptMeeting with ${strategy}`, () => {
      it('counts 50 distinct users exactly once from 200 concurrent requests', async () => {
        server = await startTestServer({ target, env: { ACCEPTANCE_STRATEGY: strategy } });
        const users = await members(50);
        const meetingId = await createMeeting(users[0]!.token);
        const requests = users.flatMap((u) => [u, u, u, u]).map((u) => server.gql(ACCEPT, { input: { meetingId } }, u.token));
        const responses = await Promise.all(requests);
        expect(responses.every((r) => r.errors === undefined)).toBe(true);
        expect(responses.filter((r) => r.data!.acceptMeeting.counted)).toHaveLength(50);
        const { count, userIds } = await acceptedBy(meetingId);
        expect(count).toBe(50);
        expect(userIds).toHaveLength(50);
        expect(new Set(userIds)).toEqual(new Set(users.map((u) => u.id)));
      });
    });
  }

  describe('acceptMeeting when requests share a timestamp', () => {
    it('counts exactly one of them, concurrent or one after another', async () => {
      // A forced clock: every acceptance gets the very same USING TIMESTAMP.
      server = await startTestServer({ target, clock: { nowMicros: () => 1_700_000_000_000_000n } });
      const [alice, bob] = await members(2);
      const meetingId = await createMeeting(alice!.token);
      const burst = await Promise.all(Array.from({ length: 20 }, () => server.gql(ACCEPT, { input: { meetingId } }, alice!.token)));
      expect(burst.filter((r) => r.data!.acceptMeeting.counted)).toHaveLength(1);
      // One after another: the later request must lose the tie even though the first has read back its win.
      const first = await server.gql(ACCEPT, { input: { meetingId } }, bob!.token);
      const second = await server.gql(ACCEPT, { input: { meetingId } }, bob!.token);
      expect([first.data!.acceptMeeting.counted, second.data!.acceptMeeting.counted]).toEqual([true, false]);
      expect((await acceptedBy(meetingId)).count).toBe(2);
    });
  });

  describe('reconcileMeeting', () => {
    it('restores the exact count at once after an acceptance failed to move it', async () => {
      let faulty!: FaultyStore;
      server = await startTestServer({ target, wrap: (s) => (faulty = new FaultyStore(s)) });
      const users = await members(5);
      const meetingId = await createMeeting(users[0]!.token);
      for (const u of users.slice(0, 4)) await server.gql(ACCEPT, { input: { meetingId } }, u.token);
      // The acceptance is written and won; the count's live cell, written after, fails.
      faulty.failWhen((c) => c.operation === 'upsert' && c.table === connectionCountsTable.name);
      const failed = await server.gql(ACCEPT, { input: { meetingId } }, users[4]!.token);
      faulty.failWhen(null);
      expect(failed.errors?.[0]?.extensions?.code).toBe('INTERNAL_SERVER_ERROR');
      // The retry finds the acceptance already written: not counted again, so the live count lags.
      const retry = await server.gql(ACCEPT, { input: { meetingId } }, users[4]!.token);
      expect(retry.data!.acceptMeeting).toMatchObject({ counted: false, meeting: { acceptanceCount: 4 } });

      const admin = await server.token('root', { admin: true });
      const repaired = await server.gql(
        `mutation ($input: ReconcileMeetingInput!) { reconcileMeeting(input: $input) { previousCount meeting { acceptanceCount } } }`,
        { input: { meetingId } },
        admin,
      );
      expect(repaired.data).toEqual({ reconcileMeeting: { previousCount: 4, meeting: { acceptanceCount: 5 } } });
      expect((await acceptedBy(meetingId)).count).toBe(5);
    });

    it('is for admins only, and unknown or malformed meetings are refused', async () => {
      server = await startTestServer({ target });
      const [u] = await members(1);
      const meetingId = await createMeeting(u!.token);
      const q = `mutation ($input: ReconcileMeetingInput!) { reconcileMeeting(input: $input) { previousCount } }`;
      expect((await server.gql(q, { input: { meetingId } }, u!.token)).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      const missing = Buffer.from('Meeting:00000000-0000-4000-8000-000000000000').toString('base64');
      expect((await server.gql(ACCEPT, { input: { meetingId: missing } }, u!.token)).errors?.[0]?.extensions).toEqual({
        code: 'NOT_FOUND',
        argumentName: 'meetingId',
      });
      expect((await server.gql(ACCEPT, { input: { meetingId: u!.id } }, u!.token)).errors?.[0]?.extensions).toEqual({
        code: 'BAD_USER_INPUT',
        argumentName: 'meetingId',
      });
      expect((await server.gql(ACCEPT, { input: { meetingId } })).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    });
  });
});
