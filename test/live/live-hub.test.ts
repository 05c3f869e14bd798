/**
 * The live hub on the embedded store, driven poll by poll with clocks the test moves:
 * one read per feed per poll whatever the number of subscribers (and in the shards a
 * fixed number of pointer reads whatever the number of feeds, then one read per feed
 * that changed), changes that land late still delivered
 * once (past the window too, by the trailing passes), positions that resume exactly,
 * expiry, and a consumer too slow to keep.
 */
import fc from 'fast-check';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { POINTER_SHARDS, liveChangePointersTable, liveTables } from '../../src/live/change-log-tables.js';
import { ChangeClock, createChangeWriter, type Change } from '../../src/live/change-log.js';
import { changeKey, decodeFeedCursor, encodeFeedCursor } from '../../src/live/feed-cursor.js';
import type { LatePass } from '../../src/config.js';
import { windowedJobTables } from '../../src/background/windowed-job.js';
import { CursorExpiredError, LiveHub, type Delivery, type Fanout, type FeedSpec, type LatePassReport } from '../../src/live/live-hub.js';
import { createCursorCodec } from '../../src/paging/cursor.js';
import { MonotonicClock } from '../../src/store/clock.js';
import type { Store } from '../../src/store/port.js';
import { CountingStore } from '../../src/store/store-decorator.js';
import { collectDeliveries } from '../support/live-client.js';
import { memorySqliteStore } from '../support/stores.js';

const codec = createCursorCodec('live-hub-test-secret-0123456789');
const CLUSTER = { clockSkewMs: 1_000, writeTimeoutMs: 2_000 };

/** A hub and writers over one in-memory store, with a wall clock the test moves. */
async function aHub(options: { fanout?: Fanout; maxQueued?: number; retentionSeconds?: number; latePasses?: readonly LatePass[]; onLatePass?: (report: LatePassReport) => void } = {}) {
  // Off every bucket's edge: a window reaches back into no earlier partition.
  const time = { ms: Date.UTC(2026, 5, 1, 12, 32) };
  const base = memorySqliteStore({ now: () => time.ms });
  // The count marks too: a poll of the shards reads them beside the pointers.
  await base.ensureTables([...liveTables, ...windowedJobTables]);
  const counted = new CountingStore(base);
  /** A server's hub over `store` (another server's: over the same base store). */
  const server = (store: Store) =>
    new LiveHub({
      store,
      codec,
      clock: new MonotonicClock({ now: () => time.ms }),
      cluster: options.latePasses ? { ...CLUSTER, latePasses: options.latePasses } : CLUSTER,
      pollMs: 500,
      retentionSeconds: options.retentionSeconds ?? 86_400,
      fanout: options.fanout ?? 'feeds',
      maxQueued: options.maxQueued ?? 1_000,
      logger: pino({ level: 'silent' }),
      onLatePass: options.onLatePass,
    });
  const hub = server(counted);
  /** A writer whose clock is `offsetMs` off the true time. */
  const writer = (offsetMs = 0) => createChangeWriter(new ChangeClock(new MonotonicClock({ now: () => time.ms + offsetMs })), { retentionSeconds: 86_400 });
  const write = async (w: ReturnType<typeof writer>, feed: string, item: string, id = w.nextId()): Promise<Change> => {
    const change: Change = { feed, id, kind: 'added', item, payload: { item } };
    await base.batch(w.mutations(change));
    return change;
  };
  return { time, base, counted, hub, server, writer, write };
}

/** Let the hub's pushes and the collectors' pulls run. */
const settled = () => new Promise((resolve) => setTimeout(resolve, 20));

/** A subscription pulled continuously; `take()` hands over (and forgets) what arrived, once settled. */
function collect(iterator: AsyncIterableIterator<Delivery>) {
  const got = collectDeliveries(iterator);
  return {
    async take(): Promise<Delivery[]> {
      await settled();
      return got.splice(0);
    },
    /** What arrived so far (after `settled()`), forgotten as it is read. */
    taken: (): Delivery[] => got.splice(0),
  };
}

const items = (deliveries: readonly Delivery[]) => deliveries.map((d) => d.change.item);

