/**
 * Two real server processes on one SQLite file, one with its clock 300 ms behind (a
 * test-only entry shifts its time, as `faketime` would): a username claimed from both
 * at once is won exactly once; acceptances made on both settle exact within the settle
 * window, with no one calling reconcileMeeting; a suspension made on the skewed server
 * while the other empties the same bucket is always listed.
 *
 * With TWO_SERVERS_FAKETIME=1 the skewed server instead runs the plain entry under
 * Debian's libfaketime (`apt-get install faketime`), for a check by hand; CI needs
 * nothing but Node.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB_WINDOW_MS } from '../../src/background/windowed-job.js';
import { authKey, signToken } from '../../src/graphql/auth.js';
import { startChildServer, type ChildServer } from '../support/child-server.js';
import { liveClient } from '../support/live-client.js';
import { TEST_AUTH_SECRET } from '../support/test-server.js';

const SKEWED = 'test/support/skewed-main.ts';
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
const CLUSTER = { CLOCK_SKEW_MS: '1000', STORE_WRITE_TIMEOUT_MS: '2000' };
/** Window + skew + write timeout + one verifier interval (the window), and a margin. */
const SETTLE_MS = JOB_WINDOW_MS + 1_000 + 2_000 + JOB_WINDOW_MS + 4_000;

const dir = mkdtempSync(join(tmpdir(), 'two-servers-'));
const file = join(dir, 'app.db');
let a: ChildServer;
let b: ChildServer;
let admin: string;

async function gql(server: ChildServer, query: string, variables: Record<string, unknown>, token: string) {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return (await res.json()) as { data?: any; errors?: Array<{ message: string; extensions?: { code?: string } }> };
}

/** The error lines both servers logged, for a failure message. */
function serverErrors(): string {
  return [a, b].flatMap((s) => s.output().split('\n').filter((line) => /"level":5\d|error/i.test(line)).slice(-5)).join('\n');
}

const CREATE_USER = `mutation ($i: CreateUserInput!) { createUser(input: $i) { user { id } } }`;

async function createUser(server: ChildServer, username: string) {
  return gql(server, CREATE_USER, { i: { username, displayName: username } }, admin);
}

beforeAll(async () => {
  admin = await signToken(authKey(TEST_AUTH_SECRET), 'root', { admin: true });
  a = await startChildServer(file, { ...CLUSTER, INSTANCE_ID: 'server-a', TEST_CLOCK_OFFSET_MS: '0' }, SKEWED);
  if (process.env.TWO_SERVERS_FAKETIME === '1') {
    if (!existsSync(LIBFAKETIME)) throw new Error(`TWO_SERVERS_FAKETIME=1 needs ${LIBFAKETIME} (apt-get install faketime)`);
    b = await startChildServer(file, { ...CLUSTER, INSTANCE_ID: 'server-b', LD_PRELOAD: LIBFAKETIME, FAKETIME: '-0.3s' });
  } else {
    b = await startChildServer(file, { ...CLUSTER, INSTANCE_ID: 'server-b', TEST_CLOCK_OFFSET_MS: '-300' }, SKEWED);
  }
}, 60_000);

