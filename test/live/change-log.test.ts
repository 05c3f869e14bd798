/**
 * The change log's layout (issue 39), on every store: `createPost`'s logged batch puts
 * the change's feed row under the partition key value its count already writes, and no
 * pointer, the count's mark standing in (one under the mark's partition key value with
 * `LIVE_COUNTED_POINTERS`), so the change log adds no partition to the batch, and its
 * payload once; and a subscriber
 * resuming from a position of before the upgrade still gets the changes the retired
 * `live_changes` holds, then the new ones, each once.
 */
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { splitMark } from '../../src/background/windowed-job.js';
import { ALL_TABLES, createRequestContext, createServices } from '../../src/composition-root.js';
import { DEFAULT_LIVE_SETTINGS } from '../../src/config.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { legacyLiveChangesTable } from '../../src/live/change-log-tables.js';
import { ChangeClock, createChangeWriter, feedBucketOf, type Change } from '../../src/live/change-log.js';
import { LiveHub } from '../../src/live/live-hub.js';
import { createCursorCodec } from '../../src/paging/cursor.js';
import { MonotonicClock } from '../../src/store/clock.js';
import type { Mutation } from '../../src/store/port.js';
import { microsOfTimeuuid } from '../../src/store/timeuuid.js';
import { BatchRecorder, partitionKeyValue } from '../../bench/without-change-log.js';
import { collectDeliveries } from '../support/live-client.js';
import { describeEachStore, StorePool } from '../support/stores.js';

const settled = () => new Promise((resolve) => setTimeout(resolve, 20));

describeEachStore('the change log on the write path', (target) => {
  const pool = new StorePool(target);
  afterEach(() => pool.disposeAll());

  /** createPost's (and deletePost's) logged batches, recorded, on a server with `countedPointers` as given. */
  async function postBatches(countedPointers: boolean) {
    const { store } = await pool.create();
    await store.ensureTables(ALL_TABLES);
    const recorder = new BatchRecorder(store);
    const services = createServices(
      { cursorSecret: 'change-log-test-secret', suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins', live: { ...DEFAULT_LIVE_SETTINGS, countedPointers } },
      { store: recorder, logger: pino({ level: 'silent' }), clock: new MonotonicClock() },
    );
    const ctx = createRequestContext(services, { username: 'root', isAdmin: true });
    const author = await ctx.users.create(aUser());
    recorder.batches.length = 0;
    const post = await ctx.timeline.createPost(author.id, 'no partition more');
    await ctx.timeline.deletePost(author.id, { authorId: author.id, postId: post.postId });
    expect(recorder.batches).toHaveLength(2);
    const partitionsOf = (batch: readonly Mutation[], tables: (name: string) => boolean) => new Set(batch.filter((m) => tables(m.table.name)).map(partitionKeyValue));
    return { author, batches: recorder.batches, partitionsOf };
  }

  it("writes createPost's change under the partition key value of the post's count and no pointer, its count's mark standing in: no partition more than the post, its count and the verifier's mark", async () => {
    const { author, batches, partitionsOf } = await postBatches(false);
    for (const batch of batches) {
      const feed = partitionsOf(batch, (t) => t === 'live_feed_changes');
      expect(feed).toEqual(new Set([JSON.stringify([['text', `posts:${author.id}`]])]));
      expect(partitionsOf(batch, (t) => t.startsWith('count_') || t === 'connection_counts')).toEqual(feed);
      expect(batch.filter((m) => m.table.name.startsWith('live_')).map((m) => m.table.name)).toEqual(['live_feed_changes']);
      // The mark that stands in names the feed, in the partition the pointer had.
      const marks = batch.filter((m) => m.table.name === 'window_marks');
      expect(marks.map((m) => m.kind === 'upsert' && splitMark(m.row.subject as string).subject)).toEqual([`posts:${author.id}`]);
      const without = partitionsOf(batch, (t) => !t.startsWith('live_'));
      expect({ withoutChangeLog: without.size, withIt: partitionsOf(batch, () => true).size }).toEqual({ withoutChangeLog: 3, withIt: 3 });
    }
  });

  it('writes the pointer of a counted feed too with LIVE_COUNTED_POINTERS, under its mark\'s partition key value, for servers of an earlier build', async () => {
    const { batches, partitionsOf } = await postBatches(true);
    for (const batch of batches) {
      expect(partitionsOf(batch, (t) => t === 'live_change_pointers')).toEqual(partitionsOf(batch, (t) => t === 'window_marks'));
      expect(partitionsOf(batch, () => true).size).toBe(3);
      // The payload travels once: the pointer holds its key alone.
      const pointer = batch.find((m) => m.table.name === 'live_change_pointers');
      expect(pointer?.kind === 'upsert' && Object.keys(pointer.row).sort()).toEqual(['change_id', 'feed', 'hour', 'job', 'shard']);
    }
  });

  it('resumes a position of before the upgrade with the changes the retired live_changes holds, then the new ones, once each', async () => {
    const { store } = await pool.create();
    await store.ensureTables(ALL_TABLES);
    const time = { ms: Date.now() };
    const clock = new MonotonicClock({ now: () => time.ms });
    const writer = createChangeWriter(new ChangeClock(clock), { retentionSeconds: 86_400 });
    const feed = `posts:${aUser().username}`;
    const change = (item: string): Change => ({ feed, id: writer.nextId(), kind: 'added', item, payload: { item } });
    const floor = clock.nowMicros();
    // What a server of the version before wrote: the hour-bucketed feed rows (the shards aside).
    for (const old of [change('old-1'), change('old-2')]) {
      const micros = microsOfTimeuuid(old.id);
      await store.upsert(
        legacyLiveChangesTable,
        { feed, bucket: feedBucketOf(micros), change_id: old.id, kind: old.kind, item: old.item, payload: JSON.stringify(old.payload) },
        { ttl: 86_400 },
      );
    }
    time.ms += 10;
    for (const fresh of [change('new-1'), change('new-2')]) await store.batch(writer.mutations(fresh));
    const hub = new LiveHub({
      store,
      codec: createCursorCodec('change-log-test-secret-0123456789'),
      clock,
      cluster: { clockSkewMs: 1_000, writeTimeoutMs: 2_000 },
      pollMs: 500,
      retentionSeconds: 86_400,
      fanout: 'feeds',
      maxQueued: 1_000,
      logger: pino({ level: 'silent' }),
    });
    const got = collectDeliveries(hub.subscribe({ feed }, { kind: 'after', position: { floor, received: [] } }));
    for (let i = 0; i < 3; i++) {
      time.ms += 2_000;
      await hub.pollOnce();
      await settled();
    }
    hub.stop();
    expect(got.map((d) => d.change.item)).toEqual(['old-1', 'old-2', 'new-1', 'new-2']);
  });
});
