/**
 * A server that cannot renew its presence within its lease stops acting as its clock
 * node: its writes are refused (UNAVAILABLE, nothing changed), its background jobs and
 * saga recovery skip their passes, /readyz answers 503 with the reason, and a saga it
 * was running stops before its next write and is left to recovery. It takes its node
 * back when its row is still there or free, under a new lease (what began under the
 * old one stays stopped), and gives up for good when another process holds the node.
 * The store fails the presence's calls (FaultyStore); the lease's time is moved.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  LeaseGuardedStore,
  PRESENCE_LEASE_MS,
  PRESENCE_TTL_SECONDS,
  Presence,
  PresenceLapsedError,
  presenceTable,
} from '../../src/background/presence.js';
import { aUser } from '../../src/features/users/user-mother.js';
import type { Store } from '../../src/store/port.js';
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';
import { READINESS_CACHE_MS } from '../../src/transport/http-server.js';
import { FaultyStore } from '../support/faulty-store.js';
import { waitFor } from '../support/live-client.js';
import { describeEachStore, type StoreUnderTest } from '../support/stores.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

/** A time the test moves: the machine's plus an offset, or standing still (`frozen`). */
function movableTime(frozen = false) {
  let offset = 0;
  const start = Date.now();
  return { now: () => (frozen ? start : Date.now()) + offset, advance: (ms: number) => void (offset += ms) };
}

/** A user created through the API by their own token, and its id. */
async function createdUser(server: TestServer): Promise<string> {
  const input = aUser();
  const res = await server.gql(CREATE_USER, { input }, await server.token(input.username));
  return res.data!.createUser.user.id as string;
}

const isPresence = (call: StoreCall) => call.table === presenceTable.name;

describeEachStore('the presence lease', (target) => {
  const subjects: StoreUnderTest[] = [];
  afterEach(async () => {
    for (const s of subjects.splice(0)) await s.dispose();
  });
  async function aStore(): Promise<Store> {
    const subject = await target.create();
    subjects.push(subject);
    await subject.store.ensureTables([presenceTable]);
    return subject.store;
  }

  it('lapses when not renewed within PRESENCE_LEASE_MS, refuses writes until renewed, and starts a new lease', async () => {
    const base = await aStore();
    const store = new FaultyStore(base);
    const time = movableTime(true);
    const presence = await Presence.claim(store, 'a', { now: time.now });
    const guarded = new LeaseGuardedStore(base, () => presence.holds());
    const first = presence.lease();
    expect([presence.holds(), first.held(), presence.status()]).toEqual([true, true, null]);
    // The store refuses the renewals: the lease holds until PRESENCE_LEASE_MS after the last one.
    store.failWhen(isPresence);
    await expect(presence.renew()).rejects.toThrow(/injected fault/);
    time.advance(PRESENCE_LEASE_MS - 1);
    expect(presence.holds()).toBe(true);
    time.advance(1);
    expect([presence.holds(), first.held()]).toEqual([false, false]);
    expect(presence.status()).toMatch(/^this server has not renewed its presence \(clock node \d+\) for 8 s: its writes, background jobs and saga recovery are paused/);
    await expect(guarded.upsert(presenceTable, { node: 99, process_id: randomUUID(), instance: 'x' })).rejects.toBeInstanceOf(PresenceLapsedError);
    expect(await guarded.get(presenceTable, { node: presence.identity.node })).toMatchObject({ process_id: presence.identity.processId });
    // The store answers again: the row is still ours, the node is held again, under a new lease.
    store.heal();
    expect(await presence.renew()).toBe(true);
    expect([presence.holds(), first.held(), presence.lease().held(), presence.status()]).toEqual([true, false, true, null]);
    await guarded.upsert(presenceTable, { node: 99, process_id: randomUUID(), instance: 'x' });
  });

  it('takes its node back when its row expired and nobody claimed it', async () => {
    const store = await aStore();
    const time = movableTime();
    const presence = await Presence.claim(store, 'a', { now: time.now });
    const { node, processId } = presence.identity;
    const before = presence.lease();
    // Silent past the TTL: the row is gone.
    time.advance(PRESENCE_TTL_SECONDS * 1000);
    expect(await store.deleteIf(presenceTable, { node }, { process_id: processId })).toBe(true);
    expect(await presence.renew()).toBe(true);
    expect(await store.get(presenceTable, { node })).toMatchObject({ process_id: processId, instance: 'a' });
    expect([presence.holds(), before.held()]).toEqual([true, false]);
  });

  it('gives its node up for good, and says so once, when another process holds it', async () => {
    const store = await aStore();
    const time = movableTime();
    let lost = 0;
    const presence = await Presence.claim(store, 'a', { now: time.now, onLost: () => lost++ });
    const { node, processId } = presence.identity;
    time.advance(PRESENCE_TTL_SECONDS * 1000);
    await store.deleteIf(presenceTable, { node }, { process_id: processId });
    const other = randomUUID();
    expect((await store.insertIfNotExists(presenceTable, { node, process_id: other, instance: 'b' }, { ttl: PRESENCE_TTL_SECONDS })).applied).toBe(true);
    expect(await presence.renew()).toBe(false);
    expect(await presence.renew()).toBe(false);
    expect(lost).toBe(1);
    expect(presence.holds()).toBe(false);
    expect(presence.status()).toBe(`another process holds this server's clock node ${node}: it no longer acts on the cluster; restart it`);
    // The other process's row is left alone: two live processes never share the node.
    expect(await store.get(presenceTable, { node })).toMatchObject({ process_id: other, instance: 'b' });
  });
});

