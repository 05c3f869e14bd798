/**
 * `meetingChanged` and `suspensionsChanged` over a real WebSocket, on every store: each
 * acceptor arrives once however often and concurrently they accept, with the meeting's
 * count after it and an edge of `Meeting.acceptedBy`; suspensions and unsuspensions
 * arrive in order, for admins only.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { liveClient, waitFor, type LiveClient } from '../support/live-client.js';
import { describeEachStore } from '../support/stores.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const CREATE_USER = `mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id username } } }`;
const ACCEPT = `mutation ($id: ID!) { acceptMeeting(input: { meetingId: $id }) { counted } }`;
const ACCEPTED_BY = `query ($id: ID!) { node(id: $id) { ... on Meeting { acceptedBy(first: 50) { edges { cursor node { username } } } } } }`;
const MEETING_CHANGED = `subscription ($meetingId: ID!, $after: String) {
  meetingChanged(meetingId: $meetingId, after: $after) {
    cursor
    meeting { title acceptanceCount }
    acceptedEdge { cursor node { username } }
  }
}`;
const SUSPENSIONS_CHANGED = `subscription ($after: String) {
  suspensionsChanged(after: $after) {
    cursor
    addedEdge { cursor node { reason user { username } } }
    unsuspendedUserId
  }
}`;
const SUSPENDED = `query { suspendedUsers(first: 50) { edges { cursor node { user { username } } } } }`;

interface MeetingChange {
  meetingChanged: { cursor: string; meeting: { title: string; acceptanceCount: number }; acceptedEdge: { cursor: string; node: { username: string } } };
}
interface SuspensionsChange {
  suspensionsChanged: { cursor: string; addedEdge: { cursor: string; node: { reason: string; user: { username: string } } } | null; unsuspendedUserId: string | null };
}

describeEachStore('meetingChanged and suspensionsChanged over WebSocket', (target) => {
  let server: TestServer;
  let admin: string;
  const users: Array<{ id: string; username: string; token: string }> = [];
  const clients: LiveClient[] = [];
  const connect = (token?: string) => {
    const c = liveClient(server.url, { token });
    clients.push(c);
    return c;
  };
  const subscribed = (n: number) => waitFor(() => server.app.services.live.subscriptions === n, 5_000, `${n} subscriptions`);

  beforeAll(async () => {
    // One process, one clock: a subscription starts exactly now.
    server = await startTestServer({ target, env: { LIVE_POLL_MS: '50', CLOCK_SKEW_MS: '0' } });
    admin = await server.token('root', { admin: true });
    for (let i = 0; i < 3; i++) {
      const input = aUser();
      const created = await server.gql(CREATE_USER, { input }, admin);
      users.push({ ...created.data!.createUser.user, token: await server.token(input.username) });
    }
  });
  afterAll(async () => {
    for (const c of clients) await c.dispose();
    await server.close();
  });

  it('delivers each acceptor once, however often and concurrently they accept, with the count after it', async () => {
    const created = await server.gql(`mutation { createMeeting(input: { title: "Standup" }) { meeting { id } } }`, {}, users[0]!.token);
    const meetingId = created.data!.createMeeting.meeting.id as string;
    const sub = connect().subscribe<MeetingChange>(MEETING_CHANGED, { meetingId });
    await subscribed(1);
    // The second user accepts three times at once, the others once.
    await Promise.all([users[1], users[1], users[1]].map((u) => server.gql(ACCEPT, { id: meetingId }, u!.token)));
    await server.gql(ACCEPT, { id: meetingId }, users[0]!.token);
    await server.gql(ACCEPT, { id: meetingId }, users[2]!.token);

    const changes = (await sub.next(3)).map((c) => c.meetingChanged);
    expect(changes.map((c) => c.acceptedEdge.node.username)).toEqual([users[1]!.username, users[0]!.username, users[2]!.username]);
    expect(changes[2]!.meeting).toEqual({ title: 'Standup', acceptanceCount: 3 });
    for (const [i, c] of changes.entries()) expect(c.meeting.acceptanceCount).toBeGreaterThanOrEqual(i + 1);
    const page = await server.gql(ACCEPTED_BY, { id: meetingId });
    const cursors = new Map(page.data!.node.acceptedBy.edges.map((e: { cursor: string; node: { username: string } }) => [e.node.username, e.cursor]));
    for (const c of changes) expect(c.acceptedEdge.cursor).toBe(cursors.get(c.acceptedEdge.node.username));
    // A repeat acceptance changes nothing, and announces nothing.
    await server.gql(ACCEPT, { id: meetingId }, users[0]!.token);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(sub.values).toHaveLength(3);
    sub.stop();
    await subscribed(0);
  });

  it('delivers suspensions and their lifting in order to admins, as edges of suspendedUsers', async () => {
    const sub = connect(admin).subscribe<SuspensionsChange>(SUSPENSIONS_CHANGED);
    await subscribed(1);
    const target = users[2]!;
    await server.gql(`mutation ($id: ID!) { suspendUser(input: { userId: $id, reason: "spam" }) { suspension { reason } } }`, { id: target.id }, admin);
    const page = await server.gql(SUSPENDED, {}, admin);
    await server.gql(`mutation ($id: ID!) { unsuspendUser(input: { userId: $id }) { user { id } } }`, { id: target.id }, admin);
    const [added, lifted] = (await sub.next(2)).map((c) => c.suspensionsChanged);
    expect(added!.addedEdge!.node).toEqual({ reason: 'spam', user: { username: target.username } });
    expect(added!.addedEdge!.cursor).toBe(page.data!.suspendedUsers.edges.find((e: { node: { user: { username: string } } }) => e.node.user.username === target.username).cursor);
    expect(lifted).toMatchObject({ addedEdge: null, unsuspendedUserId: target.id });
    sub.stop();
    await subscribed(0);
  });

  it('refuses suspensionsChanged to a member (FORBIDDEN) and to an anonymous socket, and keeps serving the socket', async () => {
    const member = connect(users[0]!.token);
    const refused = member.subscribe(SUSPENSIONS_CHANGED);
    await refused.ended();
    expect(refused.errors[0]).toMatchObject({ extensions: { code: 'FORBIDDEN' } });
    const anonymous = connect().subscribe(SUSPENSIONS_CHANGED);
    await anonymous.ended();
    expect(anonymous.errors[0]).toMatchObject({ extensions: { code: 'UNAUTHENTICATED' } });
    // The member's socket still serves what the member may see.
    const created = await server.gql(`mutation { createMeeting(input: { title: "After" }) { meeting { id } } }`, {}, users[0]!.token);
    const meetingId = created.data!.createMeeting.meeting.id as string;
    const ok = member.subscribe<MeetingChange>(MEETING_CHANGED, { meetingId });
    await subscribed(1);
    await server.gql(ACCEPT, { id: meetingId }, users[1]!.token);
    expect((await ok.next(1))[0]!.meetingChanged.acceptedEdge.node.username).toBe(users[1]!.username);
    ok.stop();
  });
});
