/**
 * `offset` on a timeline, on every store: once settled, pages from the start, the end
 * and cursors equal the model's slices, with two servers whose clocks differ, posts
 * imported into the middle of the timeline and posts deleted twice; a settlement that
 * crashed between its bucket writes and its head, or that two verifiers ran at once,
 * leaves the counted index exact, though a server read every page before (keeping the
 * index's lists); a page whose lists are kept takes at most 2 waves from a cursor, and
 * one whose kept lists a settlement moved at most 8; a full settlement (a recount)
 * rebuilds the same buckets.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, expect, it } from 'vitest';
import pino from 'pino';
import { ALL_TABLES, createListApplier, createRequestContext, createServices, rankedCounts } from '../../src/composition-root.js';
import { settleFully, settleIncrementally } from '../../src/counts/connection-counts.js';
import { currentEntries, indexKeyOf, packRankList, unpackRankList } from '../../src/counts/count-ranks.js';
import { countRankListsTable } from '../../src/counts/count-tables.js';
import { recountConnections } from '../../src/counts/recount.js';
import { appendTransactions, compareItems, readPendingTransactions, type ListItem } from '../../src/features/lists/ledger.js';
import { itemsCountKey, listMemberships, placementEntry, readListItems } from '../../src/features/lists/lists.js';
import { acceptanceCountKey, acceptanceMemberships, type Acceptance } from '../../src/features/meetings/meetings.js';
import { meetingUsersTable } from '../../src/features/meetings/meetings-tables.js';
import { SUSPENSIONS_COUNT_KEY } from '../../src/features/suspensions/suspension-sagas.js';
import { suspensionMemberships, type Suspension } from '../../src/features/suspensions/suspensions.js';
import { RankCache } from '../../src/paging/ranked-index.js';
import type { PageArgs } from '../../src/paging/types.js';
import { postsCountKey, type Post } from '../../src/features/timeline/timeline.js';
import { timelineTable } from '../../src/features/timeline/timeline-tables.js';
import { aUser } from '../../src/features/users/user-mother.js';
import type { Mutation, Store } from '../../src/store/port.js';
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';
import { CLUSTER, T0, twoServers } from '../support/count-servers.js';
import { expectExactOffsetPages, expectOffsetPagesAsPlainOnes, plainEdges } from '../support/offset-pages.js';
import { modelOffsetPage } from '../support/paging-model.js';
import { describeEachStore, StorePool } from '../support/stores.js';
import { WaveCountingStore } from '../../bench/waves.js';
import { writeConcurrently } from '../../bench/jump.js';
import { connections, fillConnection } from '../../bench/jump-connections.js';

/**
 * The calls, and the waves at most, of a first visit from a cursor in the middle of
 * 1,000 edges: the rank (the top, the cursor's level-2 list and its level-2 bucket's
 * edges up to it: for suspensions, its month's partition alone up to the cursor, then
 * the lookups of the rows read; for a list, its pending moves and then its rows), then
 * the page (read from the position's level-2 bucket the top holds; suspensions' with the
 * registry beside it). Ranked down to the leaves, as before `cursorLevel` 2, both took
 * more calls. Where the process knows the index's shape (`IndexShape`, from a page
 * before), the top and the cursor's level-2 list are one read of several rows
 * (`getInPartition`) with the lists the shape puts the position under: a call fewer.
 */
const FIRST_VISIT_FROM_A_CURSOR: Record<string, Record<'nothing' | 'its shape', { waves: number; calls: number }>> = {
  suspendedUsers: { nothing: { waves: 4, calls: 7 }, 'its shape': { waves: 4, calls: 6 } },
  // A list's pending transactions are read once for the page, as it begins, beside the
  // index's first read (`OrderedSource.begin`), and so are its cursor's bucket's rows as
  // stored (`OrderedSource.readStored`: what the index counts); then the page. Read
  // before each of the two, the transactions made a call and a wave more each.
  'OrderedList.items': { nothing: { waves: 2, calls: 5 }, 'its shape': { waves: 2, calls: 4 } },
  // Ranked by its lists alone (random ranks, acceptances final: `lasting`): level 0's
  // list and the cursor's level-1 and level-2 lists in one read, its bucket there
  // holding it alone, then the page (a level-0 bucket of 1,000 acceptors holds few: the
  // walk stops there, and no shape names a list). Its bucket's edges read beside the
  // lists made 3 calls. (Its acceptors' ids are spread evenly, `uuidSpread`: where two
  // random ones share the cursor's bucket, 1 time in 70 or so, its edges are read too.)
  'Meeting.acceptedBy': { nothing: { waves: 2, calls: 2 }, 'its shape': { waves: 2, calls: 2 } },
};