/** Holds the first call `rule` matches until released (a write stuck in flight while the process is paused). */
class HoldingStore extends StoreDecorator {
  private rule: ((call: StoreCall) => boolean) | null = null;
  private held: (() => void) | null = null;
  private arrived: (() => void) | null = null;

  /** Hold the next call `rule` matches; resolves once it arrived. */
  holdNext(rule: (call: StoreCall) => boolean): Promise<void> {
    this.rule = rule;
    return new Promise((resolve) => (this.arrived = resolve));
  }

  release(): void {
    this.held?.();
  }

  protected async around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    if (this.rule?.(call)) {
      this.rule = null;
      await new Promise<void>((resolve) => {
        this.held = resolve;
        this.arrived?.();
      });
    }
    return run();
  }
}

const SUSPEND = `mutation ($i: SuspendUserInput!) { suspendUser(input: $i) { suspension { reason } } }`;
const CREATE_USER = `mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`;
const SUSPENSION_OF = `query ($id: ID!) { node(id: $id) { ... on User { suspension { reason } } } }`;

describeEachStore('a server whose presence lapsed', (target) => {
  const servers: TestServer[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
  });

  it('answers 503 at /readyz, refuses writes, pauses its background jobs and saga recovery, and resumes once it holds its node again', async () => {
    const time = movableTime();
    let faulty!: FaultyStore;
    const server = await startTestServer({
      target,
      wrap: (store) => (faulty = new FaultyStore(store)),
      now: time.now,
      env: { LIST_APPLIER_INTERVAL_MS: '50' },
    });
    servers.push(server);
    const readyz = server.url.replace(/\/graphql$/, '/readyz');
    const admin = await server.token('root', { admin: true });
    const userId = await createdUser(server);
    expect((await fetch(readyz)).status).toBe(200);
    // The background jobs call the store on their own (the list applier every 50 ms).
    const jobCalls = () => faulty.calls.filter((c) => !isPresence(c)).length;
    const before = jobCalls();
    await waitFor(() => jobCalls() > before, 2_000, 'a background pass');

    faulty.failWhen(isPresence);
    time.advance(PRESENCE_LEASE_MS);
    // /readyz answers from a result at most READINESS_CACHE_MS old: the lapse shows once the last one ages out.
    await new Promise((resolve) => setTimeout(resolve, READINESS_CACHE_MS));
    const res = await fetch(readyz);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: 'unavailable', reason: expect.stringMatching(/^this server has not renewed its presence \(clock node \d+\)/) });
    const snapshot = await server.dump();
    const refused = await server.gql(SUSPEND, { i: { userId, reason: 'spam' } }, admin);
    expect(refused.errors).toEqual([
      { message: 'This server is not serving writes right now (it is rejoining its cluster); retry the request', path: ['suspendUser'], locations: expect.anything(), extensions: { code: 'UNAVAILABLE' } },
    ]);
    const another = aUser();
    const created = await server.gql(CREATE_USER, { input: another }, await server.token(another.username));
    expect(created.errors?.[0]?.extensions?.code).toBe('UNAVAILABLE');
    expect(await server.dump()).toEqual(snapshot);
    // Reads are still served.
    expect((await server.gql(SUSPENSION_OF, { id: userId })).data).toEqual({ node: { suspension: null } });
    // Background jobs and recovery skip their passes: no call reaches the store but the presence's.
    const paused = jobCalls();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(jobCalls()).toBe(paused);
    expect(await server.app.recoverSagas()).toEqual({ rolledForward: 0, rolledBack: 0, failed: 0, skipped: 0 });

    // The store answers the presence again: its next renewal (every 3 s) takes the node back.
    faulty.heal();
    for (let i = 0; i < 100 && (await fetch(readyz)).status !== 200; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await fetch(readyz)).status).toBe(200);
    expect((await server.gql(SUSPEND, { i: { userId, reason: 'spam' } }, admin)).data).toEqual({ suspendUser: { suspension: { reason: 'spam' } } });
    await waitFor(() => jobCalls() > paused + 5, 2_000, 'background passes again');
  });

  it('stops a saga it was running at its next write once the lease lapsed, even after taking the node back, and leaves it to recovery', async () => {
    const time = movableTime();
    let holding!: HoldingStore;
    const server = await startTestServer({ target, wrap: (store) => (holding = new HoldingStore(store)), now: time.now, env: { LIST_APPLIER: 'false' } });
    servers.push(server);
    const admin = await server.token('root', { admin: true });
    const userId = await createdUser(server);
    // The saga's first step is in flight when the process is paused past its lease…
    const arrived = holding.holdNext((call) => call.operation === 'insertIfNotExists' && call.table === 'suspended_users');
    const answer = server.gql(SUSPEND, { i: { userId, reason: 'spam' } }, admin);
    await arrived;
    time.advance(PRESENCE_LEASE_MS);
    // …and takes its node back (its row was still there) before the step returns.
    const readyz = server.url.replace(/\/graphql$/, '/readyz');
    for (let i = 0; i < 100 && (await fetch(readyz)).status !== 200; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await fetch(readyz)).status).toBe(200);
    holding.release();
    const res = await answer;
    expect(res.errors?.[0]).toMatchObject({ message: 'suspendUser could not be completed; it will be finished or rolled back automatically.', extensions: { code: 'UNAVAILABLE' } });
    // Left open, as after a crash: the next recovery pass (under the new lease) rolls it back.
    expect(await server.app.recoverSagas()).toMatchObject({ rolledBack: 1, failed: 0 });
    expect((await server.gql(SUSPENSION_OF, { id: userId })).data).toEqual({ node: { suspension: null } });
    expect((await server.gql(SUSPEND, { i: { userId, reason: 'spam' } }, admin)).data).toEqual({ suspendUser: { suspension: { reason: 'spam' } } });
  });
});