afterAll(async () => {
  for (const s of [a, b]) {
    s?.process.kill('SIGTERM');
    await s?.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('two servers on one store, one clock 300 ms behind', () => {
  it('give a username claimed from both at once to exactly one of them', async () => {
    let won = 0;
    for (let i = 0; i < 20; i++) {
      const name = `twin_${i}`;
      const [fromA, fromB] = await Promise.all([createUser(a, name), createUser(b, name)]);
      const ok = [fromA, fromB].filter((r) => r.data?.createUser);
      expect(ok, `${name}: ${JSON.stringify([fromA, fromB])}`).toHaveLength(1);
      const codes = [fromA, fromB].flatMap((r) => r.errors?.map((e) => e.extensions?.code) ?? []);
      expect(codes, `${name}: ${JSON.stringify([fromA, fromB])}`).toEqual(['CONFLICT']);
      const seen = await gql(b, `query ($u: String!) { userByUsername(username: $u) { id } }`, { u: name }, admin);
      expect(seen.data.userByUsername.id).toBe(ok[0]!.data.createUser.user.id);
      won++;
    }
    console.log(`[two servers] usernames: 20 claimed from both at once, ${won} won exactly once`);
  }, 30_000);

  it('settle acceptances made on both to the exact count within the settle window', async () => {
    const members: string[] = [];
    for (let i = 0; i < 12; i++) {
      await createUser(a, `acceptor_${i}`);
      members.push(await signToken(authKey(TEST_AUTH_SECRET), `acceptor_${i}`));
    }
    const made = await gql(a, `mutation { createMeeting(input: { title: "both" }) { meeting { id } } }`, {}, members[0]!);
    const meetingId = made.data.createMeeting.meeting.id as string;
    const ACCEPT = `mutation ($i: AcceptMeetingInput!) { acceptMeeting(input: $i) { counted } }`;
    // Every member accepts three times on each server, all at once.
    const burst = await Promise.all(
      members.flatMap((token) => [a, b, a, b, a, b].map((server) => gql(server, ACCEPT, { i: { meetingId } }, token))),
    );
    const failures = burst.flatMap((r) => r.errors ?? []).map((e) => `${e.extensions?.code}: ${e.message}`);
    expect(failures, failures.length > 0 ? serverErrors() : '').toEqual([]);
    const countOn = async (server: ChildServer) =>
      (await gql(server, `query ($id: ID!) { node(id: $id) { ... on Meeting { acceptanceCount } } }`, { id: meetingId }, admin)).data.node
        .acceptanceCount as number;
    const start = Date.now();
    const right = await countOn(a);
    let settledAfter: number | null = null;
    while (settledAfter === null && Date.now() - start < SETTLE_MS + 5_000) {
      if ((await countOn(a)) === 12 && (await countOn(b)) === 12) settledAfter = Date.now() - start;
      else await sleep(250);
    }
    console.log(
      `[two servers] acceptances: 12 users x 6 (3 per server); counted by requests ${burst.filter((r) => r.data.acceptMeeting.counted).length}, ` +
        `count right after ${right}, exact on both after ${settledAfter} ms (settle window ${SETTLE_MS} ms)`,
    );
    expect(settledAfter).not.toBeNull();
    expect(settledAfter!).toBeLessThanOrEqual(SETTLE_MS);
  }, 60_000);

  it('always list a suspension made on the skewed server while the other empties the same bucket', async () => {
    const SUSPEND = `mutation ($i: SuspendUserInput!) { suspendUser(input: $i) { suspension { reason } } }`;
    const UNSUSPEND = `mutation ($i: UnsuspendUserInput!) { unsuspendUser(input: $i) { user { id } } }`;
    const LISTED = `{ suspendedUsers(first: 100) { edges { node { reason } } } }`;
    let listed = 0;
    const rounds = 10;
    for (let i = 0; i < rounds; i++) {
      const x = (await createUser(a, `emptied_${i}`)).data.createUser.user.id;
      const y = (await createUser(a, `skewed_${i}`)).data.createUser.user.id;
      expect((await gql(a, SUSPEND, { i: { userId: x, reason: `x${i}` } }, admin)).errors).toBeUndefined();
      // A empties this month's bucket while B, 300 ms behind, suspends into it.
      const [lifted, suspended] = await Promise.all([
        gql(a, UNSUSPEND, { i: { userId: x } }, admin),
        gql(b, SUSPEND, { i: { userId: y, reason: `y${i}` } }, admin),
      ]);
      expect(lifted.errors, JSON.stringify(lifted.errors)).toBeUndefined();
      expect(suspended.errors).toBeUndefined();
      const reasons = (await gql(a, LISTED, {}, admin)).data.suspendedUsers.edges.map((e: any) => e.node.reason);
      if (reasons.includes(`y${i}`)) listed++;
      await gql(b, UNSUSPEND, { i: { userId: y } }, admin);
    }
    console.log(`[two servers] suspensions: made on the skewed server while the bucket was emptied, listed ${listed} of ${rounds}`);
    expect(listed).toBe(rounds);
  }, 60_000);
  it('stream a timeline written on both to a subscriber of one, and resume on the other after the first stops (SIGTERM)', async () => {
    const author = `live_author`;
    const authorId = (await createUser(a, author)).data.createUser.user.id as string;
    const token = await signToken(authKey(TEST_AUTH_SECRET), author);
    const POST = `mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`;
    const DELETE = `mutation ($id: ID!) { deletePost(input: { id: $id }) { deletedPostId } }`;
    const CHANGES = `subscription ($a: ID!, $after: String) { postsChanged(authorId: $a, after: $after) { cursor addedEdge { node { id content } } deletedPostId } }`;
    type Change = { postsChanged: { cursor: string; addedEdge: { node: { id: string; content: string } } | null; deletedPostId: string | null } };
    const seen: string[] = [];
    const onA = liveClient(a.url);
    const first = onA.subscribe<Change>(CHANGES, { a: authorId });
    // Give the subscription time to be in place on A (its poll interval is the default).
    await sleep(1_500);
    // Posts alternate between the servers; each is deleted on the other one (B's clock is behind).
    const made: string[] = [];
    for (let i = 0; i < 6; i++) {
      const on = i % 2 === 0 ? a : b;
      made.push((await gql(on, POST, { c: `both ${i}` }, token)).data.createPost.post.id);
    }
    await gql(b, DELETE, { id: made[0] }, token);
    await gql(a, DELETE, { id: made[1] }, token);
    const before = await first.next(8, 15_000);
    seen.push(...before.map((c) => c.postsChanged.addedEdge?.node.content ?? `-${made.indexOf(c.postsChanged.deletedPostId!)}`));
    // A stops: its sockets close with 1001; meanwhile B takes more writes.
    a.process.kill('SIGTERM');
    await a.exited;
    await sleep(100);
    expect(onA.closes[0]?.code).toBe(1001);
    await gql(b, POST, { c: 'while away' }, token);
    await gql(b, DELETE, { id: made[2] }, token);
    const onB = liveClient(b.url);
    const resumed = onB.subscribe<Change>(CHANGES, { a: authorId, after: before[before.length - 1]!.postsChanged.cursor });
    const after = await resumed.next(2, 15_000);
    seen.push(...after.map((c) => c.postsChanged.addedEdge?.node.content ?? `-${made.indexOf(c.postsChanged.deletedPostId!)}`));
    await sleep(1_500);
    expect(resumed.values).toHaveLength(2);
    console.log(`[two servers] live: ${seen.join(', ')}`);
    // Every change once; each server's in the order it made them; a post's deletion after
    // its addition. Changes from the two servers may interleave either way (their clocks differ).
    expect([...seen].sort()).toEqual(['-0', '-1', '-2', 'both 0', 'both 1', 'both 2', 'both 3', 'both 4', 'both 5', 'while away']);
    const madeOnA = ['both 0', 'both 2', 'both 4', '-1'];
    const madeOnB = ['both 1', 'both 3', 'both 5', '-0', 'while away', '-2'];
    expect(seen.filter((c) => madeOnA.includes(c))).toEqual(madeOnA);
    expect(seen.filter((c) => madeOnB.includes(c))).toEqual(madeOnB);
    for (const i of [0, 1, 2]) expect(seen.indexOf(`both ${i}`)).toBeLessThan(seen.indexOf(`-${i}`));
    await onA.dispose();
    await onB.dispose();
  }, 60_000);
});