/** A store whose batches fail, once armed, when they write a count's head settlement: a verifier crashing there. */
class CrashBeforeHead extends StoreDecorator {
  armed = false;
  protected around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    if (this.armed && call.operation === 'upsert' && call.table === 'connection_counts') return Promise.reject(new Error('crashed before the head'));
    return run();
  }
}

/** Every offset page of the author's posts equals the model's slice of what the timeline holds. */
async function expectExactPages(store: Store, ctx: () => ReturnType<typeof createRequestContext>, authorId: string): Promise<number> {
  const held = (await store.slice(timelineTable, { partition: { user_id: authorId }, limit: 10_000 })).map((r) => r.post_id as string);
  const timeline = ctx().timeline;
  return expectExactOffsetPages(
    { page: (args) => timeline.posts(authorId, args), idOf: (p) => p.postId },
    held,
    (postId) => timeline.postEdge({ authorId, postId, content: '', createdAt: new Date(0) } satisfies Post).cursor,
  );
}

describeEachStore('offset on a timeline', (target) => {
  const pool = new StorePool(target);
  afterEach(() => pool.disposeAll());

  it('gives the model slice from the start, the end and cursors once settled: two servers, imports, double deletions', async () => {
    const { store } = await pool.create();
    const w = await twoServers(store);
    const author = await w.a.ctx().users.create(aUser());
    const posts: Post[] = [];
    for (let i = 0; i < 120; i++) {
      const server = i % 2 === 0 ? w.a : w.b;
      // Every third post is imported, dated in the past: it lands in the middle of the timeline.
      posts.push(await server.ctx().timeline.createPost(author.id, `post ${i}`, i % 3 === 0 ? new Date(T0 - (i + 1) * 37_000) : undefined));
      if (i % 40 === 39) w.at(w.now() + 6_000);
    }
    // Deleted on both servers at once (the second one's count attempt recorded as its delete would): counted once.
    for (const post of posts.filter((_, i) => i % 7 === 3)) {
      await w.a.ctx().timeline.deletePost(author.id, post);
      await store.batch(w.b.services.counts.mutations({ key: postsCountKey(author.id), item: post.postId, sign: -1 }));
    }
    await w.settle();
    expect(await expectExactPages(store, w.a.ctx, author.id)).toBe(120 - 17);
    // An insert before a position shifts the page by exactly one, once settled.
    const before = await w.b.ctx().timeline.posts(author.id, { first: 3, offset: 50 });
    await w.a.ctx().timeline.createPost(author.id, 'newest');
    await w.settle();
    const after = await w.b.ctx().timeline.posts(author.id, { first: 3, offset: 51 });
    expect(after.edges.map((e) => e.node.postId)).toEqual(before.edges.map((e) => e.node.postId));
    await expectExactPages(store, w.b.ctx, author.id);
  }, target.ddlTimeoutMs);

  it('stays exact when a verifier crashes between its bucket writes and its head, and when two run at once', async () => {
    const { store: inner } = await pool.create();
    const store = new CrashBeforeHead(inner);
    const w = await twoServers(store);
    const author = await w.a.ctx().users.create(aUser());
    const key = postsCountKey(author.id);
    for (let i = 0; i < 30; i++) await w.a.ctx().timeline.createPost(author.id, `first ${i}`);
    await w.settle();
    // Read once settled: server a keeps the index's lists under this settlement.
    expect(await expectExactPages(store, w.a.ctx, author.id)).toBe(30);
    for (let i = 0; i < 30; i++) await (i % 2 ? w.a : w.b).ctx().timeline.createPost(author.id, `second ${i}`, new Date(T0 - i * 1_000));
    w.closeWindows();
    // The crash: every touched bucket written, the head not.
    store.armed = true;
    await expect(settleIncrementally(store, key, w.through(), rankedCounts)).rejects.toThrow('crashed before the head');
    store.armed = false;
    // More posts; then recovery settles from the head's old bound past the crashed one's,
    // and two verifiers run at once besides.
    for (let i = 0; i < 10; i++) await w.b.ctx().timeline.createPost(author.id, `third ${i}`, new Date(T0 - i * 500));
    w.closeWindows();
    await Promise.all([settleIncrementally(store, key, w.through(), rankedCounts), settleIncrementally(store, key, w.through(), rankedCounts)]);
    expect(await expectExactPages(store, w.a.ctx, author.id)).toBe(70);
  }, target.ddlTimeoutMs);

  it('reads a page whose index lists are kept with the index settlement beside it, and within 8 waves once a settlement moved them', async () => {
    const { store: inner } = await pool.create();
    const store = new WaveCountingStore(inner);
    const w = await twoServers(store);
    const author = await w.a.ctx().users.create(aUser());
    // Posts an hour apart: a sparse index, whose first visit reads the most levels.
    for (let i = 0; i < 150; i++) await w.a.ctx().timeline.createPost(author.id, `post ${i}`, new Date(T0 - (i + 1) * 3_600_000));
    await w.settle();
    const held = async () => (await inner.slice(timelineTable, { partition: { user_id: author.id }, limit: 1_000 })).map((r) => r.post_id as string);
    const cursorPost = (await held())[40]!;
    const cursor = w.a.ctx().timeline.postEdge({ authorId: author.id, postId: cursorPost, content: '', createdAt: new Date(0) }).cursor;
    const page = async () => {
      store.reset();
      const got = await w.a.ctx().timeline.posts(author.id, { first: 5, after: cursor, offset: 60 });
      const waves = store.waves;
      const all = await held();
      const at = all.indexOf(cursorPost) + 1 + 60;
      expect(got.edges.map((e) => e.node.postId)).toEqual(all.slice(at, at + 5));
      return waves;
    };
    expect(await page()).toBeLessThanOrEqual(8);
    await page();
    // Kept: the cursor's leaf, then the page, each beside the settlement (one wave where calls overlap).
    expect(await page()).toBeLessThanOrEqual(2);
    // A newer post moves the settlement: the kept lists are refused and the position found again.
    await w.b.ctx().timeline.createPost(author.id, 'newest');
    await w.settle();
    expect(await page()).toBeLessThanOrEqual(8);
  }, target.ddlTimeoutMs);

  it('rebuilds the same buckets from the ledger (a recount) as the settlement window by window', async () => {
    const { store } = await pool.create();
    const w = await twoServers(store);
    const author = await w.a.ctx().users.create(aUser());
    const key = postsCountKey(author.id);
    const posts: Post[] = [];
    for (let i = 0; i < 40; i++) posts.push(await w.a.ctx().timeline.createPost(author.id, `post ${i}`, new Date(T0 - i * 86_400_000)));
    await w.settle();
    for (const post of posts.slice(0, 10)) await w.b.ctx().timeline.deletePost(author.id, post);
    await w.settle();
    const buckets = async () => (await store.slice(countRankListsTable, { partition: { count_key: key }, limit: 10_000 })).map((r) => [r.level, r.parent, r.counts]);
    const stepwise = await buckets();
    const levelZero = stepwise.find(([level]) => level === 0)!;
    expect(unpackRankList(0, undefined, levelZero[2] as string).reduce((sum, b) => sum + b.count, 0)).toBe(30);
    await settleFully(store, key, w.through(), rankedCounts);
    expect(await buckets()).toEqual(stepwise);
  }, target.ddlTimeoutMs);
});

