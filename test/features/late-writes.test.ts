/**
 * Writes that land after the late-write window (#35), found by the trailing passes:
 * posts created and deleted, a list item added, a suspension lifted, an acceptance, and
 * a rename, each in a batch the
 * caller was told timed out and that lands once its window was settled, swept and cut
 * (`OutcomeFaultStore`, 'timeout-then-applied'). Before the trailing passes the count,
 * the list and the name index are wrong; after them the counts (and the offset pages
 * read through the counted index) are exact, the item is in its list, and the name
 * index finds the new name only; a second pass, on either server, changes nothing. And
 * a verifier that read a count before a trailing pass and writes its settlement after
 * the full one cannot leave it wrong (the bound the late change raised is above it).
 */
import { afterEach, expect, it } from 'vitest';
import { createListApplier } from '../../src/composition-root.js';
import { nameEntriesOf } from '../../src/features/directory/name-index.js';
import { itemsCountKey } from '../../src/features/lists/lists.js';
import { acceptanceCountKey } from '../../src/features/meetings/meetings.js';
import { meetingUsersTable } from '../../src/features/meetings/meetings-tables.js';
import { SUSPENSIONS_COUNT_KEY } from '../../src/features/suspensions/suspension-sagas.js';
import { usersByStatusTable } from '../../src/features/suspensions/suspensions-tables.js';
import { postsCountKey } from '../../src/features/timeline/timeline.js';
import { timelineTable } from '../../src/features/timeline/timeline-tables.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { JOB_WINDOW_MS } from '../../src/background/windowed-job.js';
import { connectionCountsTable } from '../../src/counts/count-tables.js';
import type { WriteOptions } from '../../src/store/port.js';
import type { ClusterSettings } from '../../src/config.js';
import { HEAD_SLOT } from '../../src/counts/count-tables.js';
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';
import type { Row, TableSpec } from '../../src/store/table.js';
import { OutcomeFaultStore } from '../support/faulty-store.js';
import { CLUSTER, twoServers } from '../support/count-servers.js';
import { describeEachStore, StorePool } from '../support/stores.js';

const HOUR_MS = 3_600_000;
/** Trailing passes on a real timer, every 20 ms, over the last hour (as LATE_WRITE_PASSES=3600/… would, faster). */
const TIMED: ClusterSettings = { ...CLUSTER, latePasses: [{ horizonMs: HOUR_MS, intervalMs: 20 }] };

/** Poll `done` every few ms until it holds, or fail after `timeoutMs` of real time naming `what`. */
async function waitFor(what: string, done: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !(await done()); ) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Holds the next write of a count's settlement (its head) until released: a verifier slow to write. */
class SettlementGate extends StoreDecorator {
  private armed = false;
  private held: (() => void) | null = null;

  /** Hold the next settlement written. */
  arm(): void {
    this.armed = true;
  }

  /** Let the held settlement go on (it lands now). */
  release(): void {
    this.held?.();
    this.held = null;
  }

  get holding(): boolean {
    return this.held !== null;
  }

  override async upsert(table: TableSpec, row: Row, options?: WriteOptions): Promise<void> {
    if (this.armed && table === connectionCountsTable && row.settled_count !== undefined) {
      this.armed = false;
      await new Promise<void>((resolve) => (this.held = resolve));
    }
    return super.upsert(table, row, options);
  }

  protected around<T>(_call: StoreCall, run: () => Promise<T>): Promise<T> {
    return run();
  }
}

/** Two servers over a store whose writes can be held back and landed late. */
async function lateWorld(pool: StorePool, cluster: ClusterSettings = CLUSTER) {
  const { store: base } = await pool.create();
  const gate = new SettlementGate(base);
  const faults = new OutcomeFaultStore(gate);
  const w = await twoServers(faults, cluster);
  // From the real time on: the store stamps what it is not given a time for with it.
  w.at(Date.now());
  return {
    ...w,
    base,
    faults,
    gate,
    /** Run `write`, whose next batch writing `table` times out now and lands when `land()` is called. */
    async heldBack(table: string, write: () => Promise<unknown>) {
      faults.faultNextWrite('timeout-then-applied', (call) => call.operation === 'batch' && call.tables.includes(table));
      await expect(write()).rejects.toThrow();
      expect(faults.pending).toBe(false);
    },
  };
}

