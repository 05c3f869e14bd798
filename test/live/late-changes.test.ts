/**
 * Late, not never (issue #35): a post whose write timed out and landed past the window
 * (`OutcomeFaultStore`'s 'timeout-then-applied', landed by hand) lies below every
 * subscriber's floor, so no poll delivers it; the next trailing pass gives it once to
 * the subscriber on the server that wrote it (reading each feed) and to one on another
 * server (reading the shards), and no pass gives again what a poll delivered. A change
 * that lands later than the longest horizon is not delivered (the documented limit),
 * and a subscription resumed from a cursor is owed the late changes above that cursor's
 * floor, not those below it.
 */
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ALL_TABLES, createRequestContext, createServices, type Services } from '../../src/composition-root.js';
import { DEFAULT_LIVE_SETTINGS, type LatePass } from '../../src/config.js';
import { postsFeedOf } from '../../src/features/timeline/timeline.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { changeKey, decodeFeedCursor } from '../../src/live/feed-cursor.js';
import type { Delivery, Fanout, LatePassReport } from '../../src/live/live-hub.js';
import { MonotonicClock } from '../../src/store/clock.js';
import { StoreOutcomeUnknownError } from '../../src/store/port.js';
import type { StoreCall } from '../../src/store/store-decorator.js';
import { OutcomeFaultStore } from '../support/faulty-store.js';
import { collectDeliveries } from '../support/live-client.js';
import { describeEachStore, StorePool, type StoreUnderTest } from '../support/stores.js';

const HOUR: LatePass = { horizonMs: 3_600_000, intervalMs: 60_000 };
/** Past the window (CLOCK_SKEW_MS + STORE_WRITE_TIMEOUT_MS = 3 s) and past a poll's reach. */
const PAST_THE_WINDOW_MS = 10_000;

/** The batch that writes a post and its change. */
const postBatch = (call: StoreCall) => call.operation === 'batch' && call.tables.includes('live_feed_changes');

/** Let the hubs' pushes and the collectors' pulls run. */
const settled = () => new Promise((resolve) => setTimeout(resolve, 20));

const contents = (deliveries: readonly Delivery[]) => deliveries.map((d) => d.change.payload.content);