/** A store whose next batch that writes an item's index row fails, once armed: an applier crashing as it applies (a move's step 2, say). */
class CrashInMove extends StoreDecorator {
  armed = false;
  protected around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    if (this.armed && call.operation === 'batch' && call.tables.includes('list_item_index')) {
      this.armed = false;
      return Promise.reject(new Error('crashed in a move'));
    }
    return run();
  }
}

/** Two servers over `store`, a list, and `count` items added on each in turn, at the end or before the item `before` names. */
async function aListOnTwoServers(store: Store, count: number, before: (i: number, items: readonly ListItem[]) => string | undefined = () => undefined) {
  const w = await twoServers(store);
  const owner = await w.a.ctx().users.create(aUser());
  const list = await w.a.ctx().lists.create('numbered', owner.id);
  const items: ListItem[] = [];
  for (let i = 0; i < count; i++) items.push(await (i % 2 === 0 ? w.a : w.b).ctx().lists.add(list.listId, `item ${i}`, before(i, items)));
  return { w, list, items };
}

/** Counts the reads of lists' transaction logs (`list_transactions` slices). */
class TransactionReads extends StoreDecorator {
  transactionReads = 0;
  protected around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    if (call.operation === 'slice' && call.table === 'list_transactions') this.transactionReads++;
    return run();
  }
}