describeEachStore('writes landing after the window', (target) => {
  const pool = new StorePool(target);
  afterEach(() => pool.disposeAll());

  it('settle counts and offset pages exact again once a trailing pass finds posts created and deleted late; a second pass on either server changes nothing', async () => {
    const w = await lateWorld(pool);
    const ctx = w.a.ctx();
    const author = await ctx.users.create(aUser());
    const key = postsCountKey(author.id);
    await ctx.timeline.createPost(author.id, 'kept');
    const doomed = await ctx.timeline.createPost(author.id, 'doomed');
    await w.settle();
    // Two posts and a deletion whose batches time out, on both servers.
    await w.heldBack(timelineTable.name, () => w.a.ctx().timeline.createPost(author.id, 'late one'));
    await w.heldBack(timelineTable.name, () => w.b.ctx().timeline.createPost(author.id, 'late two'));
    await w.heldBack(timelineTable.name, () => w.b.ctx().timeline.deletePost(author.id, doomed));
    await w.settle();
    await w.settle();
    expect(await w.a.read(key)).toBe(2);
    // They land, minutes after their windows were settled: the verifiers alone miss them.
    w.at(w.now() + 5 * 60_000);
    await w.faults.land();
    await w.settle();
    const held = (await w.base.slice(timelineTable, { partition: { user_id: author.id }, limit: 100 })).map((r) => r.post_id as string);
    expect(held).toHaveLength(3);
    expect(await w.a.read(key)).toBe(2);
    // The trailing pass finds the count; the verifiers then settle it in full.
    const first = await w.a.services.countVerifier.runLate(HOUR_MS);
    expect(first.late).toBe(1);
    expect(first.reads).toBeGreaterThan(0);
    await w.settle();
    expect([await w.a.read(key), await w.b.read(key)]).toEqual([3, 3]);
    // Offset pages through the counted index, rebuilt with the count: exact.
    for (const offset of [0, 1, 2, 3]) {
      const page = await w.a.ctx().timeline.posts(author.id, { first: 2, offset });
      expect(page.edges.map((e) => e.node.postId)).toEqual(held.slice(offset, offset + 2));
    }
    // Again, on each server: nothing more is found, and the count stays.
    expect((await w.a.services.countVerifier.runLate(HOUR_MS)).late).toBe(0);
    expect((await w.b.services.countVerifier.runLate(3 * HOUR_MS)).late).toBe(0);
    await w.settle();
    expect(await w.b.read(key)).toBe(3);
  }, target.ddlTimeoutMs);

  it('keep a count exact when a verifier that missed the late change writes its settlement after the full one', async () => {
    const w = await lateWorld(pool);
    const author = await w.a.ctx().users.create(aUser());
    const key = postsCountKey(author.id);
    await w.a.ctx().timeline.createPost(author.id, 'first');
    await w.settle();
    await w.heldBack(timelineTable.name, () => w.a.ctx().timeline.createPost(author.id, 'late'));
    // A post after it, settled: the count's settlement passes the late one's window.
    await w.a.ctx().timeline.createPost(author.id, 'between');
    await w.settle();
    w.at(w.now() + 5 * 60_000);
    await w.faults.land();
    await w.settle();
    // Another post, in time; the second server's verifier settles it without the late
    // one (it read the head before the trailing pass) and is slow to write. Its clock,
    // 400 ms ahead, is made to close one window more than the first server's.
    await w.b.ctx().timeline.createPost(author.id, 'in time');
    w.closeWindows();
    const t = w.now();
    w.at(t - (t % JOB_WINDOW_MS) + JOB_WINDOW_MS + 2_800);
    w.gate.arm();
    const slow = w.b.services.countVerifier.runOnce();
    while (!w.gate.holding) await new Promise((resolve) => setTimeout(resolve, 1));
    expect((await w.a.services.countVerifier.runLate(HOUR_MS)).late).toBe(1);
    // The first server settles in full at once, through a bound below the slow one's.
    await w.a.services.countVerifier.runOnce();
    expect(await w.a.read(key)).toBe(4);
    // The slow settlement (3) lands last and wins for now; it lies below the bound the
    // late change raised, so the next passes settle in full again, past it.
    w.gate.release();
    await slow;
    await w.settle();
    expect([await w.a.read(key), await w.b.read(key)]).toEqual([4, 4]);
    await w.b.ctx().timeline.createPost(author.id, 'after');
    await w.settle();
    expect([await w.a.read(key), await w.b.read(key)]).toEqual([5, 5]);
  }, target.ddlTimeoutMs);

  it('apply a list item whose append landed behind the applier\'s cut, with its list counted exactly', async () => {
    const w = await lateWorld(pool);
    const ctx = w.a.ctx();
    const owner = await ctx.users.create(aUser());
    const list = await ctx.lists.create('Late', owner.id);
    const applier = createListApplier({ ...w.a.services, cluster: CLUSTER });
    const labels = async () => (await w.a.ctx().lists.items(list.listId, { first: 10 })).edges.map((e) => e.node.label);
    await ctx.lists.add(list.listId, 'first');
    w.at(w.now() + 1_000);
    await w.heldBack('list_transactions', () => w.a.ctx().lists.add(list.listId, 'late'));
    w.at(w.now() + 1_000);
    await w.b.ctx().lists.add(list.listId, 'third');
    // The applier applies and cuts past the late item's id (two passes: its trailing
    // job's progress first), and the verifiers settle.
    await w.settle();
    await applier.runOnce();
    await w.settle();
    await applier.runOnce();
    expect(await labels()).toEqual(['first', 'third']);
    w.at(w.now() + 5 * 60_000);
    await w.faults.land();
    await applier.runOnce();
    await w.settle();
    // Landed below the cut: no reader sees it, the count still says two.
    expect(await labels()).toEqual(['first', 'third']);
    expect(await w.a.read(itemsCountKey(list.listId))).toBe(2);
    const found = await applier.runLate(HOUR_MS);
    expect(found.late).toBe(1);
    expect(applier.lateApplied).toBe(1);
    await w.a.services.countVerifier.runLate(HOUR_MS);
    await w.settle();
    expect(await labels()).toEqual(['first', 'late', 'third']);
    expect([await w.a.read(itemsCountKey(list.listId)), await w.b.read(itemsCountKey(list.listId))]).toEqual([3, 3]);
    // Another applier's pass over the longest horizon finds nothing more to apply.
    const other = createListApplier({ ...w.b.services, cluster: CLUSTER });
    expect((await other.runLate(3 * HOUR_MS)).late).toBe(0);
    expect((await applier.runLate(HOUR_MS)).late).toBe(0);
    expect(await labels()).toEqual(['first', 'late', 'third']);
  }, target.ddlTimeoutMs);

  it('count a list\'s only item whose whole append landed late, while the other server kept settling the list', async () => {
    const w = await lateWorld(pool);
    const owner = await w.b.ctx().users.create(aUser());
    const list = await w.b.ctx().lists.create('Held', owner.id);
    const applier = createListApplier({ ...w.b.services, cluster: CLUSTER });
    const key = itemsCountKey(list.listId);
    await w.heldBack('list_transactions', () => w.a.ctx().lists.add(list.listId, 'held'));
    // The other server settles past the item's window before it lands.
    for (let i = 0; i < 3; i++) {
      w.at(w.now() + 5_000);
      await w.settle();
      await applier.runOnce();
    }
    expect([await w.a.read(key), await w.b.read(key)]).toEqual([0, 0]);
    w.at(w.now() + 8_000);
    await w.faults.land();
    expect((await applier.runLate(HOUR_MS)).late).toBe(1);
    expect((await w.b.services.countVerifier.runLate(HOUR_MS)).late).toBe(1);
    w.at(w.now() + 10_000);
    await w.settle();
    await applier.runOnce();
    const items = await w.b.ctx().lists.items(list.listId, { first: 10 });
    expect(items.edges.map((e) => e.node.label)).toEqual(['held']);
    expect([await w.a.read(key), await w.b.read(key)]).toEqual([1, 1]);
  }, target.ddlTimeoutMs);

  it('count a list\'s only item whose append landed late once the servers\' own timers run the trailing passes, with no metrics listening to them', async () => {
    // The proxy test's ordering (#35): the item's append, its count's event and mark
    // with it, lands after both servers passed its window; only a trailing pass finds it.
    const w = await lateWorld(pool, TIMED);
    const owner = await w.b.ctx().users.create(aUser());
    const list = await w.b.ctx().lists.create('Held', owner.id);
    const appliers = [w.a, w.b].map((server) => createListApplier(server.services));
    const key = itemsCountKey(list.listId);
    await w.heldBack('list_transactions', () => w.a.ctx().lists.add(list.listId, 'held'));
    for (let i = 0; i < 3; i++) {
      w.at(w.now() + 5_000);
      await w.settle();
      for (const applier of appliers) await applier.runOnce();
    }
    w.at(w.now() + 8_000);
    await w.faults.land();
    expect([await w.a.read(key), await w.b.read(key)]).toEqual([0, 0]);
    // Each server's timers as the server starts them (its trailing passes among them),
    // created without metrics: nothing listens to the passes' reports.
    const verifiers = [w.a.services.countVerifier, w.b.services.countVerifier];
    for (const verifier of verifiers) verifier.startTrailing();
    for (const applier of appliers) applier.start(HOUR_MS);
    try {
      await waitFor('a trailing pass to apply the item and mark its count for a full settlement', async () => {
        const head = await w.base.get(connectionCountsTable, { count_key: key, slot: HEAD_SLOT });
        return appliers[0]!.lateApplied + appliers[1]!.lateApplied === 1 && head?.redo_through != null;
      });
    } finally {
      for (const verifier of verifiers) verifier.stop();
      for (const applier of appliers) applier.stop();
    }
    w.at(w.now() + 10_000);
    await w.settle();
    for (const applier of appliers) await applier.runOnce();
    const items = await w.a.ctx().lists.items(list.listId, { first: 10 });
    expect(items.edges.map((e) => e.node.label)).toEqual(['held']);
    expect([await w.a.read(key), await w.b.read(key)]).toEqual([1, 1]);
  }, target.ddlTimeoutMs);

  it('count exactly a suspension lifted and an acceptance whose batches landed late', async () => {
    const w = await lateWorld(pool);
    const ctx = w.a.ctx();
    const [held, other, guest] = [await ctx.users.create(aUser()), await ctx.users.create(aUser()), await ctx.users.create(aUser())];
    const meeting = await ctx.meetings.create({ title: 'Late' }, guest.id);
    await ctx.suspensions.suspend({ userId: held.id, reason: 'spam' });
    await ctx.suspensions.suspend({ userId: other.id, reason: 'spam' });
    await w.settle();
    // The lifting's batch (row, change and count) and the acceptance's time out, and land later.
    await w.heldBack(usersByStatusTable.name, () => w.b.ctx().suspensions.unsuspend(held.id));
    await w.heldBack(meetingUsersTable.name, () => w.a.ctx().meetings.accept(meeting.meetingId, guest.id));
    await w.settle();
    await w.settle();
    w.at(w.now() + 5 * 60_000);
    await w.faults.land();
    await w.settle();
    const shown = async () => ({
      suspended: (await w.a.ctx().suspensions.page({ first: 10 })).edges.length,
      acceptors: (await w.a.ctx().meetings.acceptedBy(meeting.meetingId, { first: 10 })).edges.length,
    });
    const counted = async (server: typeof w.a) => ({ suspended: await server.read(SUSPENSIONS_COUNT_KEY), acceptors: await server.read(acceptanceCountKey(meeting.meetingId)) });
    const truth = await shown();
    expect(truth).toEqual({ suspended: 1, acceptors: 1 });
    // The verifiers had settled both windows before they landed: the counts miss them.
    expect(await counted(w.a)).toEqual({ suspended: 2, acceptors: 0 });
    expect((await w.b.services.countVerifier.runLate(HOUR_MS)).late).toBeGreaterThanOrEqual(1);
    await w.settle();
    expect([await counted(w.a), await counted(w.b)]).toEqual([truth, truth]);
    expect(await shown()).toEqual(truth);
    expect((await w.a.services.countVerifier.runLate(3 * HOUR_MS)).late).toBe(0);
    await w.settle();
    expect(await counted(w.a)).toEqual(truth);
  }, target.ddlTimeoutMs);

  it('sweep a rename that landed late, after a newer one, out of the name index', async () => {
    const w = await lateWorld(pool);
    const ctx = w.a.ctx();
    const user = await ctx.users.create({ ...aUser(), firstName: 'Ada', lastName: 'Byron' });
    const found = async (query: string) => (await w.b.ctx().directory.byName(query, { first: 5 })).edges.map((e) => e.node.userId);
    /** The last names of the versions the user's entries table lists, oldest first. */
    const lastNames = async () => (await nameEntriesOf(w.base, user.id)).map((e) => (JSON.parse(e.value) as { lastName: string }).lastName);
    w.at(w.now() + 1_000);
    // A rename whose batch lands late, after a newer rename went through.
    await w.heldBack('user_name_index', () => w.a.ctx().users.update(user.id, { lastName: 'Lovelace' }));
    w.at(w.now() + 1_000);
    await w.b.ctx().users.update(user.id, { lastName: 'Babbage' });
    await w.a.services.nameSweeper.runOnce();
    w.closeWindows();
    await w.a.services.nameSweeper.runOnce();
    await w.b.services.nameSweeper.runOnce();
    w.at(w.now() + 5 * 60_000);
    await w.faults.land();
    await w.a.services.nameSweeper.runOnce();
    await w.b.services.nameSweeper.runOnce();
    // Its entries stay beside the newer ones: the sweepers passed its window before it landed.
    expect(await lastNames()).toEqual(['Lovelace', 'Babbage']);
    const late = await w.b.services.nameSweeper.runLate(HOUR_MS);
    expect(late.late).toBe(1);
    expect(await lastNames()).toEqual(['Babbage']);
    expect(await found('lovelace')).toEqual([]);
    expect(await found('babbage')).toEqual([user.id]);
    expect((await w.a.services.nameSweeper.runLate(3 * HOUR_MS)).late).toBe(0);
    expect(await lastNames()).toEqual(['Babbage']);
    expect(await found('babbage')).toEqual([user.id]);
  }, target.ddlTimeoutMs);
});
