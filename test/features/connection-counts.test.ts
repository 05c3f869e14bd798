/**
 * Connection counts (`totalCount`): a change recorded twice counts once, a removal that
 * came before the addition it undoes takes nothing away, settlements in full and
 * window by window agree, a page of counts is one read, and, against a model, counts of
 * posts and list items stay exact through any sequence of additions, removals,
 * verifier passes and time, on every store.
 */
import fc from 'fast-check';
import { afterEach, expect, it } from 'vitest';
import {
  readConnectionCounts,
  reconcileCount,
  settleFully,
  settleIncrementally,
  type CountChange,
} from '../../src/counts/connection-counts.js';
import { acceptanceCountKey } from '../../src/features/meetings/meetings.js';
import { itemsCountKey } from '../../src/features/lists/lists.js';
import { postsCountKey } from '../../src/features/timeline/timeline.js';
import { aUser } from '../../src/features/users/user-mother.js';
import type { Store } from '../../src/store/port.js';
import { CountingStore } from '../../src/store/store-decorator.js';
import { JOB_WINDOW_MS, closedThrough } from '../../src/background/windowed-job.js';
import { CLUSTER, T0, twoServers } from '../support/count-servers.js';
import { describeEachStore, StorePool } from '../support/stores.js';

const userId = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;

/** Two servers over a new store of the pool. */
const twoServersOf = async (pool: StorePool) => twoServers((await pool.create()).store);

describeEachStore('connection counts', (target) => {
  const pool = new StorePool(target);
  afterEach(() => pool.disposeAll());

  it('count a post deleted twice, on two servers in two windows, once, and never show less than zero', async () => {
    const w = await twoServersOf(pool);
    const author = await w.a.ctx().users.create(aUser());
    const post = await w.a.ctx().timeline.createPost(author.id, 'hello');
    const key = postsCountKey(author.id);
    expect(await w.a.read(key)).toBe(1);
    // Both servers saw the post and deleted it: two removals, in two windows.
    w.at(T0 + 7_000);
    await w.b.record({ key, item: post.postId, sign: -1 });
    w.at(T0 + 12_000);
    await w.a.record({ key, item: post.postId, sign: -1 });
    // Until settled the live cells hold both removals: the count is shown as zero, not -1.
    expect(await w.a.read(key)).toBe(0);
    await w.settle();
    expect(await w.a.read(key)).toBe(0);
    await w.a.ctx().timeline.createPost(author.id, 'again');
    expect(await w.a.read(key)).toBe(1);
    await w.settle();
    expect([await w.a.read(key), await w.b.read(key)]).toEqual([1, 1]);
  }, target.ddlTimeoutMs);

  it('take nothing away for a removal of an item never added, or undone before its addition landed', async () => {
    const w = await twoServersOf(pool);
    const key = 'suspended-test';
    // An undo of a step that never ran (a compensation after a failure): nothing counted.
    await w.a.record({ key, item: 'never-added', sign: -1 });
    // An undo made before the step it undoes was stamped (which then landed late).
    w.at(T0 + 3_000);
    await w.b.record({ key, item: 'undone', sign: -1 });
    w.at(T0 + 9_000);
    await w.a.record({ key, item: 'undone', sign: 1 });
    // And one that counts: added, then removed, then another added.
    await w.a.record({ key, item: 'kept', sign: 1 });
    await w.b.record({ key, item: 'gone', sign: 1 });
    w.at(T0 + 14_000);
    await w.a.record({ key, item: 'gone', sign: -1 });
    await w.settle();
    expect(await w.a.read(key)).toBe(1);
    expect(await settleFully(w.store, key, closedThrough(w.a.services.clock, CLUSTER))).toBe(1);
  }, target.ddlTimeoutMs);

  it('settle window by window and in full to the same count, whatever the order of arrival', async () => {
    const w = await twoServersOf(pool);
    const key = 'orders-test';
    const changes: Array<{ ms: number; change: CountChange; by: 'a' | 'b' }> = [];
    for (let i = 0; i < 30; i++) {
      const item = `item-${i % 8}`;
      changes.push({ ms: T0 + i * 1_700, change: { key, item, sign: i % 3 === 2 ? -1 : 1 }, by: i % 2 ? 'a' : 'b' });
    }
    for (const c of changes) {
      w.at(c.ms);
      await w[c.by].record(c.change);
    }
    w.at(T0 + 120_000);
    const ends = Array.from({ length: 14 }, (_, i) => T0 + (i + 1) * JOB_WINDOW_MS);
    const stepwise: number[] = [];
    for (const end of ends) stepwise.push(await settleIncrementally(w.store, key, end));
    const full: number[] = [];
    for (const end of ends) full.push(await settleFully(w.store, key, end));
    expect(full).toEqual(stepwise);
    expect(stepwise[stepwise.length - 1]).toBe(await w.a.read(key));
  }, target.ddlTimeoutMs);

  it('read the counts of a page of connections in one round trip, and a count whose verifiers lag by a slice', async () => {
    const w = await twoServersOf(pool);
    const keys: string[] = [];
    for (let k = 0; k < 12; k++) {
      keys.push(`page-${k}`);
      for (let i = 0; i < k; i++) {
        w.at(T0 + i * 1_000);
        await w.a.record({ key: `page-${k}`, item: `i${i}`, sign: 1 });
      }
    }
    const counting = new CountingStore(w.store);
    const read = (store: Store, nowMs: number) => readConnectionCounts(store, keys, { nowMs, cluster: CLUSTER, progress: null });
    expect(await read(counting, T0 + 12_000)).toEqual(keys.map((_, k) => k));
    expect(counting.roundTrips).toBe(1);
    // A minute later with no verifier: the open windows are older than the ones read by key.
    const late = new CountingStore(w.store);
    expect(await read(late, T0 + 60_000)).toEqual(keys.map((_, k) => k));
    expect(late.roundTrips).toBe(1 + 11);
    // Settled: one round trip again.
    await w.settle();
    const settled = new CountingStore(w.store);
    expect(await read(settled, w.now())).toEqual(keys.map((_, k) => k));
    expect(settled.roundTrips).toBe(1);
  }, target.ddlTimeoutMs);

  it('are exact over acceptances in 40 windows, before and after settling, and reconcile at once a count whose live cell was lost', async () => {
    const w = await twoServersOf(pool);
    const meeting = (await w.a.ctx().meetings.create({ title: 'long' }, userId(0))).meetingId;
    for (let i = 0; i < 40; i++) {
      w.at(T0 + i * JOB_WINDOW_MS);
      expect((await w.a.ctx().meetings.accept(meeting, userId(i + 1))).counted).toBe(true);
      expect((await w.a.ctx().meetings.accept(meeting, userId(i + 1))).counted).toBe(false);
    }
    const key = acceptanceCountKey(meeting);
    expect(await w.a.read(key)).toBe(40);
    await w.settle();
    expect(await w.a.read(key)).toBe(40);
    // A live cell lost (its write failed after the acceptance won): the count lags until
    // settled, or until reconciled, at once.
    w.at(w.now() + 1_000);
    const lost = w.b.services.counts.attempt({ key, item: userId(99), sign: 1 });
    await w.store.batch(w.b.services.counts.recorded(lost));
    expect(await w.a.read(key)).toBe(40);
    expect(await reconcileCount(w.store, w.a.services.counts, key, closedThrough(w.a.services.clock, CLUSTER))).toBe(41);
    expect(await w.a.read(key)).toBe(41);
    await w.settle();
    expect(await w.a.read(key)).toBe(41);
  }, target.ddlTimeoutMs);
});