/** A uuid whose first `shared` hex digits are those of `prefix`: acceptors that share a rank, or a leaf. */
function uuidSharing(prefix: string, shared: number): string {
  const hex = (prefix.slice(0, shared) + randomUUID().replace(/-/g, '').slice(shared)).split('');
  hex[12] = '4';
  const s = hex.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
}

/**
 * The `i`th of `n` version-4 uuids spread evenly over the ranks (their first 12 hex
 * digits `i` n-ths of the way): acceptors none of whom shares a bucket with its
 * neighbours below the levels that hold many, as random ones do but not always (two
 * random ones of 1,000 share a level's bucket now and then, and a cursor there is not
 * alone: its bucket's edges are read, a call more).
 */
function uuidSpread(i: number, n: number): string {
  const head = ((BigInt(i) * 16n ** 12n) / BigInt(n)).toString(16).padStart(12, '0');
  return uuidSharing(head, 12);
}

/**
 * A store from before the counted indexes, until `indexed`: the writes of index entries
 * (count keys `index:…`) and of buckets are dropped; everything else lands.
 */
class BeforeTheIndex extends StoreDecorator {
  indexed = false;
  protected around<T>(_call: StoreCall, run: () => Promise<T>): Promise<T> {
    return run();
  }
  override batch(mutations: readonly Mutation[]): Promise<void> {
    const kept = this.indexed ? mutations : mutations.filter((m) => !(String(m.kind === 'upsert' ? m.row.count_key : '').startsWith('index:') || m.table === countRankListsTable));
    return kept.length === 0 ? Promise.resolve() : super.batch(kept);
  }
}

/**
 * The other three counted connections (a list's items, through moves; the suspended
 * users; a meeting's acceptors): the same, and a recount that builds their indexes for
 * data written before them.
 */
