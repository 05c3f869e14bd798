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
import { afterEach, expect, it } from 'vitest';
import { rankedCounts, type createRequestContext } from '../../src/composition-root.js';
import { settleFully, settleIncrementally } from '../../src/counts/connection-counts.js';
import { countRanksTable } from '../../src/counts/count-tables.js';
import { postsCountKey, type Post } from '../../src/features/timeline/timeline.js';
import { timelineTable } from '../../src/features/timeline/timeline-tables.js';
import { aUser } from '../../src/features/users/user-mother.js';
import type { Store } from '../../src/store/port.js';
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';
import { T0, twoServers } from '../support/count-servers.js';
import { modelOffsetPage } from '../support/paging-model.js';
import { describeEachStore, StorePool } from '../support/stores.js';
import { WaveCountingStore } from '../../bench/waves.js';

/** A store whose batches fail, once armed, when they write a count's head settlement: a verifier crashing there. */
class CrashBeforeHead extends StoreDecorator {
  armed = false;
  protected around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    if (this.armed && call.operation === 'upsert' && call.table === 'connection_counts') return Promise.reject(new Error('crashed before the head'));
    return run();
  }
}

/** Offsets and cursors that cross the timeline's leaves and ends. */
const OFFSETS = [0, 1, 7, 20, 41, 99, 130];
const SIZES = [1, 5, 20];

/** Every offset page of the author's posts equals the model's slice of what the timeline holds. */
async function expectExactPages(store: Store, ctx: () => ReturnType<typeof createRequestContext>, authorId: string): Promise<number> {
  const held = (await store.slice(timelineTable, { partition: { user_id: authorId }, limit: 10_000 })).map((r) => r.post_id as string);
  const order = (x: string, y: string) => held.indexOf(x) - held.indexOf(y);
  const timeline = ctx().timeline;
  const cursorOf = (postId: string) => timeline.postEdge({ authorId, postId, content: '', createdAt: new Date(0) } satisfies Post).cursor;
  for (const backward of [false, true]) {
    for (const cursorPost of [undefined, held[0], held[Math.floor(held.length / 2)], held[held.length - 1]]) {
      for (const offset of OFFSETS) {
        for (const size of SIZES) {
          const cursor = cursorPost === undefined ? undefined : cursorOf(cursorPost);
          const page = await timeline.posts(authorId, backward ? { last: size, before: cursor, offset } : { first: size, after: cursor, offset });
          expect(
            { nodes: page.edges.map((e) => e.node.postId), hasPreviousPage: page.pageInfo.hasPreviousPage, hasNextPage: page.pageInfo.hasNextPage },
            JSON.stringify({ backward, cursor: cursorPost && held.indexOf(cursorPost), offset, size }),
          ).toEqual(modelOffsetPage(held, order, backward ? 'backward' : 'forward', size, offset, cursorPost));
        }
      }
    }
  }
  return held.length;
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

  it('reads a page whose index lists are kept with the head beside it, and within 8 waves once a settlement moved them', async () => {
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
    // Kept: the cursor's leaf, then the page, each beside the head (one wave where calls overlap).
    expect(await page()).toBeLessThanOrEqual(2);
    // A newer post moves the head: the kept lists are refused and the position found again.
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
    const buckets = async () => (await store.slice(countRanksTable, { partition: { count_key: key }, limit: 10_000 })).map((r) => [r.level, r.prefix, r.count]);
    const stepwise = await buckets();
    expect(stepwise.filter(([level]) => level === 0).reduce((sum, [, , count]) => sum + (count as bigint), 0n)).toBe(30n);
    await settleFully(store, key, w.through(), rankedCounts);
    expect(await buckets()).toEqual(stepwise);
  }, target.ddlTimeoutMs);
});