describeEachStore('late changes reach live subscribers through the trailing passes', (target) => {
  const pool = new StorePool(target);
  // A virtual clock both servers share: the test moves it past the window and the horizon.
  const time = { ms: Date.now() };
  let subject: StoreUnderTest;
  let faults: OutcomeFaultStore;
  let a: Services;
  let b: Services;

  beforeAll(async () => {
    subject = await pool.create({ clock: new MonotonicClock({ now: () => time.ms }) });
    await subject.store.ensureTables(ALL_TABLES);
    faults = new OutcomeFaultStore(subject.store);
    const server = (store: typeof subject.store, fanout: Fanout) =>
      createServices(
        {
          cursorSecret: 'late-changes-test-secret-0123456789',
          suspensionBucket: 'month',
          acceptanceStrategy: 'first-write-wins',
          cluster: { clockSkewMs: 1_000, writeTimeoutMs: 2_000, latePasses: [HOUR] },
          live: { ...DEFAULT_LIVE_SETTINGS, fanout },
        },
        { store, logger: pino({ level: 'silent' }), clock: new MonotonicClock({ now: () => time.ms }) },
      );
    // A writes through the faulty path and reads each feed; B reads the shards.
    a = server(faults, 'feeds');
    b = server(subject.store, 'shards');
  }, target.ddlTimeoutMs);
  afterAll(async () => {
    a?.live.stop();
    b?.live.stop();
    await pool.disposeAll();
  });

  const ctx = (services: Services) => createRequestContext(services, { username: 'root', isAdmin: true });

  /** A new author, followed by a subscriber on each server. */
  async function followedAuthor() {
    const author = (await ctx(a).users.create(aUser())).id;
    time.ms += 5_000;
    const spec = postsFeedOf(author);
    return { author, spec, onA: collectDeliveries(a.live.subscribe(spec, { kind: 'now' })), onB: collectDeliveries(b.live.subscribe(spec, { kind: 'now' })) };
  }

  /** Both servers poll, the clock moving on between polls (floors rise behind it). */
  async function pollBoth(rounds = 3): Promise<void> {
    for (let i = 0; i < rounds; i++) {
      time.ms += PAST_THE_WINDOW_MS / rounds;
      await a.live.pollOnce();
      await b.live.pollOnce();
    }
    await settled();
  }

  /** A post whose write times out on server A, its batch held back. */
  async function postLost(author: string, content: string): Promise<void> {
    faults.faultNextWrite('timeout-then-applied', postBatch);
    // The store's answer; the API shows it as OUTCOME_UNKNOWN.
    await expect(ctx(a).timeline.createPost(author, content)).rejects.toBeInstanceOf(StoreOutcomeUnknownError);
  }

  async function passBoth(pass: LatePass = HOUR): Promise<[LatePassReport, LatePassReport]> {
    const reports: [LatePassReport, LatePassReport] = [await a.live.latePass(pass), await b.live.latePass(pass)];
    await settled();
    return reports;
  }

  it('gives a change that landed past the window, once, to a subscriber on each server at the next pass, and nothing a poll gave', async () => {
    const { author, onA, onB } = await followedAuthor();
    await ctx(b).timeline.createPost(author, 'on time');
    await pollBoth();
    expect([contents(onA), contents(onB)]).toEqual([['on time'], ['on time']]);

    await postLost(author, 'landed late');
    await pollBoth();
    await faults.land();
    // Below every floor now: the polls do not see it.
    await pollBoth();
    expect([contents(onA), contents(onB)]).toEqual([['on time'], ['on time']]);

    const [passA, passB] = await passBoth();
    expect([contents(onA), contents(onB)]).toEqual([
      ['on time', 'landed late'],
      ['on time', 'landed late'],
    ]);
    expect({ a: [passA.late, passA.delivered], b: [passB.late, passB.delivered] }).toEqual({ a: [1, 1], b: [1, 1] });
    expect([passA.mode, passB.mode]).toEqual(['feeds', 'shards']);
    // Its cursor is the subscriber's position when it was given: the late id below its floor.
    for (const deliveries of [onA, onB]) {
      const late = deliveries[1]!;
      const position = decodeFeedCursor(a.codec, late.change.feed, late.cursor)!;
      expect(BigInt(changeKey(late.change.id).split(':')[0]!) < position.floor).toBe(true);
    }

    // Further passes and polls give nothing again.
    await passBoth();
    await pollBoth();
    await passBoth();
    expect([contents(onA), contents(onB)]).toEqual([
      ['on time', 'landed late'],
      ['on time', 'landed late'],
    ]);
  });

  it('does not deliver a change that lands later than the longest horizon (the documented limit)', async () => {
    const { author, onA, onB } = await followedAuthor();
    await postLost(author, 'beyond the horizon');
    await pollBoth();
    time.ms += HOUR.horizonMs + 60_000;
    await pollBoth();
    await faults.land();
    const [passA, passB] = await passBoth();
    expect([passA.late, passB.late]).toEqual([0, 0]);
    expect([contents(onA), contents(onB)]).toEqual([[], []]);
    // It is stored, all the same: a reload of the connection shows it.
    expect((await ctx(b).timeline.posts(author, { first: 10 })).edges.map((e) => e.node.content)).toEqual(['beyond the horizon']);
  });

  it('owes a subscription resumed from a cursor the late changes above its floor, and not those below', async () => {
    const { author, spec, onA } = await followedAuthor();
    await ctx(b).timeline.createPost(author, 'first');
    await pollBoth();
    await postLost(author, 'below the cursor');
    await pollBoth();
    await ctx(b).timeline.createPost(author, 'second');
    await pollBoth();
    const cursor = onA.at(-1)!.cursor;
    expect(contents(onA)).toEqual(['first', 'second']);

    // The client moves to server B with its last cursor, and the held write lands.
    const resumed = collectDeliveries(b.live.subscribe(spec, { kind: 'after', position: decodeFeedCursor(b.codec, spec.feed, cursor)! }));
    await settled();
    await postLost(author, 'above the cursor');
    await pollBoth();
    await faults.land();
    await pollBoth();
    await passBoth();
    expect(contents(resumed)).toEqual(['above the cursor']);
    expect(contents(onA)).toEqual(['first', 'second', 'below the cursor', 'above the cursor']);
  });
});