describeEachStore('offset on the other counted connections', (target) => {
  const pool = new StorePool(target);
  afterEach(() => pool.disposeAll());

  it("OrderedList.items: the model's slices once settled, through moves on two servers (one item moved by both at once), removals, a move back to a position the item left, and an applier crashing mid-move", async () => {
    const { store: inner } = await pool.create();
    const store = new CrashInMove(inner);
    // Every fifth item goes before an earlier one: into the middle of the list.
    const { w, list, items } = await aListOnTwoServers(store, 150, (i, items) => (i % 5 === 4 ? items[i - 3]!.itemId : undefined));
    // One applier (a process's), through the store that crashes on demand.
    const applier = createListApplier({ ...w.a.services, store });
    await applier.drain(list.listId);
    await w.settle();
    const connection = { page: (args: PageArgs) => w.a.ctx().lists.items(list.listId, args), idOf: (i: ListItem) => i.itemId };
    expect(await expectOffsetPagesAsPlainOnes(connection)).toBe(150);

    // Moves on both servers, one item moved by both before either is applied; removals.
    for (let i = 0; i < 30; i++) {
      const server = i % 2 === 0 ? w.a : w.b;
      const item = items[(i * 37) % 150]!;
      const anchor = items[(i * 53 + 11) % 150]!;
      if (item.itemId === anchor.itemId) continue;
      await server.ctx().lists.move(list.listId, item.itemId, i % 3 === 0 ? { toEnd: i % 2 ? 'TOP' : 'BOTTOM' } : { afterItemId: anchor.itemId });
    }
    await w.a.ctx().lists.move(list.listId, items[3]!.itemId, { toEnd: 'TOP' });
    await w.b.ctx().lists.move(list.listId, items[3]!.itemId, { afterItemId: items[100]!.itemId });
    for (const item of items.filter((_, i) => i % 9 === 2)) await w.b.ctx().lists.remove(list.listId, item.itemId);
    // The applier crashes as it applies a transaction (after a move's step 1); its next pass goes on from there.
    store.armed = true;
    await expect(applier.drain(list.listId)).rejects.toThrow('crashed in a move');
    await applier.drain(list.listId);
    await w.settle();
    expect(await expectOffsetPagesAsPlainOnes(connection)).toBe(150 - 17);

    // An item moved away and back to the very position it left: its entry's next generation.
    const mover = items[10]!;
    const [before] = await readListItems(store, list.listId, [mover.itemId]);
    await appendTransactions(store, w.a.services.clock, list.listId, [{ kind: 'move', itemId: mover.itemId, to: { weight: before!.weight + 1n, seq: before!.seq } }]);
    await applier.drain(list.listId);
    await appendTransactions(store, w.a.services.clock, list.listId, [{ kind: 'move', itemId: mover.itemId, to: { weight: before!.weight, seq: before!.seq } }]);
    await applier.drain(list.listId);
    await w.settle();
    const entry = placementEntry(mover.itemId, before!);
    expect(await currentEntries(store, itemsCountKey(list.listId), [entry])).toEqual([`${entry}#1`]);
    expect(await expectOffsetPagesAsPlainOnes(connection)).toBe(150 - 17);
  }, target.ddlTimeoutMs * 2);

  it("OrderedList.items from the cursor of an item since moved, and of one since removed: the model's slice at every offset, both ways, with a transaction pending, its pending transactions read once a page", async () => {
    const { store: inner } = await pool.create();
    const store = new TransactionReads(inner);
    const { w, list, items } = await aListOnTwoServers(store, 80);
    const applier = createListApplier({ ...w.a.services, store });
    await applier.drain(list.listId);
    await w.settle();
    const connection = { page: (args: PageArgs) => w.a.ctx().lists.items(list.listId, args), idOf: (i: ListItem) => i.itemId };
    // The cursors as pages gave them, before the moves.
    const before = new Map((await plainEdges(connection)).map((e) => [e.id, e.cursor]));
    const moved = items[30]!;
    const removed = items[50]!;
    await w.b.ctx().lists.move(list.listId, moved.itemId, { afterItemId: items[70]!.itemId });
    await w.a.ctx().lists.remove(list.listId, removed.itemId);
    await applier.drain(list.listId);
    await w.settle();
    // A rename left pending: every read of a page applies it (it moves nothing).
    const renamed = items[40]!;
    await w.a.ctx().lists.rename(list.listId, renamed.itemId, 'renamed, pending');
    expect((await readPendingTransactions(store, list.listId)).map((t) => t.kind)).toEqual(['rename']);
    const held = (await readListItems(store, list.listId, items.map((i) => i.itemId))).filter((i): i is ListItem => i !== null);
    expect(held).toHaveLength(79);
    const cold = createRequestContext({ ...w.a.services, rankCache: new RankCache(0) }, { username: 'root', isAdmin: true }).lists;
    for (const [lists, process] of [[cold, 'a first visit'], [w.a.ctx().lists, 'lists kept']] as const) {
      for (const gone of [moved, removed]) {
        for (const backward of [false, true]) {
          for (const offset of [0, 1, 7, 20, 41]) {
            for (const size of [1, 5, 20]) {
              const cursor = before.get(gone.itemId)!;
              store.transactionReads = 0;
              const page = await lists.items(list.listId, backward ? { last: size, before: cursor, offset } : { first: size, after: cursor, offset });
              const model = modelOffsetPage<Pick<ListItem, 'weight' | 'seq' | 'itemId'>>(held, compareItems, backward ? 'backward' : 'forward', size, offset, gone);
              const where = JSON.stringify({ process, cursor: gone === moved ? 'moved' : 'removed', backward, offset, size });
              expect(
                { ids: page.edges.map((e) => e.node.itemId), hasPreviousPage: page.pageInfo.hasPreviousPage, hasNextPage: page.pageInfo.hasNextPage },
                where,
              ).toEqual({ ids: model.nodes.map((n) => n.itemId), hasPreviousPage: model.hasPreviousPage, hasNextPage: model.hasNextPage });
              // The pending rename shows wherever its item is on the page.
              for (const e of page.edges) if (e.node.itemId === renamed.itemId) expect(e.node.label, where).toBe('renamed, pending');
              expect(store.transactionReads, where).toBe(1);
            }
          }
        }
      }
    }
  }, target.ddlTimeoutMs * 2);

  it("suspendedUsers: the model's slices once settled, across months, with ties in one millisecond, suspensions on two servers, lifted and made again, a verifier crashing before its head and two at once", async () => {
    const { store: inner } = await pool.create();
    const store = new CrashBeforeHead(inner);
    const w = await twoServers(store);
    const users = [];
    for (let i = 0; i < 150; i++) users.push((await w.a.ctx().users.create(aUser())).id);
    // Imports over a year, every fourth one at the same millisecond as the one before (a tie broken by user id).
    const at = (i: number) => new Date(T0 - (i - (i % 4 === 3 ? 1 : 0)) * 2 * 86_400_000 - 1_000);
    for (let i = 0; i < 150; i++) await (i % 2 ? w.a : w.b).ctx().suspensions.suspend({ userId: users[i]!, reason: `r${i}`, suspendedAt: at(i) });
    w.closeWindows();
    store.armed = true;
    await expect(settleIncrementally(store, indexKeyOf(SUSPENSIONS_COUNT_KEY), w.through(), rankedCounts)).rejects.toThrow('crashed before the head');
    store.armed = false;
    for (const user of users.filter((_, i) => i % 6 === 1)) await w.b.ctx().suspensions.unsuspend(user);
    // Suspended again, now: a new saga, a new entry, at the top.
    for (const user of users.filter((_, i) => i % 12 === 1)) await w.a.ctx().suspensions.suspend({ userId: user, reason: 'again' });
    w.closeWindows();
    await Promise.all([settleIncrementally(store, indexKeyOf(SUSPENSIONS_COUNT_KEY), w.through(), rankedCounts), w.settle()]);
    const connection = { page: (args: PageArgs) => w.b.ctx().suspensions.page(args), idOf: (s: Suspension) => s.userId };
    expect(await expectOffsetPagesAsPlainOnes(connection)).toBe(150 - 25 + 13);
  }, target.ddlTimeoutMs * 2);

  it("Meeting.acceptedBy: the model's slices once settled, acceptors on two servers, repeated, some sharing a rank; from a cursor, a first visit's rank reads no edge where its lists hold it alone", async () => {
    const { store: inner } = await pool.create();
    const store = new WaveCountingStore(inner);
    const w = await twoServers(store);
    const owner = await w.a.ctx().users.create(aUser());
    const meeting = await w.a.ctx().meetings.create({ title: 'all hands' }, owner.id);
    const prefix = randomUUID().replace(/-/g, '');
    // A third share their rank with others (14 hex digits: the rank's 56 bits after the version), a third their leaf.
    const acceptors = Array.from({ length: 150 }, (_, i) => (i % 3 === 0 ? uuidSharing(prefix, 14) : i % 3 === 1 ? uuidSharing(prefix, 12) : randomUUID()));
    for (const [i, user] of acceptors.entries()) await (i % 2 ? w.a : w.b).ctx().meetings.accept(meeting.meetingId, user);
    for (const user of acceptors.slice(0, 20)) await w.b.ctx().meetings.accept(meeting.meetingId, user);
    await w.settle();
    const held = (await store.slice(meetingUsersTable, { partition: { meeting_id: meeting.meetingId }, limit: 1_000 })).map((r) => r.user_id as string);
    const meetings = w.a.ctx().meetings;
    const connection = { page: (args: PageArgs) => meetings.acceptedBy(meeting.meetingId, args), idOf: (a: Acceptance) => a.userId };
    expect(await expectExactOffsetPages(connection, held, (userId) => meetings.acceptedEdge({ meetingId: meeting.meetingId, userId, acceptedAt: new Date(0) }).cursor)).toBe(150);
    // A first visit (a process that keeps no list) from the cursor of an acceptor with a
    // random id: the top and the lists under its level-0 and level-1 buckets in one read
    // (getInPartition), its bucket holding it alone (acceptances are final: it is the
    // cursor's), then the page (level-0 buckets of 150 acceptors hold few): 2 waves, 2
    // calls, where the edges of its level-1 bucket read up to it beside the lists made 3,
    // the top and the list read apart 4, and reading every level's list and the leaf 8.
    const cold = createRequestContext({ ...w.a.services, rankCache: new RankCache(0) }, { username: 'root', isAdmin: true }).meetings;
    // Cursors of acceptors with random ids whose page lies among random ids too: past the
    // block of shared ranks the select walks down every level (a wave each), which is
    // where the acceptors fell, not what the rank of a cursor costs.
    const sharing = new Set(acceptors.filter((_, i) => i % 3 !== 2));
    const clear = (user: string) => {
      const at = held.indexOf(user);
      return at + 1 + 7 + 5 < held.length && held.slice(at, at + 1 + 7 + 5 + 1).every((u) => !sharing.has(u));
    };
    const lone = acceptors.filter((u, i) => i % 3 === 2 && clear(u));
    expect(lone.length).toBeGreaterThanOrEqual(2);
    for (const user of [lone[0]!, lone.at(-1)!]) {
      const after = meetings.acceptedEdge({ meetingId: meeting.meetingId, userId: user, acceptedAt: new Date(0) }).cursor;
      store.reset();
      const page = await cold.acceptedBy(meeting.meetingId, { first: 5, after, offset: 7 });
      const at = held.indexOf(user) + 1 + 7;
      expect(page.edges.map((e) => e.node.userId)).toEqual(held.slice(at, at + 5));
      expect({ waves: store.waves, calls: store.calls }).toEqual({ waves: 2, calls: 2 });
    }
  }, target.ddlTimeoutMs * 2);

  it("Meeting.acceptedBy through a rolling upgrade: with COUNT_LISTS_SPARSE every list is written sparse, as the earlier build reads it; once a server without it settles, the lists it touches are dense where valid, the others stay sparse; the model's slices throughout", async () => {
    const { store } = await pool.create();
    const w = await twoServers(store, CLUSTER, { countListsSparse: true });
    const owner = await w.a.ctx().users.create(aUser());
    const meeting = await w.a.ctx().meetings.create({ title: 'rolling upgrade' }, owner.id);
    const key = acceptanceCountKey(meeting.meetingId);
    // Acceptors sharing their first two hex digits: one level-0 bucket, whose level-1
    // list has most of its 256 children hold one or two (where the dense spelling is shorter).
    const prefix = randomUUID().replace(/-/g, '');
    const accept = async (n: number) => {
      for (let i = 0; i < n; i++) await (i % 2 ? w.a : w.b).ctx().meetings.accept(meeting.meetingId, uuidSharing(prefix, 2));
    };
    const lists = async () =>
      (await store.slice(countRankListsTable, { partition: { count_key: key }, limit: 1_000 })).map((r) => {
        const level = r.level as number;
        const parent = level === 0 ? undefined : (r.parent as bigint);
        const counts = r.counts as string;
        return { id: `${level}:${parent ?? ''}`, counts, sparse: packRankList(level, parent, unpackRankList(level, parent, counts), { sparseLists: true }), dense: packRankList(level, parent, unpackRankList(level, parent, counts)) };
      });
    const kept = w.a.ctx().meetings;
    const cold = createRequestContext({ ...w.a.services, rankCache: new RankCache(0) }, { username: 'root', isAdmin: true }).meetings;
    const pages = async (meetings: typeof kept) => {
      const held = (await store.slice(meetingUsersTable, { partition: { meeting_id: meeting.meetingId }, limit: 1_000 })).map((r) => r.user_id as string);
      const connection = { page: (args: PageArgs) => meetings.acceptedBy(meeting.meetingId, args), idOf: (a: Acceptance) => a.userId };
      return expectExactOffsetPages(connection, held, (userId) => meetings.acceptedEdge({ meetingId: meeting.meetingId, userId, acceptedAt: new Date(0) }).cursor);
    };

    await accept(150);
    await w.settle();
    const before = await lists();
    // Every list in the sparse spelling, among them ones the dense spelling was valid and shorter for.
    expect(before.filter((l) => l.counts !== l.sparse)).toEqual([]);
    expect(before.filter((l) => l.dense.startsWith('=')).length).toBeGreaterThan(0);
    expect(await pages(kept)).toBe(150);

    // The upgrade done: a server restarted without the setting settles the next acceptances.
    const upgraded = createServices(
      { cursorSecret: 'connection-counts-test-secret', suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins', cluster: CLUSTER },
      { store, logger: pino({ level: 'silent' }), clock: w.a.services.clock },
    );
    await accept(20);
    w.closeWindows();
    await upgraded.countVerifier.runOnce();
    const after = await lists();
    const untouched = after.filter((l) => before.some((b) => b.id === l.id && b.counts === l.counts));
    const rewritten = after.filter((l) => !untouched.includes(l));
    // Those it wrote, as packed by default (dense where valid and shorter); the others as they were, sparse.
    expect(rewritten.filter((l) => l.counts !== l.dense)).toEqual([]);
    expect(rewritten.filter((l) => l.counts.startsWith('=')).length).toBeGreaterThan(0);
    expect(untouched.filter((l) => l.counts !== l.sparse)).toEqual([]);
    expect(untouched.length).toBeGreaterThan(0);
    // Read by a process that kept the sparse lists (their settlement moved since) and by one that keeps none: the model's slices.
    expect(await pages(kept)).toBe(170);
    expect(await pages(cold)).toBe(170);
  }, target.ddlTimeoutMs * 2);

  it('from a cursor, a first visit of suspendedUsers or OrderedList.items ranks it at level 2 (16 s of suspensions, 16 appended items): the top, that list and that bucket\'s edges, then the page; of Meeting.acceptedBy at level 1, its lists in one read', async () => {
    const { store: inner } = await pool.create();
    await inner.ensureTables(ALL_TABLES);
    const store = new WaveCountingStore(inner);
    const settings = { cursorSecret: 'offset-test-cursor-secret-0123456789', suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins' } as const;
    const services = createServices(settings, { store, logger: pino({ level: 'silent' }) });
    // As the jump bench writes them: suspensions one a minute, items appended 2^32 apart.
    for (const connection of connections((i) => uuidSpread(i, 1_000))) {
      await fillConnection({ base: inner, write: (m) => writeConcurrently(inner, m) }, connection, 1_000);
      const cursors: string[] = [];
      for (let page = await connection.page(services, { first: 100 }); ; page = await connection.page(services, { first: 100, after: page.pageInfo.endCursor })) {
        cursors.push(...page.edges.map((e) => e.cursor));
        if (!page.pageInfo.hasNextPage) break;
      }
      expect(cursors).toHaveLength(1_000);
      const middle = cursors[500]!;
      for (const [args, at] of [
        [{ first: 20, after: middle, offset: 100 }, 601],
        [{ last: 20, before: middle, offset: 100 }, 380],
      ] as const) {
        // A process that keeps no list: every offset page is a first visit; the first of
        // these knows nothing of the index, the second its shape (`IndexShape`).
        const cold = { ...services, rankCache: new RankCache(0) };
        for (const known of ['nothing', 'its shape'] as const) {
          store.reset();
          const page = await connection.page(cold, args);
          expect(page.edges.map((e) => e.cursor)).toEqual(cursors.slice(at, at + 20));
          const { calls, waves } = FIRST_VISIT_FROM_A_CURSOR[connection.name]![known];
          expect({ connection: connection.name, known, calls: store.calls }).toEqual({ connection: connection.name, known, calls });
          expect(store.waves).toBeLessThanOrEqual(waves);
        }
      }
    }
  }, target.ddlTimeoutMs * 2);

  it('builds the three indexes with a recount, for data written before they existed', async () => {
    const { store: inner } = await pool.create();
    const store = new BeforeTheIndex(inner);
    const w = await twoServers(store);
    const owner = await w.a.ctx().users.create(aUser());
    const list = await w.a.ctx().lists.create('numbered', owner.id);
    const meeting = await w.a.ctx().meetings.create({ title: 'all hands' }, owner.id);
    const users = [];
    for (let i = 0; i < 60; i++) {
      const user = (await w.a.ctx().users.create(aUser())).id;
      users.push(user);
      await w.a.ctx().lists.add(list.listId, `item ${i}`);
      await w.b.ctx().meetings.accept(meeting.meetingId, user);
      await w.b.ctx().suspensions.suspend({ userId: user, reason: 'r', suspendedAt: new Date(T0 - i * 86_400_000) });
    }
    const applier = createListApplier({ ...w.a.services, store });
    await applier.drain(list.listId);
    // Moved and removed before the index, too.
    const itemIds = (await w.a.ctx().lists.items(list.listId, { first: 60 })).edges.map((e) => e.node.itemId);
    for (let i = 0; i < 10; i++) await w.a.ctx().lists.move(list.listId, itemIds[i * 5]!, { toEnd: 'TOP' });
    await w.a.ctx().lists.remove(list.listId, itemIds[31]!);
    await w.b.ctx().suspensions.unsuspend(users[7]!);
    await applier.drain(list.listId);
    await w.settle();
    // The acceptors' count existed, its index did not: no buckets.
    expect(await store.slice(countRankListsTable, { partition: { count_key: acceptanceCountKey(meeting.meetingId) }, limit: 10 })).toEqual([]);
    store.indexed = true;
    w.closeWindows();
    const report = await recountConnections(store, w.a.services.counts, [listMemberships(store), suspensionMemberships(store), acceptanceMemberships(store)], {
      clock: w.a.services.clock,
      cluster: CLUSTER,
      rankOf: rankedCounts,
    });
    // The items were counted; only their index entries were missing (not reported as items).
    expect(report.backfilled).toBe(0);
    // What the recount added now (the entries the ledger lacked) settles as any change does.
    await w.settle();
    const ctx = w.a.ctx();
    expect(await expectOffsetPagesAsPlainOnes({ page: (args) => ctx.lists.items(list.listId, args), idOf: (i: ListItem) => i.itemId })).toBe(59);
    expect(await expectOffsetPagesAsPlainOnes({ page: (args) => ctx.suspensions.page(args), idOf: (s: Suspension) => s.userId })).toBe(59);
    expect(await expectOffsetPagesAsPlainOnes({ page: (args) => ctx.meetings.acceptedBy(meeting.meetingId, args), idOf: (a: Acceptance) => a.userId })).toBe(60);
  }, target.ddlTimeoutMs * 2);
});
