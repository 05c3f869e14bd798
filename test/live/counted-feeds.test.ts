/**
 * Counted feeds (issue 39): a change to a feed named as a count key (`posts:<authorId>`)
 * writes no pointer, the count's mark in the same batch standing in for it, on every
 * store. A hub reading the shards finds such a change by its mark alone; a cluster where
 * one server still writes pointers (`LIVE_COUNTED_POINTERS`) and one does not delivers
 * every change once on both; a post that lands after the floor passed it is delivered
 * once, by a trailing pass reading the shards.
 */
import pino from 'pino';
import { JOB_WINDOW_MS, windowOf } from '../../src/background/windowed-job.js';
import { afterEach, expect, it } from 'vitest';
import { ALL_TABLES, createRequestContext, createServices } from '../../src/composition-root.js';
import { DEFAULT_LIVE_SETTINGS, type ClusterSettings } from '../../src/config.js';
import { postsFeedOf } from '../../src/features/timeline/timeline.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { readPointers } from '../../src/live/change-log.js';
import type { Delivery, Fanout } from '../../src/live/live-hub.js';
import { MonotonicClock } from '../../src/store/clock.js';
import type { Mutation, Store } from '../../src/store/port.js';
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';
import { collectDeliveries } from '../support/live-client.js';
import { describeEachStore, StorePool } from '../support/stores.js';

const PASS = { horizonMs: 3_600_000, intervalMs: 60_000 };
const CLUSTER: ClusterSettings = { clockSkewMs: 1_000, writeTimeoutMs: 2_000, latePasses: [PASS] };
const settled = () => new Promise((resolve) => setTimeout(resolve, 30));

/** A store whose batches are held back while `holding`, until `release` applies them: a write that lands late. */
class HoldingStore extends StoreDecorator {
  holding = false;
  private readonly held: Mutation[][] = [];
  protected around<T>(_call: StoreCall, run: () => Promise<T>): Promise<T> {
    return run();
  }
  override batch(mutations: readonly Mutation[]): Promise<void> {
    if (!this.holding) return super.batch(mutations);
    this.held.push([...mutations]);
    return Promise.resolve();
  }
  async release(): Promise<void> {
    for (const batch of this.held.splice(0)) await super.batch(batch);
  }
}

/** What one delivery says, in the timeline's terms. */
const said = (d: Delivery) => `${d.change.kind} ${d.change.payload.postId as string}`;

