/**
 * Store round trips of three mutations, as the server reports them in
 * `extensions.storeRoundTrips`: each reads what it needs once, through the request's
 * loaders, and its payload is served from them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('store round trips of a mutation', (target) => {
  let server: TestServer;
  let admin: string;
  let member: { id: string; token: string };

  beforeAll(async () => {
    server = await startTestServer({ target });
    admin = await server.token('root', { admin: true });
    const input = aUser();
    const res = await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input }, admin);
    member = { id: res.data!.createUser.user.id, token: await server.token(input.username) };
  });
  afterAll(() => server.close());

  async function roundTrips(query: string, variables: Record<string, unknown>, token: string): Promise<number> {
    const res = await server.gql(query, variables, token);
    expect(res.errors).toBeUndefined();
    if (process.env.PRINT_ROUND_TRIPS) console.log(`${Object.keys(res.data!)[0]}: ${res.extensions?.storeRoundTrips} round trips`);
    return res.extensions!.storeRoundTrips!;
  }

  describe('store round trips of a mutation', () => {
    it('acceptMeeting reads the meeting once', async () => {
      const created = await server.gql(`mutation { createMeeting(input: { title: "Sync" }) { meeting { id } } }`, {}, member.token);
      const meetingId = created.data!.createMeeting.meeting.id;
      const trips = await roundTrips(
        `mutation ($id: ID!) { acceptMeeting(input: { meetingId: $id }) { counted meeting { id title acceptanceCount } } }`,
        { id: meetingId },
        member.token,
      );
      expect(trips).toBe(ROUND_TRIPS.acceptMeeting);
    });

    it('addListItem reads the list once', async () => {
      const created = await server.gql(`mutation { createList(input: { title: "Errands" }) { list { id } } }`, {}, member.token);
      const listId = created.data!.createList.list.id;
      const trips = await roundTrips(
        `mutation ($id: ID!) { addListItem(input: { listId: $id, label: "milk" }) { item { id label list { id title } } } }`,
        { id: listId },
        member.token,
      );
      expect(trips).toBe(ROUND_TRIPS.addListItem);
    });

    it('suspendUser reads the user once', async () => {
      const trips = await roundTrips(
        `mutation ($id: ID!) { suspendUser(input: { userId: $id, reason: "spam" }) { suspension { reason user { id username } } } }`,
        { id: member.id },
        admin,
      );
      expect(trips).toBe(ROUND_TRIPS.suspendUser);
    });
  });
});

/**
 * Before the features read through the request's loaders these were 7, 6 and 11: the
 * meeting, the list and the user were each read twice (once by the feature, once for
 * the payload). suspendUser was 10 while the bucket registration was confirmed after
 * the sorted-set row (a step and its log write), when emptied buckets were pruned; it is
 * now 11, as the last step confirms the lookup (read its write time, write the
 * confirmation, and the step's log write) so reads never show an unfinished suspension.
 * It is 13 since the bucket registry shrinks (features/bucket-registry.ts): the bucket
 * is registered by a read and, in a new bucket, an insert-if-not-exists (one upsert
 * before), and its entry is read again before the confirmation.
 * It is 14 since live connections: the confirmation step then announces the suspension
 * to the change log (a logged batch of its own: the confirmation is a conditional
 * write, which no batch across partitions may hold).
 * acceptMeeting was 6 while a count was one counter row; it grew by one for the user's
 * `User.meetings` lookup row, written before the acceptance so that no acceptance is
 * ever unreachable, and by one more as the count became the settled count plus the
 * counter windows after it (two reads), exact on many servers; it is 7 since the count
 * is a connection count, its settlement and open windows read in one `getMany`. It is
 * 8 since writes are ordered across servers (docs/how-it-works.md, "Ordering writes
 * across servers"): the acceptance is read before it is written, so a repeat made after
 * it was acknowledged, on a server whose clock is behind, writes nothing.
 * addListItem is 6 for the same reason: a list's transaction ids go above its newest
 * transaction, which the read placing the item finds; a list with no transaction rows
 * (a new one, as here, or one whose log was all cut) has its mark read too.
 */
const ROUND_TRIPS = { acceptMeeting: 8, addListItem: 6, suspendUser: 14 };