describe('the live hub', () => {
  it('reads a feed once per poll whether it has 1 subscriber or 1,000, and hands each of them every change', async () => {
    const { hub, writer, write, counted, time } = await aHub();
    const spec: FeedSpec = { feed: 'posts:one' };
    const first = collect(hub.subscribe(spec, { kind: 'now' }));
    time.ms += 10;
    await write(writer(), spec.feed, 'a');
    const before = counted.roundTrips;
    const alone = await hub.pollOnce();
    const readsAlone = counted.roundTrips - before;
    expect(items(await first.take())).toEqual(['a']);

    // Later than the skew bound after 'a': the newcomers start after it.
    time.ms += 2_000;
    const many = Array.from({ length: 999 }, () => collect(hub.subscribe(spec, { kind: 'now' })));
    time.ms += 10;
    await write(writer(), spec.feed, 'b');
    const again = counted.roundTrips;
    const crowded = await hub.pollOnce();
    expect({ reads: counted.roundTrips - again, reported: crowded.reads, delivered: crowded.delivered }).toEqual({ reads: readsAlone, reported: alone.reads, delivered: 1_000 });
    expect(readsAlone).toBe(1);
    expect(items(await first.take())).toEqual(['b']);
    for (const s of many) expect(items(s.taken())).toEqual(['b']);
  });

  it('delivers a change that lands behind ones already delivered (a writer whose clock is behind), once', async () => {
    const { hub, writer, write, time } = await aHub();
    const spec: FeedSpec = { feed: 'posts:late' };
    const sub = collect(hub.subscribe(spec, { kind: 'now' }));
    const behind = writer(-800);
    time.ms += 900;
    const lateId = behind.nextId(); // chosen now, lands after the next poll
    await write(writer(), spec.feed, 'on time');
    await hub.pollOnce();
    expect(items(await sub.take())).toEqual(['on time']);
    await write(behind, spec.feed, 'late', lateId);
    time.ms += 500;
    await hub.pollOnce();
    time.ms += 500;
    await hub.pollOnce();
    expect(items(await sub.take())).toEqual(['late']);
  });

  it('leaves out of a subscription from now what its feed says was made before it, though logged after, whatever the writers\' clocks, and its cursors resume past it', async () => {
    const { hub, server, base, writer, time } = await aHub();
    // The time a change was made, as the feature knows it (a list's: its transaction's).
    const spec: FeedSpec = { feed: 'list:made', madeAt: (c) => BigInt(c.payload.madeAt as string) };
    const behind = writer(-CLUSTER.clockSkewMs);
    const ahead = writer(CLUSTER.clockSkewMs);
    const madeNow = (w: typeof behind) => w.nextId();
    // Made before the subscription, by the clock of whoever made them, beyond the skew
    // bound by ours; both logged only after it started (an applier behind its appends).
    time.ms -= 2_500;
    const before = [madeNow(behind), madeNow(ahead)];
    time.ms += 2_500;
    const sub = collect(hub.subscribe(spec, { kind: 'now' }));
    time.ms += 1;
    // Made after it started, by a writer a whole skew bound behind: still after its start.
    const after = madeNow(behind);
    // One logger, as a list's applier is: its ids increase in the order it logs.
    const logger = writer();
    const log = async (item: string, madeId: string) => {
      const change: Change = { feed: spec.feed, id: logger.nextId(), kind: 'added', item, payload: { madeAt: changeKey(madeId).split(':')[0]! } };
      await base.batch(logger.mutations(change));
    };
    time.ms += 10;
    await log('made before, behind', before[0]!);
    await log('made after, behind', after);
    // Logged after the change given (its write landed late): its cursor leaves it out too.
    await log('made before, ahead', before[1]!);
    await hub.pollOnce();
    const got = await sub.take();
    expect(items(got)).toEqual(['made after, behind']);
    // Resumed from that change's cursor on another server: the next change only, not
    // the two left out (their ids are above the cursor's floor, which trails the window).
    time.ms += 10;
    await log('made later', madeNow(writer()));
    const other = server(base);
    const position = decodeFeedCursor(codec, spec.feed, got[0]!.cursor)!;
    expect(position.floor).toBeLessThan(BigInt(changeKey(got[0]!.change.id).split(':')[0]!));
    const resumed = collect(other.subscribe(spec, { kind: 'after', position }));
    await other.pollOnce();
    expect(items(await resumed.take())).toEqual(['made later']);
    await hub.pollOnce();
    expect(items(await sub.take())).toEqual(['made later']);
  });

  it('resumes from any change cursor with exactly the changes not yet received, late ones included (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ offsetMs: fc.integer({ min: -900, max: 900 }), delayMs: fc.integer({ min: 0, max: 1_900 }), stepMs: fc.integer({ min: 0, max: 400 }) }), { minLength: 1, maxLength: 12 }),
        fc.nat(),
        async (writes, cut) => {
          const { hub, writer, write, time } = await aHub();
          const spec: FeedSpec = { feed: 'posts:prop' };
          const sub = collect(hub.subscribe(spec, { kind: 'now' }));
          time.ms += 1;
          // Each write takes its id now and lands `delayMs` later; polls run every 500 ms.
          const pending: Array<{ at: number; land: () => Promise<unknown> }> = [];
          for (const [i, w] of writes.entries()) {
            const wr = writer(w.offsetMs);
            const id = wr.nextId();
            pending.push({ at: time.ms + w.delayMs, land: () => write(wr, spec.feed, `c${i}`, id) });
            time.ms += w.stepMs;
          }
          const delivered: Delivery[] = [];
          for (let t = 0; t < 10; t++) {
            for (const p of pending.filter((p) => p.at <= time.ms)) await p.land();
            pending.splice(0, pending.length, ...pending.filter((p) => p.at > time.ms));
            await hub.pollOnce();
            delivered.push(...(await sub.take()));
            time.ms += 500;
          }
          // Every change once.
          expect(items(delivered).sort()).toEqual(writes.map((_, i) => `c${i}`).sort());
          // Resuming after the k-th delivery gives exactly the ones after it.
          const k = cut % delivered.length;
          const resumed = collect(hub.subscribe(spec, { kind: 'after', position: decodeFeedCursor(codec, spec.feed, delivered[k]!.cursor)! }));
          expect(items(await resumed.take()).sort()).toEqual(items(delivered.slice(k + 1)).sort());
        },
      ),
      { numRuns: 40 },
    );
  });

  it('gives every subscriber, once, every change owed to it, however late it lands within the horizon, resumed or not, on either server (property)', async () => {
    // Times step by 10 ms and writers' clocks are off by 5 ms more than a multiple of 10:
    // no change id lies within 5 ms of a subscription's start (now less the skew bound).
    const step = fc.oneof(
      fc.record({ kind: fc.constant('write' as const), offsetMs: fc.integer({ min: -90, max: 89 }).map((n) => n * 10 + 5), landAfter: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 6 })) }),
      fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 2_000 }).map((n) => n * 10) }),
      fc.record({ kind: fc.constantFrom('poll' as const, 'pass' as const), server: fc.nat(1) }),
      fc.record({ kind: fc.constant('subscribe' as const), server: fc.nat(1) }),
      fc.record({ kind: fc.constant('resume' as const), server: fc.nat(1), from: fc.nat(), at: fc.nat() }),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<Fanout>('feeds', 'shards'), fc.array(step, { minLength: 4, maxLength: 40 }), async (fanout, steps) => {
        const { hub, base, server, writer, write, time } = await aHub({ fanout });
        const other = server(base);
        const hubs = [hub, other];
        const spec: FeedSpec = { feed: 'posts:late-prop' };
        const written: Change[] = [];
        const held: Array<{ steps: number; land: () => Promise<Change> }> = [];
        /** Each subscription, and which changes it is owed. */
        const subscriptions: Array<{ got: Delivery[]; owed: (c: Change) => boolean }> = [];
        const micros = (c: Change) => BigInt(changeKey(c.id).split(':')[0]!);
        const landDue = async () => {
          for (const h of held) h.steps--;
          for (const h of held.filter((h) => h.steps < 0)) written.push(await h.land());
          held.splice(0, held.length, ...held.filter((h) => h.steps >= 0));
        };
        subscriptions.push({ got: collectDeliveries(hub.subscribe(spec, { kind: 'now' })), owed: () => true });
        time.ms += 2_000;
        for (const s of steps) {
          if (s.kind === 'write') {
            const w = writer(s.offsetMs);
            const id = w.nextId();
            if (s.landAfter === 0) written.push(await write(w, spec.feed, `c${written.length + held.length}`, id));
            else {
              const item = `c${written.length + held.length}`;
              held.push({ steps: s.landAfter, land: () => write(w, spec.feed, item, id) });
            }
          } else if (s.kind === 'tick') {
            time.ms += s.ms;
            await landDue();
          } else if (s.kind === 'poll') await hubs[s.server]!.pollOnce();
          else if (s.kind === 'pass') await hubs[s.server]!.latePass({ horizonMs: 3_600_000, intervalMs: 60_000 });
          else if (s.kind === 'subscribe') {
            const since = BigInt(time.ms - CLUSTER.clockSkewMs) * 1000n;
            subscriptions.push({ got: collectDeliveries(hubs[s.server]!.subscribe(spec, { kind: 'now' })), owed: (c) => micros(c) >= since });
          } else if (s.kind === 'resume') {
            const from = subscriptions[s.from % subscriptions.length]!.got;
            if (from.length === 0) continue;
            const position = decodeFeedCursor(codec, spec.feed, from[s.at % from.length]!.cursor)!;
            const before = new Set(position.received);
            subscriptions.push({
              got: collectDeliveries(hubs[s.server]!.subscribe(spec, { kind: 'after', position })),
              owed: (c) => micros(c) >= position.floor && !before.has(changeKey(c.id)),
            });
          }
        }
        // Everything lands; the polls move past it; then one pass on each server.
        for (const h of held.splice(0)) written.push(await h.land());
        for (let i = 0; i < 3; i++) {
          time.ms += 4_000;
          for (const h of hubs) await h.pollOnce();
          await settled();
        }
        for (const h of hubs) await h.latePass({ horizonMs: 3_600_000, intervalMs: 60_000 });
        await settled();
        for (const [i, sub] of subscriptions.entries()) {
          const ids = sub.got.map((d) => d.change.id);
          expect(new Set(ids).size, `subscription ${i}: a change twice`).toBe(ids.length);
          expect([...ids].sort(), `subscription ${i}`).toEqual(written.filter(sub.owed).map((c) => c.id).sort());
        }
        hub.stop();
        other.stop();
      }),
      { numRuns: 60 },
    );
  });

  it('gives no late change of an item it already gave (an attempt of a retried write that lands late)', async () => {
    const { hub, writer, write, time } = await aHub();
    const spec: FeedSpec = { feed: 'posts:retried' };
    const sub = collect(hub.subscribe(spec, { kind: 'now' }));
    time.ms += 10;
    const w = writer();
    const firstAttempt = w.nextId();
    await write(w, spec.feed, 'post-1');
    await write(w, spec.feed, 'post-2');
    for (let i = 0; i < 3; i++) {
      time.ms += 4_000;
      await hub.pollOnce();
    }
    expect(items(await sub.take())).toEqual(['post-1', 'post-2']);
    await write(w, spec.feed, 'post-1', firstAttempt); // the first attempt of post-1 lands now
    const report = await hub.latePass({ horizonMs: 3_600_000, intervalMs: 60_000 });
    expect({ late: report.late, got: items(await sub.take()) }).toEqual({ late: 0, got: [] });
  });

  it('gives a subscription that was catching up a late change a pass handled meanwhile, at the next pass, once', async () => {
    const { hub, writer, write, time } = await aHub();
    // Admission that holds its next call until released: the resumed subscriber's catch-up.
    let hold: Promise<void> | null = null;
    let release = () => {};
    const spec: FeedSpec = {
      feed: 'posts:caught-up',
      admit: async (changes) => {
        const gate = hold;
        hold = null;
        await gate;
        return changes.map(() => 'deliver' as const);
      },
    };
    const first = collect(hub.subscribe(spec, { kind: 'now' }));
    time.ms += 10;
    const w = writer();
    await write(w, spec.feed, 'on time');
    const lateId = w.nextId();
    await hub.pollOnce();
    const [onTime] = await first.take();
    expect(onTime?.change.item).toBe('on time');
    time.ms += 10_000;
    await hub.pollOnce();

    hold = new Promise<void>((resolve) => (release = resolve));
    const resumed = collect(hub.subscribe(spec, { kind: 'after', position: decodeFeedCursor(codec, spec.feed, onTime!.cursor)! }));
    await settled(); // its catch-up has read the feed, and waits on admission
    await write(w, spec.feed, 'late', lateId);
    await hub.latePass({ horizonMs: 3_600_000, intervalMs: 60_000 });
    expect(items(await first.take())).toEqual(['late']);
    release();
    await settled();
    expect(items(resumed.taken())).toEqual([]);
    await hub.pollOnce();
    await hub.latePass({ horizonMs: 3_600_000, intervalMs: 60_000 });
    expect(items(await resumed.take())).toEqual(['late']);
    await hub.latePass({ horizonMs: 3_600_000, intervalMs: 60_000 });
    expect([items(await first.take()), items(resumed.taken())]).toEqual([[], []]);
  });

  it('reads a fixed number of pointer partitions per poll whatever the number of feeds, then only the feeds that changed, and delivers the same changes', async () => {
    const { hub, writer, write, time } = await aHub({ fanout: 'shards' });
    const subs = Array.from({ length: 50 }, (_, i) => collect(hub.subscribe({ feed: `posts:f${i}` }, { kind: 'now' })));
    time.ms += 10;
    const w = writer();
    for (let i = 0; i < 50; i += 10) await write(w, `posts:f${i}`, `x${i}`);
    await write(w, 'posts:nobody-here', 'unwatched');
    const report = await hub.pollOnce();
    // 6 pointers (and the count marks' partitions beside them, empty), then the 5 changed feeds of ours (not the unwatched one): 5 changes.
    expect(report).toMatchObject({ mode: 'shards', feeds: 50, reads: 2 * POINTER_SHARDS + 5, rows: 6 + 5, delivered: 5 });
    await settled();
    for (const [i, s] of subs.entries()) expect(items(s.taken())).toEqual(i % 10 === 0 ? [`x${i}`] : []);
    // Again, the changes still in the window: every subscriber has them, so only the pointers are read.
    time.ms += 500;
    expect(await hub.pollOnce()).toMatchObject({ mode: 'shards', feeds: 50, reads: 2 * POINTER_SHARDS, rows: 6, delivered: 0 });
  });

  it('finds in the shards a change whose pointer landed before its feed row once the row lands, once', async () => {
    const { hub, base, writer, time } = await aHub({ fanout: 'shards' });
    const got = collect(hub.subscribe({ feed: 'posts:split' }, { kind: 'now' }));
    time.ms += 10;
    const change: Change = { feed: 'posts:split', id: writer().nextId(), kind: 'added', item: 'split', payload: { item: 'split' } };
    const [row, pointer] = writer().mutations(change);
    // A logged batch is not isolated across partitions: the pointer is seen first.
    expect(pointer!.table).toBe(liveChangePointersTable);
    await base.batch([pointer!]);
    await hub.pollOnce();
    expect(items(await got.take())).toEqual([]);
    time.ms += 500;
    await base.batch([row!]);
    await hub.pollOnce();
    time.ms += 500;
    await hub.pollOnce();
    expect(items(await got.take())).toEqual(['split']);
  });

  it('switches to the shards when many feeds are live and few changes flow, and back when the feeds are few', async () => {
    const { hub, time } = await aHub({ fanout: 'auto' });
    const subs = Array.from({ length: 40 }, (_, i) => hub.subscribe({ feed: `posts:g${i}` }, { kind: 'now' }));
    time.ms += 10;
    const modes: string[] = [];
    for (let i = 0; i < 3; i++) modes.push((await hub.pollOnce()).mode);
    expect(modes).toEqual(['shards', 'shards', 'shards']);
    for (const s of subs.slice(4)) await s.return!();
    expect((await hub.pollOnce()).mode).toBe('feeds');
  });

  it('reads the shards in a trailing pass only where they cost less than the feeds over its span', async () => {
    const pass = { horizonMs: 3_600_000, intervalMs: 60_000 };
    const modes: Array<[number, string, string, number]> = [];
    for (const feeds of [10, 40]) {
      const { hub, time } = await aHub({ fanout: 'auto' });
      // Subscribed at 12:57, then ten minutes of polls, the pass's span across 13:00: one
      // read per feed against two hours of pointer and mark partitions (no feed changed).
      time.ms += 25 * 60_000;
      for (let i = 0; i < feeds; i++) hub.subscribe({ feed: `posts:h${i}` }, { kind: 'now' });
      for (let t = 0; t < 20; t++) {
        time.ms += 30_000;
        await hub.pollOnce();
      }
      const report = await hub.latePass(pass);
      modes.push([feeds, (await hub.pollOnce()).mode, report.mode, report.reads]);
    }
    expect(modes).toEqual([
      [10, 'shards', 'feeds', 10],
      [40, 'shards', 'shards', 2 * 2 * POINTER_SHARDS],
    ]);
  });

  it('runs each trailing pass on its own timer once started, only while a feed is live, and none once stopped', async () => {
    const reports: LatePassReport[] = [];
    const { hub, time } = await aHub({
      latePasses: [
        { horizonMs: 3_600_000, intervalMs: 40 },
        { horizonMs: 10_800_000, intervalMs: 60 },
      ],
      onLatePass: (report) => reports.push(report),
    });
    hub.start();
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(reports).toEqual([]);
    hub.subscribe({ feed: 'posts:timed' }, { kind: 'now' });
    time.ms += 10_000;
    await hub.pollOnce();
    await new Promise((resolve) => setTimeout(resolve, 250));
    hub.stop();
    const horizons = new Set(reports.map((r) => r.horizonMs));
    expect([...horizons].sort((a, b) => a - b)).toEqual([3_600_000, 10_800_000]);
    const made = reports.length;
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(reports.length).toBe(made);
  });

  it('refuses a position older than the retention, and drops a subscriber that does not keep up', async () => {
    const { hub, writer, write, time } = await aHub({ retentionSeconds: 3_600, maxQueued: 2 });
    const spec: FeedSpec = { feed: 'posts:old' };
    expect(() => hub.subscribe(spec, { kind: 'after', position: { floor: BigInt(time.ms - 3_600_000) * 1000n, received: [] } })).toThrow(CursorExpiredError);
    let dropped = 0;
    const slow = hub.subscribe(spec, { kind: 'now' }, () => dropped++);
    time.ms += 10;
    for (const item of ['1', '2', '3']) await write(writer(), spec.feed, item);
    await hub.pollOnce();
    expect(dropped).toBe(1);
    expect(hub.subscriptions).toBe(0);
    expect(await slow.next()).toEqual({ done: true, value: undefined });
  });

  it('keeps a position through its cursor: the floor and the changes above it, signed and bound to the feed', () => {
    const clock = new ChangeClock(new MonotonicClock());
    const ids = [clock.next(), clock.next(), clock.next()];
    const floor = BigInt(changeKey(ids[1]!).split(':')[0]!);
    const position = { floor, received: ids.map(changeKey).filter((k) => BigInt(k.split(':')[0]!) >= floor) };
    const cursor = encodeFeedCursor(codec, 'posts:a', position);
    expect(decodeFeedCursor(codec, 'posts:a', cursor)).toEqual({ floor, received: [...position.received].sort() });
    expect(decodeFeedCursor(codec, 'posts:b', cursor)).toBeNull();
    expect(decodeFeedCursor(codec, 'posts:a', `${cursor.slice(0, -2)}AA`)).toBeNull();
    // With where its subscription from now started (a feed with `madeAt`), kept as well.
    const started = { ...position, madeFrom: floor - 1_000n };
    expect(decodeFeedCursor(codec, 'list:a', encodeFeedCursor(codec, 'list:a', started))).toEqual({ ...started, received: [...position.received].sort() });
    const made = (text: string) => decodeFeedCursor(codec, 'list:a', codec.encodeCursor('live:list:a', ['c', floor.toString(), 'AA', text]));
    expect(made('123')).toEqual({ floor, received: [], madeFrom: 123n });
    expect(made('soon')).toBeNull();
  });
});