describeEachStore('connection counts against a model', (target) => {
  const pool = new StorePool(target);
  afterEach(() => pool.disposeAll());

  type Op =
    | { kind: 'post'; author: number; by: 'a' | 'b' }
    | { kind: 'deletePost'; pick: number; by: 'a' | 'b' }
    | { kind: 'addItem'; by: 'a' | 'b' }
    | { kind: 'removeItem'; pick: number; by: 'a' | 'b' }
    | { kind: 'time'; ms: number }
    | { kind: 'verify'; by: 'a' | 'b' };
  const by = fc.constantFrom('a' as const, 'b' as const);
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('post' as const), author: fc.nat(1), by }),
    fc.record({ kind: fc.constant('deletePost' as const), pick: fc.nat(50), by }),
    fc.record({ kind: fc.constant('addItem' as const), by }),
    fc.record({ kind: fc.constant('removeItem' as const), pick: fc.nat(50), by }),
    fc.record({ kind: fc.constant('time' as const), ms: fc.integer({ min: 100, max: 9_000 }) }),
    fc.record({ kind: fc.constant('verify' as const), by }),
  );

  it('keep posts and list items counted exactly through additions, removals, verifier passes and time', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 40 }), async (ops) => {
        const w = await twoServersOf(pool);
        try {
          const authors = [await w.a.ctx().users.create(aUser()), await w.a.ctx().users.create(aUser())];
          const list = await w.a.ctx().lists.create('model', authors[0]!.id);
          const posts: Array<Array<{ authorId: string; postId: string }>> = [[], []];
          const items: string[] = [];
          for (const o of ops) {
            if (o.kind === 'time') w.at(w.now() + o.ms);
            else if (o.kind === 'verify') await w[o.by].services.countVerifier.runOnce();
            else if (o.kind === 'post') posts[o.author]!.push(await w[o.by].ctx().timeline.createPost(authors[o.author]!.id, 'x'));
            else if (o.kind === 'deletePost') {
              const all = posts.flat();
              if (all.length === 0) continue;
              const victim = all[o.pick % all.length]!;
              await w[o.by].ctx().timeline.deletePost(victim.authorId, victim);
              for (const p of posts) p.splice(p.indexOf(victim), p.includes(victim) ? 1 : 0);
            } else if (o.kind === 'addItem') items.push((await w[o.by].ctx().lists.add(list.listId, 'thing')).itemId);
            else {
              if (items.length === 0) continue;
              await w[o.by].ctx().lists.remove(list.listId, items.splice(o.pick % items.length, 1)[0]!);
            }
            for (const reader of [w.a, w.b]) {
              const ctx = reader.ctx();
              const shown = await Promise.all([
                ...authors.map((u) => ctx.loaders.connectionCount.load(postsCountKey(u.id))),
                ctx.loaders.connectionCount.load(itemsCountKey(list.listId)),
              ]);
              expect(shown).toEqual([posts[0]!.length, posts[1]!.length, items.length]);
            }
          }
          await w.settle();
          const settled = await Promise.all(authors.map((u) => w.a.read(postsCountKey(u.id))));
          expect(settled).toEqual([posts[0]!.length, posts[1]!.length]);
          expect(await w.b.read(itemsCountKey(list.listId))).toBe(items.length);
        } finally {
          await pool.disposeAll();
        }
      }),
      // A run makes two servers over a fresh keyspace: on Cassandra that is seconds, so fewer runs there.
      { numRuns: Number(process.env.COUNT_MODEL_RUNS ?? (target.name === 'SQLite' ? 25 : 8)), seed: 24_2026 },
    );
  }, 300_000);
});