describeEachStore('counted feeds: the count mark as the pointer', (target) => {
  const pool = new StorePool(target);
  afterEach(() => pool.disposeAll());

  /** One store, a clock the test moves, and servers over them. */
  async function aCluster() {
    const { store } = await pool.create();
    await store.ensureTables(ALL_TABLES);
    const time = { ms: Date.now() };
    const server = (options: { countedPointers?: boolean; fanout?: Fanout; via?: Store } = {}) => {
      const services = createServices(
        {
          cursorSecret: 'counted-feeds-test-secret-0123456789',
          suspensionBucket: 'month',
          acceptanceStrategy: 'first-write-wins',
          cluster: CLUSTER,
          live: { ...DEFAULT_LIVE_SETTINGS, fanout: options.fanout ?? 'shards', countedPointers: options.countedPointers ?? false },
        },
        { store: options.via ?? store, logger: pino({ level: 'silent' }), clock: new MonotonicClock({ now: () => time.ms }) },
      );
      const ctx = () => createRequestContext(services, { username: 'root', isAdmin: true });
      return { services, ctx };
    };
    /** Move the clock and poll every hub given, `times` times. */
    const pollAll = async (hubs: ReadonlyArray<{ pollOnce(): Promise<unknown> }>, times = 1, stepMs = 500) => {
      for (let i = 0; i < times; i++) {
        time.ms += stepMs;
        for (const hub of hubs) await hub.pollOnce();
      }
      await settled();
    };
    return { store, time, server, pollAll };
  }

  it('delivers to a hub reading the shards a post found by its count mark alone, once, and reads no feed for it once every subscriber has it', async () => {
    const { store, time, server, pollAll } = await aCluster();
    const writer = server();
    const author = await writer.ctx().users.create(aUser());
    // At the start of a count window (5 s): the marks stay above the floor for the polls below.
    time.ms = windowOf(time.ms) + JOB_WINDOW_MS;
    const got = collectDeliveries(writer.services.live.subscribe(postsFeedOf(author.id), { kind: 'now' }));
    time.ms += 10;
    const first = await writer.ctx().timeline.createPost(author.id, 'one');
    const second = await writer.ctx().timeline.createPost(author.id, 'two');
    await writer.ctx().timeline.deletePost(author.id, { authorId: author.id, postId: first.postId });
    // No pointer names them: only the count's marks do.
    const now = BigInt(time.ms) * 1000n;
    expect((await readPointers(store, now - 60_000_000n, now + 60_000_000n, 1_000)).pointers).toEqual([]);
    await pollAll([writer.services.live], 6);
    expect(got.map(said)).toEqual([`added ${first.postId}`, `added ${second.postId}`, `deleted ${first.postId}`]);
    // Their marks still lie above the floor, but their tags name changes every subscriber holds: no feed is read.
    time.ms += 10;
    const report = await writer.services.live.pollOnce();
    expect(report).toMatchObject({ mode: 'shards', feeds: 1, delivered: 0 });
    expect(report.rows).toBeGreaterThanOrEqual(3);
    expect(report.reads).toBe(8);
  });

  it('delivers every change once on both servers of a mixed cluster, one writing the pointers of counted feeds and one not, in either layout', async () => {
    const { store, time, server, pollAll } = await aCluster();
    const upgraded = server({ fanout: 'shards' });
    const rolling = server({ fanout: 'feeds', countedPointers: true });
    const author = await upgraded.ctx().users.create(aUser());
    const onUpgraded = collectDeliveries(upgraded.services.live.subscribe(postsFeedOf(author.id), { kind: 'now' }));
    const onRolling = collectDeliveries(rolling.services.live.subscribe(postsFeedOf(author.id), { kind: 'now' }));
    time.ms += 10;
    const posts = [];
    for (let i = 0; i < 6; i++) {
      const by = i % 2 === 0 ? upgraded : rolling;
      posts.push(await by.ctx().timeline.createPost(author.id, `post ${i}`));
      await pollAll([upgraded.services.live, rolling.services.live], 1, 200);
    }
    await rolling.ctx().timeline.deletePost(author.id, { authorId: author.id, postId: posts[0]!.postId });
    // Later by the clock: two servers' ids of one microsecond order by their node, not by call.
    time.ms += 1;
    await upgraded.ctx().timeline.deletePost(author.id, { authorId: author.id, postId: posts[1]!.postId });
    await pollAll([upgraded.services.live, rolling.services.live], 12);
    const expected = [...posts.map((p) => `added ${p.postId}`), `deleted ${posts[0]!.postId}`, `deleted ${posts[1]!.postId}`];
    expect(onUpgraded.map(said)).toEqual(expected);
    expect(onRolling.map(said)).toEqual(expected);
    // What a server of the earlier build reads: the pointers of the rolling server's changes alone.
    const now = BigInt(time.ms) * 1000n;
    const pointers = (await readPointers(store, now - 60_000_000n, now + 60_000_000n, 1_000)).pointers;
    expect(pointers.length).toBe(4);
  });

  it('delivers once, by a trailing pass reading the shards, a post whose batch lands after the floor passed it', async () => {
    const { store, time, server, pollAll } = await aCluster();
    const reader = server({ fanout: 'shards' });
    const via = new HoldingStore(store);
    const writer = server({ via });
    const author = await reader.ctx().users.create(aUser());
    const got = collectDeliveries(reader.services.live.subscribe(postsFeedOf(author.id), { kind: 'now' }));
    time.ms += 10;
    via.holding = true;
    const late = await writer.ctx().timeline.createPost(author.id, 'late');
    via.holding = false;
    const onTime = await writer.ctx().timeline.createPost(author.id, 'on time');
    // Well past the window: the floor passes the late post's id and its mark's window.
    await pollAll([reader.services.live], 30);
    await via.release();
    // Its mark alone names it: no pointer.
    const now = BigInt(time.ms) * 1000n;
    expect((await readPointers(store, now - 600_000_000n, now + 60_000_000n, 1_000)).pointers).toEqual([]);
    await pollAll([reader.services.live], 4);
    expect(got.map(said)).toEqual([`added ${onTime.postId}`]);
    const pass = await reader.services.live.latePass(PASS);
    await settled();
    expect(pass).toMatchObject({ mode: 'shards', late: 1, delivered: 1 });
    expect(got.map(said)).toEqual([`added ${onTime.postId}`, `added ${late.postId}`]);
    expect(await reader.services.live.latePass(PASS)).toMatchObject({ late: 0, delivered: 0 });
    await settled();
    expect(got).toHaveLength(2);
  });
});
