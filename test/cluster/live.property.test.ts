/**
 * Live connections on a simulated cluster: one instance holds subscriptions to a
 * timeline, a list, a meeting and the suspensions, and polls; the others write, with
 * skewed clocks, logged batches landing one partition at a time, late writes and a
 * crash. After settling, every subscription received every change once (one per
 * item), a post's addition before its deletion, a suspension before its lifting, a
 * list's changes in the ledger's order; a client applying them holds what the server
 * shows; and resuming from any change's cursor on another instance gives exactly the
 * changes after it. With some of the writers' batches landing minutes past the window
 * (`lateLandingMs`), subscribers on two servers each get every change the log
 * holds from their start on, once per item, once the trailing passes have run.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { listFeedOf, type ListItem } from '../../src/features/lists/lists.js';
import { SUSPENSIONS_FEED } from '../../src/features/suspensions/suspension-sagas.js';
import { postsFeedOf } from '../../src/features/timeline/timeline.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { decodeFeedCursor } from '../../src/live/feed-cursor.js';
import { readFeed } from '../../src/live/change-log.js';
import { StoreOutcomeUnknownError } from '../../src/store/port.js';
import type { Delivery, FeedSpec, LiveHub } from '../../src/live/live-hub.js';
import { collectDeliveries } from '../support/live-client.js';
import { assertSim, crashPoint, offsets, runAll, scheduled } from '../support/sim-arbitraries.js';
import { SimCluster, type Outcome, type SimInstance } from '../support/sim-cluster.js';
import { createListApplier } from '../../src/composition-root.js';

const USERS = 3;
const ITEMS = 3;

/** Poll a hub every few real ms until stopped (a server's poll timer, quickened). */
function pollLoop(hub: LiveHub): () => Promise<void> {
  let running = true;
  const loop = (async () => {
    while (running) {
      await hub.pollOnce();
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
  })();
  return async () => {
    running = false;
    await loop;
  };
}

const settleTicks = () => new Promise((resolve) => setTimeout(resolve, 30));

/** Each item at most once. */
function itemsOf(deliveries: readonly Delivery[]): string[] {
  return deliveries.map((d) => d.change.item);
}

/** A subscription resumed from `cursor` on `hub`: what it gives once caught up. */
async function resumed(instance: SimInstance, spec: FeedSpec, cursor: string): Promise<string[]> {
  const hub = instance.services.live;
  const position = decodeFeedCursor(instance.services.codec, spec.feed, cursor);
  if (!position) throw new Error('undecodable cursor');
  const got = collectDeliveries(hub.subscribe(spec, { kind: 'after', position }));
  await hub.pollOnce();
  await settleTicks();
  await hub.pollOnce();
  await settleTicks();
  return itemsOf(got);
}

/** The operations the writers run, on a timeline, a list, a meeting and the suspensions. */
const liveOps = fc.array(
  fc.record({
    ...scheduled,
    what: fc.constantFrom('post', 'unpost', 'add', 'move', 'remove', 'accept', 'suspend', 'lift'),
    n: fc.nat(9),
  }),
  { minLength: 4, maxLength: 16 },
);

/**
 * Users, a list with items and a meeting, made on `watcher` and settled, then the clock
 * moved past the skew bound: subscriptions made next start after all of it.
 */
async function liveFixture(cluster: SimCluster, watcher: SimInstance) {
  const setup = await watcher.run(async (ctx) => {
    const users: string[] = [];
    for (let i = 0; i < USERS; i++) users.push((await ctx.users.create(aUser())).id);
    const list = await ctx.lists.create('live', users[0]!);
    const items: string[] = [];
    for (let i = 0; i < ITEMS; i++) items.push((await ctx.lists.add(list.listId, `item ${i}`)).itemId);
    const meeting = await ctx.meetings.create({ title: 'live' }, users[0]!);
    return { users, listId: list.listId, items, meetingId: meeting.meetingId };
  });
  if (setup.kind !== 'ok') throw new Error('setup failed');
  const { users, listId, meetingId } = setup.value;
  await cluster.settle({ rounds: 1 });
  // Past the skew bound: the subscriptions start after everything above.
  cluster.time.advance(5_000);
  const held = await watcher.run((ctx) => ctx.lists.items(listId, { first: 50 }));
  const meetingFeed = await watcher.run((ctx) => ctx.meetings.feed(meetingId));
  if (held.kind !== 'ok' || meetingFeed.kind !== 'ok') throw new Error('setup failed');
  const specs = { posts: postsFeedOf(users[0]!), list: listFeedOf(listId), meeting: meetingFeed.value, suspensions: { feed: SUSPENSIONS_FEED } };
  return { ...setup.value, held: held.value, specs, posts: [] as string[] };
}

/** Subscriptions from now to each feed of the fixture, on `hub`: what each received. */
function subscribeAll(hub: LiveHub, specs: Awaited<ReturnType<typeof liveFixture>>['specs']) {
  return {
    posts: collectDeliveries(hub.subscribe(specs.posts, { kind: 'now' })),
    list: collectDeliveries(hub.subscribe(specs.list, { kind: 'now' })),
    meeting: collectDeliveries(hub.subscribe(specs.meeting, { kind: 'now' })),
    suspensions: collectDeliveries(hub.subscribe(specs.suspensions, { kind: 'now' })),
  };
}

/** Run each operation on its instance; the posts made are noted in the fixture (for `unpost`). */
async function runLiveOps(
  cluster: SimCluster,
  fixture: Awaited<ReturnType<typeof liveFixture>>,
  ops: ReadonlyArray<{ instance: number; startMs: number; what: string; n: number }>,
): Promise<Array<Outcome<void>>> {
  const { users, listId, items, meetingId, posts } = fixture;
  return runAll(cluster, ops, (op, instance) =>
    instance.run(async (ctx) => {
      const user = users[op.n % USERS]!;
      const item = items[op.n % ITEMS]!;
      switch (op.what) {
        case 'post':
          posts.push((await ctx.timeline.createPost(users[0]!, `post ${op.n}`)).postId);
          return;
        case 'unpost': {
          const postId = posts[op.n % Math.max(1, posts.length)];
          if (postId) await ctx.timeline.deletePost(users[0]!, { authorId: users[0]!, postId });
          return;
        }
        case 'add':
          await ctx.lists.add(listId, `new ${op.n}`);
          return;
        case 'move':
          await ctx.lists.move(listId, item, { toEnd: op.n % 2 ? 'TOP' : 'BOTTOM' });
          return;
        case 'remove':
          await ctx.lists.remove(listId, item);
          return;
        case 'accept':
          await ctx.meetings.accept(meetingId, user);
          return;
        case 'suspend':
          await ctx.suspensions.suspend({ userId: user, reason: `by ${instance.name}` }, new Date(cluster.time.now()));
          return;
        case 'lift':
          await ctx.suspensions.unsuspend(user);
          return;
      }
    }),
  );
}

describe('live connections on a simulated cluster', () => {
  it('give a subscriber from now no list change a page read before it showed pending, whatever the clocks of the servers that made and applied them', async () => {
    // One writer's clock is a whole skew bound (2 s) behind the watcher's, the other's with it.
    const cluster = await SimCluster.create({ seed: 7, offsetsMs: [1_000, -1_000, 1_000] });
    const [watcher, behind, ahead] = [cluster.at(0), cluster.at(1), cluster.at(2)];
    try {
      const made = await watcher.run(async (ctx) => {
        const owner = (await ctx.users.create(aUser())).id;
        return (await ctx.lists.create('pending', owner)).listId;
      });
      if (made.kind !== 'ok') throw new Error('setup failed');
      const listId = made.value;
      await cluster.settle({ rounds: 1 });
      // The writers' appliers do not run: what they append stays pending until drained below.
      behind.applier.stop();
      ahead.applier.stop();
      for (const [at, label] of [[behind, 'made behind'], [ahead, 'made ahead']] as const) {
        if ((await at.run((ctx) => ctx.lists.add(listId, label))).kind !== 'ok') throw new Error('add failed');
      }
      // Beyond twice the skew bound: by every clock, both were made before the subscription.
      cluster.time.advance(4_500);
      const page = await watcher.run((ctx) => ctx.lists.items(listId, { first: 50 }));
      if (page.kind !== 'ok') throw new Error('read failed');
      expect(page.value.edges.map((e) => e.node.label)).toEqual(['made behind', 'made ahead']);
      const hub = watcher.services.live;
      const spec = listFeedOf(listId);
      const got = collectDeliveries(hub.subscribe(spec, { kind: 'now' }));
      cluster.time.advance(1);
      // Made just after, on the server whose clock is behind: still after the subscription's start.
      if ((await behind.run((ctx) => ctx.lists.add(listId, 'made after'))).kind !== 'ok') throw new Error('add failed');
      // The server whose clock is ahead applies all three: each logged after the subscription began.
      expect(await createListApplier(ahead.services).drain(listId)).toBe(3);
      for (let round = 0; round < 3; round++) {
        cluster.time.advance(1_000);
        await hub.pollOnce();
        await settleTicks();
      }
      expect(got.map((d) => [d.change.kind, d.change.payload.label])).toEqual([['ADDED', 'made after']]);
      // Resumed on another server from that change's cursor: nothing more.
      expect(await resumed(behind, spec, got[0]!.cursor)).toEqual([]);
    } finally {
      await cluster.close();
    }
  });

  it('deliver every change once, in order per item, and resume exactly on another server', async () => {
    await assertSim(
      'live',
      fc.asyncProperty(
        fc.integer(),
        offsets,
        crashPoint,
        liveOps,
        fc.nat(),
        async (seed, offsetsMs, crash, ops, cut) => {
          // Instance 0 subscribes and is never crashed; the others write.
          const cluster = await SimCluster.create({ seed, offsetsMs: [0, ...offsetsMs] });
          const watcher = cluster.at(0);
          const writers = (i: number): SimInstance => cluster.at(1 + (i % offsetsMs.length));
          try {
            const fixture = await liveFixture(cluster, watcher);
            const { users, listId, meetingId, held, specs } = fixture;
            const hub = watcher.services.live;
            const got = subscribeAll(hub, specs);
            const stopPolling = pollLoop(hub);
            if (crash) writers(crash.instance).store.crashBeforeCall(crash.beforeCall);
            await runLiveOps(cluster, fixture, ops.map((op, i) => ({ ...op, instance: 1 + (i % offsetsMs.length) })));
            await cluster.settle();
            for (let round = 0; round < 3; round++) {
              await hub.pollOnce();
              await settleTicks();
            }
            await stopPolling();

            // Once: no change twice, no item twice.
            for (const [name, deliveries] of Object.entries(got)) {
              const ids = deliveries.map((d) => d.change.id);
              expect(new Set(ids).size, `${name}: a change twice`).toBe(ids.length);
              expect(new Set(itemsOf(deliveries)).size, `${name}: an item twice`).toBe(deliveries.length);
            }
            // Timeline: a post's addition before its deletion; the live posts are the ones stored.
            const shown = new Set<string>();
            for (const d of got.posts) {
              const postId = d.change.payload.postId as string;
              if (d.change.kind === 'added') shown.add(postId);
              else {
                expect(shown.has(postId), `deleted ${postId} before it was added`).toBe(true);
                shown.delete(postId);
              }
            }
            const stored = await watcher.run((ctx) => ctx.timeline.posts(users[0]!, { first: 100 }));
            if (stored.kind !== 'ok') throw new Error('read failed');
            // Every post the author has was made after the subscription began (acknowledged or not).
            expect([...shown].sort(), 'posts').toEqual(stored.value.edges.map((e) => e.node.postId).sort());
            // Meeting: exactly the users who accepted, each once.
            const accepted = await watcher.run((ctx) => ctx.meetings.acceptedBy(meetingId, { first: 50 }));
            if (accepted.kind !== 'ok') throw new Error('read failed');
            expect(got.meeting.map((d) => d.change.payload.userId).sort(), 'acceptors').toEqual(accepted.value.edges.map((e) => e.node.userId).sort());
            // Suspensions: applied in order, the suspended users are the ones the server lists.
            const suspended = new Set<string>();
            for (const d of got.suspensions) {
              if (d.change.kind === 'suspended') suspended.add(d.change.payload.userId as string);
              else suspended.delete(d.change.payload.userId as string);
            }
            const listed = await watcher.run((ctx) => ctx.suspensions.page({ first: 50 }));
            if (listed.kind !== 'ok') throw new Error('read failed');
            expect([...suspended].sort(), 'suspended').toEqual(listed.value.edges.map((e) => e.node.userId).sort());
            // List: a client applying the changes holds the list the server pages.
            let list: Array<Pick<ListItem, 'itemId' | 'label'>> = held.edges.map((e) => ({ itemId: e.node.itemId, label: e.node.label }));
            for (const d of got.list) {
              const p = d.change.payload as { itemId: string; label?: string; previousItemId?: string | null };
              const rest = list.filter((i) => i.itemId !== p.itemId);
              if (d.change.kind === 'REMOVED') list = rest;
              else if (d.change.kind === 'RENAMED') list = list.map((i) => (i.itemId === p.itemId ? { itemId: i.itemId, label: p.label! } : i));
              else {
                const at = p.previousItemId ? rest.findIndex((i) => i.itemId === p.previousItemId) + 1 : 0;
                list = [...rest.slice(0, at), { itemId: p.itemId, label: p.label! }, ...rest.slice(at)];
              }
            }
            const paged = await watcher.run((ctx) => ctx.lists.items(listId, { first: 50 }));
            if (paged.kind !== 'ok') throw new Error('read failed');
            expect(list, 'list').toEqual(paged.value.edges.map((e) => ({ itemId: e.node.itemId, label: e.node.label })));

            // Resuming on another server from any change's cursor gives exactly the later changes.
            const other = cluster.at(1);
            for (const [name, deliveries] of Object.entries(got) as Array<[keyof typeof got, Delivery[]]>) {
              if (deliveries.length === 0) continue;
              const k = cut % deliveries.length;
              expect((await resumed(other, specs[name], deliveries[k]!.cursor)).sort(), `${name} resumed after ${k}`).toEqual(
                itemsOf(deliveries.slice(k + 1)).sort(),
              );
            }
          } finally {
            await cluster.close();
          }
        },
      ),
    );
  }, 180_000);

  it('with writes landing minutes past the window, gives each subscriber on two servers each change once after the trailing passes', async () => {
    let timedOut = 0;
    await assertSim(
      'live-late',
      fc.asyncProperty(fc.integer(), offsets, crashPoint, liveOps, async (seed, offsetsMs, crash, ops) => {
        // Instances 0 and 1 subscribe and are never crashed; the others write, some of
        // their batches landing three minutes past the window.
        const cluster = await SimCluster.create({ seed, offsetsMs: [0, 250, ...offsetsMs], lateLandingMs: 180_000 });
        const watchers = [cluster.at(0), cluster.at(1)];
        try {
          const fixture = await liveFixture(cluster, watchers[0]!);
          cluster.armLate();
          const { specs } = fixture;
          const skewMicros = BigInt(cluster.settings.cluster!.clockSkewMs) * 1000n;
          const subscriptions = watchers.map((w) => ({
            watcher: w,
            // Where its subscriptions start: its clock's now, less the skew bound.
            origin: BigInt(cluster.time.now() + w.offsetMs) * 1000n - skewMicros,
            got: subscribeAll(w.services.live, specs),
          }));
          const stopPolling = watchers.map((w) => pollLoop(w.services.live));
          if (crash) cluster.at(2 + (crash.instance % offsetsMs.length)).store.crashBeforeCall(crash.beforeCall);
          const outcomes = await runLiveOps(cluster, fixture, ops.map((op, i) => ({ ...op, instance: 2 + (i % offsetsMs.length) })));
          timedOut += outcomes.filter((o) => o.kind === 'error' && o.error instanceof StoreOutcomeUnknownError).length;
          // Minutes pass (more than `lateLandingMs`): every late batch lands, far below every poll's floor.
          await cluster.settle({ stepMs: 60_000, rounds: 4 });
          for (let round = 0; round < 3; round++) {
            for (const w of watchers) await w.services.live.pollOnce();
            await settleTicks();
          }
          for (const w of watchers) await w.services.live.latePass({ horizonMs: 3_600_000, intervalMs: 60_000 });
          await settleTicks();
          for (const stop of stopPolling) await stop();

          // Each subscriber got each item of the log from its start on, once, admitted.
          const now = BigInt(cluster.time.now()) * 1000n;
          for (const { watcher, origin, got } of subscriptions) {
            for (const [name, deliveries] of Object.entries(got) as Array<[keyof typeof got, Delivery[]]>) {
              const spec: FeedSpec = specs[name];
              const logged = (await readFeed(cluster.base, spec.feed, origin, now, 10_000)).changes;
              const answers = spec.admit ? await spec.admit(logged) : logged.map(() => 'deliver' as const);
              const owed = new Set(logged.filter((_, i) => answers[i] === 'deliver').map((c) => c.item));
              const ids = new Set(logged.map((c) => c.id));
              const where = `${watcher.name} ${name}`;
              expect(new Set(itemsOf(deliveries)).size, `${where}: an item twice`).toBe(deliveries.length);
              expect(deliveries.filter((d) => !ids.has(d.change.id)), `${where}: a change not in the log`).toEqual([]);
              expect(itemsOf(deliveries).sort(), where).toEqual([...owed].sort());
            }
          }
        } finally {
          await cluster.close();
        }
      }),
    );
    // The runs did make writes time out (and land late).
    expect(timedOut).toBeGreaterThan(0);
  }, 300_000);
});
