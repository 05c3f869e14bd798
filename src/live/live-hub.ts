/**
 * The live hub of one server process: it polls the change log of every feed that has a
 * subscriber here, once per poll interval, and fans what it reads out to every local
 * subscriber of the feed in memory. The store's load therefore grows with the number
 * of feeds live on this server, never with the number of subscribers (Hasura's
 * multiplexed polling, with clustering-key ranges instead of SQL).
 *
 * Late changes. A change's id is at least its writer's clock when the write was sent
 * (change-log.ts), and a write lands at most STORE_WRITE_TIMEOUT_MS after that, on a
 * server whose clock is at most CLOCK_SKEW_MS off ours: so at our time P every change
 * with an id below P - (skew + write timeout) has landed. Each poll therefore reads from
 * a floor that trails the newest change by that window, and a subscriber skips the
 * changes it already has. After a poll that began at P and read to the end, everything
 * below P - window has been seen: that becomes the subscriber's new floor.
 *
 * Positions. A subscriber's position is its floor and the changes at or above it that it
 * received (feed-cursor.ts); every change delivered carries the position just after it
 * as its cursor, so resuming from it on any server (catch-up reads from the floor, then
 * the subscriber joins the live polls) gives every later change once, in id order within
 * each read. A late delivery (below the floor, by a trailing pass) carries the position
 * the subscriber holds when it is given: its id lies below that position's floor.
 *
 * Trailing passes (issue #35). The window is the normal case, not a promise: a write
 * that timed out can still land much later (batchlog replay, hints up to Cassandra's
 * `max_hint_window`, a coordinator cut off), with its original ids, below every floor.
 * Each pass of `latePassesOf(cluster)` (LATE_WRITE_PASSES) re-reads, every `intervalMs`,
 * each live feed from `horizonMs` back up to its floor, and gives every subscriber here,
 * once, the changes it was owed and not given: late, not never. To know what was given
 * without a set per subscriber, each feed remembers the changes this server's polls and
 * passes have handled over the longest horizon (`handled`, key → item): a change the
 * feed handled was offered to every subscriber attached then (or is still ahead of a
 * newcomer's floor, which the polls will offer it); a change it never handled was given
 * to no subscriber but through that subscriber's own catch-up (`outside`, which also
 * holds what its cursor named). A change handled while a subscriber was catching up is
 * noted as `missed` for it. A late change is owed to a subscriber when its id is at or
 * above where the subscription started on this server (`origin`: "now", or its cursor's
 * floor) and no change of the same item was given. Nothing of this outlives the process,
 * and nothing needs to: subscriptions do not either, and resume from cursors, whose
 * origin is their floor, so a change that lands below a cursor's floor after the cursor
 * was issued is never delivered to the resumed subscription (documented limit, as is a
 * change older than the longest horizon when it lands).
 *
 * Two layouts (change-log-tables.ts). Reading each feed costs one read per feed per poll;
 * reading the shards costs POINTER_SHARDS reads of pointers and as many of the count
 * marks per poll whatever the number of feeds (every change of every feed in the window
 * passes through, as a pointer, or as its count's mark for a counted feed, whose changes
 * carry no pointer: `markSettled`), then one read of each feed of ours that a pointer or
 * mark names, for the payloads. `fanout: 'auto'`
 * weighs the two with the rows and feeds each read last (a row costing 1/ROWS_PER_READ of
 * a read) and switches when the other is clearly cheaper; 'feeds' and 'shards' fix the
 * choice.
 */
import type { Logger } from 'pino';
import { startPeriodicTask, type PeriodicTask } from '../background/periodic-task.js';
import { latePassesOf, type ClusterSettings, type LatePass } from '../config.js';
import type { CursorCodec } from '../paging/cursor.js';
import type { Clock } from '../store/clock.js';
import type { Store } from '../store/port.js';
import { microsOfTimeuuid } from '../store/timeuuid.js';
import { JOB_WINDOW_MS, MARK_TTL_SECONDS } from '../background/windowed-job.js';
import { POINTER_BUCKET_MS, POINTER_SHARDS } from './change-log-tables.js';
import { pointerBucketOf, readFeed, readFeedMarks, readPointedFeeds, type Change, type FeedMark, type LogRead, type Pointer } from './change-log.js';
import { changeKey, encodeFeedCursor, type FeedPosition } from './feed-cursor.js';

/** What a feature says of a change read from its feed: deliver it, never deliver it, or ask again next poll. */
export type Admission = 'deliver' | 'skip' | 'wait';

/** A feed as the hub polls it. */
export interface FeedSpec {
  /** The feed's name in the change log (`posts:<authorId>`, …). */
  readonly feed: string;
  /**
   * Which of the changes read to deliver (all, when absent): a feature's check against
   * its own rows, such as "this acceptance is the one that counted". Called once per
   * change with a final answer; 'wait' asks again at the next poll.
   */
  readonly admit?: (changes: readonly Change[]) => Promise<Admission[]>;
  /**
   * When a change was made (µs): from when a page of the connection shows it. Its id's
   * time when absent. A feature that logs a change after its pages show it (a list's
   * change is logged when the applier applies a transaction that pages showed pending
   * since it was appended) gives the earlier time, so a subscription from now leaves out
   * what a page read before it already held.
   */
  readonly madeAt?: (change: Change) => bigint;
  /**
   * For a feed named as a count key, whose changes carry no pointer (their count's mark
   * stands in, change-log.ts): the tag of the mark a change's batch writes
   * (`countMarkTag`). A poll of the shards then skips a mark whose change every
   * subscriber holds, as it skips a settled pointer; without it, a mark's feed is read
   * at every poll until the mark's window lies below the subscribers' floors.
   */
  readonly markTag?: (change: Change) => string;
}

/** One change handed to a subscriber. */
export interface Delivery {
  readonly change: Change;
  /** The subscriber's position just after this change: resume after it with this. */
  readonly cursor: string;
  /**
   * The same object for every change one read of one feed delivers, to every
   * subscriber: what may share per-read state (DataLoaders) across them.
   */
  readonly batch: object;
}

/**
 * Where a subscription starts: now (by every server's clock: changes made up to the
 * clock-skew bound before may come too), or after a position (a change cursor, or an
 * edge of the connection).
 */
export type FeedStart = { readonly kind: 'now' } | { readonly kind: 'after'; readonly position: FeedPosition };

/** The position is older than the retention: the changes after it may be gone. */
export class CursorExpiredError extends Error {
  override readonly name = 'CursorExpiredError';
}

/** How the hub reads the log. */
export type Fanout = 'auto' | 'feeds' | 'shards';

/** Options of a hub, validated by the configuration. */
export interface LiveHubOptions {
  readonly store: Store;
  readonly codec: CursorCodec;
  /** The process clock: floors are measured on it. */
  readonly clock: Clock;
  readonly cluster: ClusterSettings;
  /** How often feeds are polled (`LIVE_POLL_MS`). */
  readonly pollMs: number;
  /** How long the log keeps a change (`LIVE_RETENTION_S`): older positions are expired. */
  readonly retentionSeconds: number;
  readonly fanout: Fanout;
  /** Changes a subscriber may have waiting before it is dropped as too slow (`onOverflow`). */
  readonly maxQueued: number;
  readonly logger?: Logger;
  /** Told after every poll what it cost (metrics, benchmarks). */
  readonly onPoll?: (poll: PollReport) => void;
  /** Told after every trailing pass what it cost and found (metrics, benchmarks). */
  readonly onLatePass?: (pass: LatePassReport) => void;
}

/** What one poll did. */
export interface PollReport {
  readonly mode: 'feeds' | 'shards';
  readonly feeds: number;
  readonly reads: number;
  readonly rows: number;
  readonly delivered: number;
}

/** What one trailing pass did. */
export interface LatePassReport {
  /** The pass's horizon (ms), as configured. */
  readonly horizonMs: number;
  readonly mode: 'feeds' | 'shards';
  readonly feeds: number;
  /** Store reads the pass made. */
  readonly reads: number;
  readonly rows: number;
  /** Late changes the pass found and gave (to one subscriber or more): landed past the window. */
  readonly late: number;
  /** Late deliveries made (one per subscriber). */
  readonly delivered: number;
}

/**
 * Rows a read costs as much as (the cost model of `fanout: 'auto'`). Measured on the
 * embedded store: a read of an empty feed 43 µs, each row read 2 µs more (JSON payload
 * included); a round trip to Cassandra weighs more against a row, so this prices rows
 * on the dear side, keeping per-feed reads when the cluster writes a lot.
 */
export const ROWS_PER_READ = 20;
/** Rows read per feed or shard partition per read. */
const READ_LIMIT = 1_000;
/** Feed reads a poll keeps in flight at once. */
const READ_CONCURRENCY = 32;
/** In feed mode with many feeds, how often (in polls) the shards are read once to price them. */
const PROBE_EVERY_POLLS = 120;
/** How often (in polls) a poll prunes the memories of what was handled, given, missed. */
const FORGET_EVERY_POLLS = 120;
/** The other layout must cost this fraction of the current one or less before the hub switches. */
const SWITCH_RATIO = 0.8;
/** Reads of one hour of the shards: its pointer partitions and the count marks' beside them. */
const SHARD_READS = 2 * POINTER_SHARDS;

/**
 * Read a range to its end, part by part: a read cut at its limit is continued from where
 * it stopped, so a burst of more changes than one read takes still moves on. `use` sees
 * each part before the next is read (a trailing pass's span stays out of memory); the
 * reads made are returned.
 */
async function forEachPart(
  from: bigint,
  through: bigint,
  read: (from: bigint) => Promise<LogRead & { reads?: number }>,
  use: (part: LogRead) => Promise<void> | void,
): Promise<number> {
  let reads = 0;
  for (let start = from; ; ) {
    const part = await read(start);
    reads += part.reads ?? 1;
    await use(part);
    if (part.completeBelow > through) return reads;
    start = part.completeBelow;
  }
}

/** Read a range to its end, within the poll (forEachPart), as one read. */
async function readToEnd(from: bigint, through: bigint, read: (from: bigint) => Promise<LogRead & { reads?: number }>): Promise<LogRead & { reads: number }> {
  const changes: Change[] = [];
  let completeBelow = from;
  const reads = await forEachPart(from, through, read, (part) => {
    changes.push(...part.changes);
    completeBelow = part.completeBelow;
  });
  return { changes, completeBelow, reads };
}

/** The µs of a change key (feed-cursor.ts's `changeKey`). */
function microsOfKey(key: string): bigint {
  return BigInt(key.slice(0, key.indexOf(':')));
}

/**
 * Change keys with their items (null: a change never delivered, or one whose item is
 * not known yet) and the keys of each item: what a feed handled, or what a subscriber
 * was given outside the feed's reads.
 */
class ItemIndex {
  private readonly items = new Map<string, string | null>();
  private readonly byItem = new Map<string, Set<string>>();

  get size(): number {
    return this.items.size;
  }

  has(key: string): boolean {
    return this.items.has(key);
  }

  get(key: string): string | null | undefined {
    return this.items.get(key);
  }

  /** The keys held for `item`. */
  keysOf(item: string): ReadonlySet<string> | undefined {
    return this.byItem.get(item);
  }

  set(key: string, item: string | null): void {
    this.delete(key);
    this.items.set(key, item);
    if (item === null) return;
    let keys = this.byItem.get(item);
    if (!keys) this.byItem.set(item, (keys = new Set()));
    keys.add(key);
  }

  delete(key: string): void {
    const item = this.items.get(key);
    if (item === undefined) return;
    this.items.delete(key);
    if (item === null) return;
    const keys = this.byItem.get(item)!;
    keys.delete(key);
    if (keys.size === 0) this.byItem.delete(item);
  }

  /**
   * Forget every key below `micros`, then the oldest beyond `cap`: the point (µs) below
   * which the index is no longer complete (`micros` when the cap was not reached).
   */
  forget(micros: bigint, cap: number): bigint {
    for (const key of [...this.items.keys()]) if (microsOfKey(key) < micros) this.delete(key);
    if (this.items.size <= cap) return micros;
    const oldest = [...this.items.keys()].map(microsOfKey).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    // Whole microseconds go, so what is kept is complete from its lowest one.
    const from = oldest[oldest.length - cap]! + 1n;
    for (const key of [...this.items.keys()]) if (microsOfKey(key) < from) this.delete(key);
    return from;
  }
}

/** A subscription's state in the hub. */
class Subscriber implements AsyncIterableIterator<Delivery> {
  floor: bigint;
  /**
   * Where the subscription started on this server (µs): "now", or its cursor's floor.
   * Late changes at or above it are owed to it; none below.
   */
  readonly origin: bigint;
  /**
   * Changes made before this (µs, the feed's `madeAt`) are not given, though logged
   * after: where a subscription from now started, carried on by its cursors (null: none).
   */
  readonly madeFrom: bigint | null;
  /** Changes its feed handled while it was catching up (so not offered to it), by key. */
  readonly missed = new Set<string>();
  /** Changes it was given, or its cursor named, that its feed had not handled: key → item. */
  readonly outside = new ItemIndex();
  /** Where the next catch-up read starts (µs): past the floor once a read was cut at its limit. */
  catchUpFrom: bigint;
  /** Changes received at or above the floor: key → item (null while only the cursor named it). */
  readonly received = new Map<string, string | null>();
  /** Items of `received`, for one delivery per item. */
  readonly items = new Map<string, number>();
  private readonly queue: Delivery[] = [];
  private waiter: ((result: IteratorResult<Delivery>) => void) | null = null;
  private failure: Error | null = null;
  state: 'catching-up' | 'live' | 'closed';

  constructor(
    readonly hub: LiveHub,
    readonly spec: FeedSpec,
    start: FeedPosition,
    catchUp: boolean,
    readonly onOverflow: () => void,
  ) {
    this.floor = start.floor;
    this.origin = start.floor;
    this.madeFrom = spec.madeAt ? (start.madeFrom ?? null) : null;
    this.catchUpFrom = start.floor;
    for (const key of start.received) {
      this.received.set(key, null);
      this.outside.set(key, null);
    }
    this.state = catchUp ? 'catching-up' : 'live';
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Delivery> {
    return this;
  }

  async next(): Promise<IteratorResult<Delivery>> {
    for (;;) {
      if (this.failure) throw this.failure;
      const queued = this.queue.shift();
      if (queued) return { value: queued, done: false };
      if (this.state === 'closed') return { value: undefined, done: true };
      if (this.state === 'catching-up') {
        await this.hub.catchUp(this);
        continue;
      }
      return new Promise((resolve) => (this.waiter = resolve));
    }
  }

  async return(): Promise<IteratorResult<Delivery>> {
    this.close();
    return { value: undefined, done: true };
  }

  async throw(err?: unknown): Promise<IteratorResult<Delivery>> {
    this.close();
    throw err;
  }

  /** Stop: no more deliveries, and leave the feed. */
  close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.hub.detach(this);
    this.wake({ value: undefined, done: true });
  }

  /** End with an error (the next `next()` throws it). */
  fail(err: Error): void {
    this.failure = err;
    this.close();
  }

  /** Hand a change to the consumer, or queue it; too many queued drops the subscriber. */
  push(delivery: Delivery): void {
    if (this.state === 'closed') return;
    if (this.waiter) return this.wake({ value: delivery, done: false });
    this.queue.push(delivery);
    if (this.queue.length > this.hub.maxQueued) {
      // Dropped: what it holds goes, and the consumer learns it from the transport.
      this.queue.length = 0;
      this.close();
      this.onOverflow();
    }
  }

  private wake(result: IteratorResult<Delivery>): void {
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.(result);
  }

  /** Record a change as received. */
  remember(key: string, item: string): void {
    this.received.set(key, item);
    this.items.set(item, (this.items.get(item) ?? 0) + 1);
  }

  /** Raise the floor, forgetting what lies below it. */
  raiseFloor(to: bigint): void {
    if (to <= this.floor) return;
    this.floor = to;
    for (const [key, item] of this.received) {
      if (microsOfKey(key) >= to) continue;
      this.received.delete(key);
      if (item !== null) {
        const n = this.items.get(item)! - 1;
        if (n === 0) this.items.delete(item);
        else this.items.set(item, n);
      }
    }
  }
}

/** What the hub made of a change's admission (LiveFeed.decided). */
type Decision = 'deliver' | 'skip' | 'expired';

/** A feed with subscribers on this server. */
interface LiveFeed {
  readonly spec: FeedSpec;
  /** Its subscribers that the polls serve. */
  readonly subscribers: Set<Subscriber>;
  /** Its subscribers still reading their own catch-up (not yet polled for). */
  readonly catchingUp: Set<Subscriber>;
  /**
   * Final admissions of changes still in the window, by change id; 'expired': still
   * waiting when the window passed it, so the polls move on (a trailing pass asks again).
   */
  readonly decided: Map<string, Decision>;
  /**
   * The changes this server's polls and trailing passes handled, over the longest
   * horizon: key → item (null: its admission said skip). Empty without trailing passes.
   */
  readonly handled: ItemIndex;
  /** Below this (µs) `handled` is incomplete (its cap forgot the oldest): passes read from here at most. */
  handledFrom: bigint;
  /** The changes its polls handled by the tag of their count's mark (`FeedSpec.markTag`): tag → change id. */
  readonly marked: Map<string, string>;
}

/**
 * Changes a feed remembers as handled, at most: a feed writing more than this over the
 * longest horizon (some 9 changes a second for 3 h) has late changes found over the
 * most recent part of it only.
 */
const MAX_HANDLED_PER_FEED = 100_000;

/** The lowest floor of a feed's polled subscribers: where its polls read from. */
function floorOf(feed: LiveFeed): bigint {
  let min: bigint | null = null;
  for (const s of feed.subscribers) if (min === null || s.floor < min) min = s.floor;
  return min!;
}

/** Whether `change` was made before the subscription from now that `subscriber` is or resumes (FeedSpec.madeAt). */
function madeBefore(subscriber: Subscriber, change: Change): boolean {
  const { madeAt } = subscriber.spec;
  return subscriber.madeFrom !== null && madeAt !== undefined && madeAt(change) < subscriber.madeFrom;
}

/** The lowest origin of a feed's polled subscribers: nothing below it is owed to them. */
function originOf(feed: LiveFeed): bigint {
  let min: bigint | null = null;
  for (const s of feed.subscribers) if (min === null || s.origin < min) min = s.origin;
  return min!;
}

/** The process's live hub (see the file comment). */
export class LiveHub {
  private readonly feeds = new Map<string, LiveFeed>();
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private stopped = false;
  private mode: 'feeds' | 'shards' = 'feeds';
  private pollsSinceProbe = 0;
  /** Polls since the memories were last pruned (the passes prune them too). */
  private pollsSinceForget = 0;
  /**
   * Rows the last poll of each layout read (in the shards, pointers), how many of the
   * shards' were changes of our feeds, and how many of our feeds they named (each one
   * more read, for the payloads).
   */
  private lastRows: { feeds: number | null; shards: number | null; shardRowsOfOurFeeds: number | null; shardFeedsRead: number } = {
    feeds: null,
    shards: null,
    shardRowsOfOurFeeds: null,
    shardFeedsRead: 0,
  };
  /** The trailing passes (LATE_WRITE_PASSES): none, and nothing is remembered. */
  private readonly passes: readonly LatePass[];
  private passTasks: PeriodicTask[] = [];

  constructor(private readonly options: LiveHubOptions) {
    this.passes = latePassesOf(options.cluster);
  }

  /** Whether feeds remember what they handled (there are trailing passes to use it). */
  private get remembers(): boolean {
    return this.passes.length > 0;
  }

  /** How far back the longest trailing pass reads (µs). */
  private get longestHorizonMicros(): bigint {
    let ms = 0;
    for (const pass of this.passes) if (pass.horizonMs > ms) ms = pass.horizonMs;
    return BigInt(ms) * 1000n;
  }

  /** Changes a subscriber may have waiting (see LiveHubOptions). */
  get maxQueued(): number {
    return this.options.maxQueued;
  }

  /** The lateness window (µs): how far behind the newest change a change can still land. */
  private get windowMicros(): bigint {
    const { clockSkewMs, writeTimeoutMs } = this.options.cluster;
    return BigInt(clockSkewMs + writeTimeoutMs) * 1000n;
  }

  /** How far ahead of our clock another server's change ids can be (µs). */
  private get aheadMicros(): bigint {
    return BigInt(this.options.cluster.clockSkewMs) * 1000n;
  }

  /** Feeds with a subscriber on this server. */
  get activeFeeds(): number {
    let n = 0;
    for (const feed of this.feeds.values()) if (feed.subscribers.size > 0) n++;
    return n;
  }

  /** Subscriptions on this server. */
  get subscriptions(): number {
    let n = 0;
    for (const feed of this.feeds.values()) n += feed.subscribers.size;
    return n;
  }

  /**
   * Subscribe to a feed from `start`; the iterator yields each change once, with its
   * cursor. CursorExpiredError when the position is older than the retention.
   * `onOverflow` is called when the consumer falls so far behind that the subscription
   * was dropped (the caller closes the connection).
   */
  subscribe(spec: FeedSpec, start: FeedStart, onOverflow: () => void = () => undefined): AsyncIterableIterator<Delivery> {
    const now = this.options.clock.nowMicros();
    if (start.kind === 'after') {
      const oldest = now - BigInt(this.options.retentionSeconds) * 1_000_000n + this.windowMicros;
      if (start.position.floor < oldest) {
        throw new CursorExpiredError(
          `the cursor is older than the retention of ${this.options.retentionSeconds} s (LIVE_RETENTION_S): reload the connection and subscribe from there`,
        );
      }
    }
    // "Now" on another server's clock may be up to the skew behind ours: a change made
    // there after this moment can carry an id that much lower. Start that much back.
    const position = start.kind === 'after' ? start.position : { floor: now - this.aheadMicros, received: [], madeFrom: now - this.aheadMicros };
    const subscriber = new Subscriber(this, spec, position, start.kind === 'after', onOverflow);
    if (start.kind === 'now') this.attach(subscriber);
    else this.feedOf(spec).catchingUp.add(subscriber);
    return subscriber;
  }

  private feedOf(spec: FeedSpec): LiveFeed {
    let feed = this.feeds.get(spec.feed);
    if (!feed) {
      // A feed new here remembers nothing, and owes nothing from before its subscribers.
      feed = { spec, subscribers: new Set(), catchingUp: new Set(), decided: new Map(), handled: new ItemIndex(), handledFrom: 0n, marked: new Map() };
      this.feeds.set(spec.feed, feed);
    }
    return feed;
  }

  private attach(subscriber: Subscriber): void {
    subscriber.state = 'live';
    const feed = this.feedOf(subscriber.spec);
    feed.catchingUp.delete(subscriber);
    feed.subscribers.add(subscriber);
    this.schedule();
  }

  /** A subscriber leaves its feed (a feed without subscribers is polled no more, and forgets what it handled). */
  detach(subscriber: Subscriber): void {
    const feed = this.feeds.get(subscriber.spec.feed);
    if (!feed) return;
    feed.subscribers.delete(subscriber);
    feed.catchingUp.delete(subscriber);
    if (feed.subscribers.size === 0 && feed.catchingUp.size === 0) this.feeds.delete(subscriber.spec.feed);
  }

  /**
   * One page of a resuming subscriber's catch-up: the feed from its floor on. Once a
   * read reaches the end, the subscriber joins the live polls.
   */
  async catchUp(subscriber: Subscriber): Promise<void> {
    const started = this.options.clock.nowMicros();
    const through = started + this.aheadMicros;
    try {
      // With the retired layout too: a cursor given before the upgrade stands in it (change-log-tables.ts).
      const read = await readFeed(this.options.store, subscriber.spec.feed, subscriber.catchUpFrom, through, READ_LIMIT, undefined, { legacy: true });
      if (subscriber.state !== 'catching-up') return;
      const feed = this.feedOf(subscriber.spec);
      const { deliverable, completeBelow } = await this.admitted(subscriber.spec, feed.decided, read, started);
      // Its own read: what it gives is outside what the feed handled.
      this.offer(feed, subscriber, deliverable, read.changes, {}, null, { started, completeBelow });
      if (read.completeBelow > through) this.attach(subscriber);
      else subscriber.catchUpFrom = read.completeBelow;
    } catch (err) {
      subscriber.fail(err as Error);
    }
  }

  /**
   * The changes of a read that began at `started` to deliver, in order, and below which
   * point everything read was decided: a change the feature asks to wait for holds the
   * floor below it until the window has passed it; then the polls move on ('expired'),
   * and what it waited for, landing late, is the trailing passes' to find.
   */
  private async admitted(
    spec: FeedSpec,
    decided: Map<string, Decision>,
    read: LogRead,
    started: bigint,
  ): Promise<{ deliverable: Change[]; completeBelow: bigint }> {
    let completeBelow = read.completeBelow;
    if (spec.admit) {
      const open = read.changes.filter((c) => !decided.has(c.id));
      if (open.length > 0) {
        const answers = await spec.admit(open);
        const settled = started - this.windowMicros;
        open.forEach((c, i) => {
          const at = microsOfTimeuuid(c.id);
          const answer = answers[i]!;
          if (answer !== 'wait') decided.set(c.id, answer);
          else if (at < settled) decided.set(c.id, 'expired');
          else if (at < completeBelow) completeBelow = at;
        });
      }
    }
    const deliverable = spec.admit ? read.changes.filter((c) => decided.get(c.id) === 'deliver') : read.changes;
    return { deliverable, completeBelow };
  }

  /**
   * Give a subscriber of `feed` the changes of one read: each change it has not been
   * given, once per item, with its position after it.
   * - `fresh`: the keys of the changes the feed handles for the first time (a poll's or
   *   a trailing pass's read), or null for the subscriber's own catch-up read. A fresh
   *   change below the subscriber's floor is late: given when owed (file comment), as is
   *   one it missed while catching up; `late` collects the keys given so.
   * - `settle`: when the read began and below which point it was complete, to raise the
   *   floor to what it proved; null for a trailing pass, which proves nothing new.
   */
  private offer(
    feed: LiveFeed,
    subscriber: Subscriber,
    changes: readonly Change[],
    read: readonly Change[],
    batch: object,
    fresh: ReadonlySet<string> | null,
    settle: { started: bigint; completeBelow: bigint } | null,
    late?: Set<string>,
  ): number {
    const settledBelow = settle && (settle.started - this.windowMicros < settle.completeBelow ? settle.started - this.windowMicros : settle.completeBelow);
    // Learn the items of the changes a cursor named, before deciding any duplicate: from
    // every change read, delivered or not (an acceptance delivered before may have lost
    // since to an earlier one that landed late, which must not be delivered again).
    for (const change of read) {
      const key = changeKey(change.id);
      if (subscriber.received.get(key) === null) subscriber.remember(key, change.item);
      if (subscriber.outside.get(key) === null) subscriber.outside.set(key, change.item);
    }
    let delivered = 0;
    for (const change of changes) {
      if (subscriber.state === 'closed') break;
      const at = microsOfTimeuuid(change.id);
      const key = changeKey(change.id);
      const first = fresh?.has(key) === true;
      const givenOutside = subscriber.outside.has(key);
      // Handled by the feed from now on: what it knows of this change covers the subscriber.
      if (first) subscriber.outside.delete(key);
      const missed = subscriber.missed.delete(key);
      if (at >= subscriber.floor) {
        if (subscriber.received.has(key) || this.itemGiven(feed, subscriber, change.item, key)) continue;
        subscriber.remember(key, change.item);
        if (fresh === null && this.remembers && !feed.handled.has(key)) subscriber.outside.set(key, change.item);
        // Everything below this change's microsecond (a change beside it in the same
        // microsecond may follow), and below what the read settled, is delivered.
        if (settledBelow !== null) subscriber.raiseFloor(at < settledBelow ? at : settledBelow);
        // Made before a subscription from now: held as received (its cursors leave it out too), not given.
        if (madeBefore(subscriber, change)) continue;
      } else {
        // Below the floor: late. Owed from where the subscription started here, unless given.
        const owed = this.remembers && at >= subscriber.origin && (first ? !givenOutside : missed) && !madeBefore(subscriber, change);
        if (!owed || this.itemGiven(feed, subscriber, change.item, key)) continue;
        late?.add(key);
      }
      const cursor = encodeFeedCursor(this.options.codec, subscriber.spec.feed, {
        floor: subscriber.floor,
        received: [...subscriber.received.keys()],
        ...(subscriber.madeFrom !== null && { madeFrom: subscriber.madeFrom }),
      });
      subscriber.push({ change, cursor, batch });
      delivered++;
    }
    if (settledBelow !== null) subscriber.raiseFloor(settledBelow);
    return delivered;
  }

  /**
   * Whether the subscriber was given a change of `item` other than `self`: one it holds
   * above its floor, one given outside the feed's reads, or one the feed handled below
   * its floor, from its origin on, that it did not miss.
   */
  private itemGiven(feed: LiveFeed, subscriber: Subscriber, item: string, self: string): boolean {
    if (subscriber.items.has(item)) return true;
    if (!this.remembers) return false;
    for (const key of subscriber.outside.keysOf(item) ?? []) if (key !== self) return true;
    for (const key of feed.handled.keysOf(item) ?? []) {
      const at = microsOfKey(key);
      if (key !== self && at < subscriber.floor && at >= subscriber.origin && !subscriber.missed.has(key)) return true;
    }
    return false;
  }

  /**
   * Hand one poll's or trailing pass's read of `feed` to its subscribers (`deliverable`:
   * what admission let through; `decided`: those and the ones it refused for good), and
   * note what it decided as handled: a subscriber still catching up missed it.
   */
  private handle(
    feed: LiveFeed,
    read: readonly Change[],
    deliverable: readonly Change[],
    decided: readonly Change[],
    settle: { started: bigint; completeBelow: bigint } | null,
  ): { delivered: number; late: number } {
    // Decided against `handled` now, with no wait until it is updated: a poll and a pass
    // that read the same change hand it out once.
    const fresh = new Set<string>();
    if (this.remembers) for (const c of decided) if (!feed.handled.has(changeKey(c.id))) fresh.add(changeKey(c.id));
    const { markTag } = feed.spec;
    if (markTag) for (const c of decided) feed.marked.set(markTag(c), c.id);
    const batch = {};
    const late = new Set<string>();
    let delivered = 0;
    for (const subscriber of [...feed.subscribers]) {
      if (subscriber.state === 'live') delivered += this.offer(feed, subscriber, deliverable, read, batch, fresh, settle, late);
    }
    if (fresh.size > 0) {
      const given = new Set(deliverable.map((c) => changeKey(c.id)));
      for (const subscriber of feed.catchingUp) {
        for (const key of fresh) {
          if (!given.has(key) || microsOfKey(key) < subscriber.origin) continue;
          if (subscriber.outside.has(key)) subscriber.outside.delete(key);
          else subscriber.missed.add(key);
        }
      }
      for (const c of decided) {
        const key = changeKey(c.id);
        if (fresh.has(key)) feed.handled.set(key, given.has(key) ? c.item : null);
      }
    }
    return { delivered, late: late.size };
  }

  /** Start polling and the trailing passes (both idle while no feed has a subscriber). */
  start(): void {
    this.stopped = false;
    this.schedule();
    for (const task of this.passTasks) task.stop();
    this.passTasks = this.passes.map((pass) =>
      startPeriodicTask({
        intervalMs: pass.intervalMs,
        pass: async () => {
          if (this.activeFeeds > 0) await this.latePass(pass);
        },
        onError: (err) => this.options.logger?.warn({ err, horizonMs: pass.horizonMs }, 'trailing live pass failed; retrying at its next interval'),
      }),
    );
  }

  /** Stop polling and the passes, and end every subscription. */
  stop(): void {
    this.stopped = true;
    for (const task of this.passTasks) task.stop();
    this.passTasks = [];
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const feed of [...this.feeds.values()]) for (const s of [...feed.subscribers]) s.close();
  }

  private schedule(delay = this.options.pollMs): void {
    if (this.stopped || this.timer || this.polling || this.feeds.size === 0) return;
    this.timer = setTimeout(() => this.runPoll(), delay);
    this.timer.unref?.();
  }

  private runPoll(): void {
    this.timer = null;
    const began = Date.now();
    this.polling = this.pollOnce()
      .then(
        () => undefined,
        (err: unknown) => this.options.logger?.warn({ err }, 'live poll failed; retrying at the next interval'),
      )
      .finally(() => {
        this.polling = null;
        // The next poll one interval after this one began (at once if it took longer).
        this.schedule(Math.max(0, this.options.pollMs - (Date.now() - began)));
      });
  }

  /** Which layout this poll reads (see the file comment). */
  private chooseMode(feeds: number): 'feeds' | 'shards' {
    const { fanout } = this.options;
    if (fanout !== 'auto') return fanout;
    // With as few feeds as shards, the feeds are never dearer.
    if (feeds <= SHARD_READS) return 'feeds';
    const rowsCost = (rows: number | null) => (rows ?? 0) / ROWS_PER_READ;
    if (this.mode === 'shards') {
      const shardCost = SHARD_READS + this.lastRows.shardFeedsRead + rowsCost(this.lastRows.shards);
      const feedCost = feeds + rowsCost(this.lastRows.shardRowsOfOurFeeds);
      return feedCost <= SWITCH_RATIO * shardCost ? 'feeds' : 'shards';
    }
    this.pollsSinceProbe++;
    // Never priced, or priced long ago: read the shards once to price them.
    if (this.lastRows.shards === null || this.pollsSinceProbe >= PROBE_EVERY_POLLS) return 'shards';
    const shardCost = SHARD_READS + this.lastRows.shardFeedsRead + rowsCost(this.lastRows.shards);
    const feedCost = feeds + rowsCost(this.lastRows.feeds);
    return shardCost <= SWITCH_RATIO * feedCost ? 'shards' : 'feeds';
  }

  /** One poll of every feed with a subscriber here (the timer calls it; tests may too). */
  async pollOnce(): Promise<PollReport> {
    const feeds = [...this.feeds.values()].filter((f) => f.subscribers.size > 0);
    const mode = feeds.length === 0 ? 'feeds' : this.chooseMode(feeds.length);
    if (mode === 'shards') this.pollsSinceProbe = 0;
    this.mode = mode;
    if (feeds.length === 0) return { mode, feeds: 0, reads: 0, rows: 0, delivered: 0 };
    const started = this.options.clock.nowMicros();
    const through = started + this.aheadMicros;
    let reads = 0;
    let rows = 0;
    const results: Array<{ feed: LiveFeed; read: LogRead }> = [];
    if (mode === 'feeds') {
      let next = 0;
      const worker = async () => {
        while (next < feeds.length) {
          const feed = feeds[next++]!;
          const read = await readToEnd(floorOf(feed), through, (from) => readFeed(this.options.store, feed.spec.feed, from, through, READ_LIMIT));
          reads += read.reads;
          rows += read.changes.length;
          results.push({ feed, read });
        }
      };
      await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, feeds.length) }, worker));
      this.lastRows.feeds = rows;
    } else {
      let from = floorOf(feeds[0]!);
      for (const feed of feeds) {
        const f = floorOf(feed);
        if (f < from) from = f;
      }
      const names = new Set(feeds.map((f) => f.spec.feed));
      let pointers = 0;
      let ourPointers = 0;
      let feedsRead = 0;
      const settled = (p: Pointer) => this.settled(this.feeds.get(p.feed)!, p.id);
      const markSettled = (m: FeedMark) => this.markSettled(this.feeds.get(m.feed)!, m);
      const read = await readToEnd(from, through, async (start) => {
        // A change's id is at most the skew past its mark's time (change-log.ts): marks from that far back.
        const marks = { fromMs: Number((start - this.aheadMicros) / 1000n), settled: markSettled };
        const part = await readPointedFeeds(this.options.store, names, start, through, READ_LIMIT, { settled, marks });
        pointers += part.pointers;
        ourPointers += part.ourPointers;
        feedsRead += part.feedsRead;
        return part;
      });
      reads += read.reads;
      rows += pointers + read.changes.length;
      const byFeed = new Map<string, Change[]>();
      for (const change of read.changes) {
        let list = byFeed.get(change.feed);
        if (!list) byFeed.set(change.feed, (list = []));
        list.push(change);
      }
      for (const feed of feeds) {
        const changes = byFeed.get(feed.spec.feed) ?? [];
        results.push({ feed, read: { changes, completeBelow: read.completeBelow } });
      }
      this.lastRows.shards = pointers;
      // What reading our feeds instead would read: every change a pointer names.
      this.lastRows.shardRowsOfOurFeeds = ourPointers;
      this.lastRows.shardFeedsRead = feedsRead;
    }
    let delivered = 0;
    for (const { feed, read } of results) {
      const { deliverable, completeBelow } = await this.admitted(feed.spec, feed.decided, read, started);
      // Handled now: what admission decided for good (an expired wait is left to the passes).
      const decided = feed.spec.admit ? read.changes.filter((c) => feed.decided.has(c.id) && feed.decided.get(c.id) !== 'expired') : read.changes;
      delivered += this.handle(feed, read.changes, deliverable, decided, { started, completeBelow }).delivered;
      // Forget admissions below every subscriber's floor: they are not read again.
      if (feed.subscribers.size > 0) {
        const floor = floorOf(feed);
        for (const id of feed.decided.keys()) if (microsOfTimeuuid(id) < floor) feed.decided.delete(id);
        // And marked changes whose marks lie below it too (markSettled's first case); a tag forgotten early costs a read, no more.
        const markedFrom = floor - this.aheadMicros - BigInt(JOB_WINDOW_MS) * 1000n;
        for (const [tag, id] of feed.marked) if (microsOfTimeuuid(id) < markedFrom) feed.marked.delete(tag);
      }
    }
    // Pruned here too, so a hub whose passes do not run (not started) stays bounded.
    if (this.remembers && ++this.pollsSinceForget >= FORGET_EVERY_POLLS) {
      this.pollsSinceForget = 0;
      this.forget(started - this.longestHorizonMicros);
    }
    const report: PollReport = { mode, feeds: feeds.length, reads, rows, delivered };
    this.options.onPoll?.(report);
    return report;
  }

  /**
   * Whether a poll of the shards can leave the change `id` (a pointer's) unread: reading
   * it would change nothing, as it changes nothing when a poll of the feed reads it again
   * (the feed handled it, and each polled subscriber holds it with its item, or has it
   * below its floor and did not miss it), and no subscriber is catching up.
   */
  private settled(feed: LiveFeed, id: string): boolean {
    if (feed.catchingUp.size > 0) return false;
    const key = changeKey(id);
    if (this.remembers && !feed.handled.has(key)) return false;
    const at = microsOfTimeuuid(id);
    for (const s of feed.subscribers) {
      if (at < s.floor) {
        if (this.remembers && s.missed.has(key)) return false;
      } else if (typeof s.received.get(key) !== 'string' || s.outside.get(key) === null) return false;
    }
    return true;
  }

  /**
   * Whether a poll of the shards can leave a count mark of `feed` unread (no pointer
   * names its change, change-log.ts). A mark is per window, not per change, so either:
   * - its window lies below every polled subscriber's floor: a change id is at most the
   *   clock skew past its mark's time, so its change lies below every floor, where a
   *   poll gives nothing that is not late (the trailing passes find those); or
   * - its tag is that of a change the polls handled (`FeedSpec.markTag`), which is
   *   settled as a pointer's change is. Another change of the same tag is one of the
   *   same item (a post deleted twice), which a subscriber is given once anyway.
   * Any other mark has its feed read, from the floor, at every poll until the first
   * holds: a change may land after its mark is seen (a batch is not isolated).
   */
  private markSettled(feed: LiveFeed, mark: FeedMark): boolean {
    if (BigInt(mark.window + JOB_WINDOW_MS) * 1000n + this.aheadMicros <= floorOf(feed)) return true;
    const id = mark.tag === null ? undefined : feed.marked.get(mark.tag);
    return id !== undefined && this.settled(feed, id);
  }

  /**
   * One trailing pass (the timer of `pass` calls it; tests may too): re-read each feed
   * polled here from `pass.horizonMs` back (at most to where its subscribers started) up
   * to the floor its polls read from, and give each subscriber, once, what it is owed
   * and was not given (file comment). Admission applies as in a poll; a change it says
   * to wait for is asked about again at the next pass, until it is past every horizon.
   */
  async latePass(pass: LatePass): Promise<LatePassReport> {
    const feeds = [...this.feeds.values()].filter((f) => f.subscribers.size > 0);
    const now = this.options.clock.nowMicros();
    const horizonFrom = now - BigInt(pass.horizonMs) * 1000n;
    this.forget(now - this.longestHorizonMicros);
    const ranges = new Map<LiveFeed, { from: bigint; below: bigint }>();
    for (const feed of feeds) {
      let from = horizonFrom;
      for (const bound of [originOf(feed), feed.handledFrom]) if (bound > from) from = bound;
      const below = floorOf(feed);
      if (from < below) ranges.set(feed, { from, below });
    }
    // Past the marks' TTL a counted feed's change has nothing in the shards: read the feeds.
    const mode = horizonFrom < now - BigInt(MARK_TTL_SECONDS) * 1_000_000n ? 'feeds' : this.lateMode(ranges);
    let reads = 0;
    let rows = 0;
    let late = 0;
    let delivered = 0;
    const settle = async (feed: LiveFeed, changes: readonly Change[]) => {
      const done = await this.lateChanges(feed, changes);
      late += done.late;
      delivered += done.delivered;
    };
    if (mode === 'feeds') {
      const queue = [...ranges];
      const worker = async () => {
        for (let next = queue.shift(); next; next = queue.shift()) {
          const [feed, { from, below }] = next;
          const read = (start: bigint) => readFeed(this.options.store, feed.spec.feed, start, below - 1n, READ_LIMIT, below);
          // Awaited first: `reads += await …` would read `reads` before the other workers add theirs.
          const made = await forEachPart(from, below - 1n, read, (part) => {
            rows += part.changes.length;
            return settle(feed, part.changes);
          });
          reads += made;
        }
      };
      await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, queue.length) }, worker));
    } else if (ranges.size > 0) {
      let from: bigint | null = null;
      let below: bigint | null = null;
      for (const range of ranges.values()) {
        if (from === null || range.from < from) from = range.from;
        if (below === null || range.below > below) below = range.below;
      }
      // One hour of every shard's pointers per part: a part holds at most READ_LIMIT rows a shard.
      const names = new Set([...ranges.keys()].map((f) => f.spec.feed));
      // The count marks once for the whole span, through now: a mark lies at most the skew
      // before its change's id, and a redo (an idempotency key's) writes its mark now
      // with an id of then. Each feed of ours they name is read over every part.
      const marked = await readFeedMarks(this.options.store, names, Number((from! - this.aheadMicros) / 1000n), now + this.aheadMicros);
      reads += marked.reads;
      rows += marked.rows;
      const alsoRead = new Set(marked.marks.map((m) => m.feed));
      const read = async (start: bigint) => {
        const bucketEnd = (pointerBucketOf(start) + BigInt(POINTER_BUCKET_MS)) * 1000n;
        const part = await readPointedFeeds(this.options.store, names, start, (bucketEnd < below! ? bucketEnd : below!) - 1n, READ_LIMIT, { below: below!, alsoRead });
        rows += part.pointers;
        return part;
      };
      reads += await forEachPart(from!, below! - 1n, read, async (part) => {
        rows += part.changes.length;
        const byFeed = new Map<string, Change[]>();
        for (const change of part.changes) {
          let list = byFeed.get(change.feed);
          if (!list) byFeed.set(change.feed, (list = []));
          list.push(change);
        }
        for (const [feed, range] of ranges) {
          const changes = (byFeed.get(feed.spec.feed) ?? []).filter((c) => {
            const at = microsOfTimeuuid(c.id);
            return at >= range.from && at < range.below;
          });
          if (changes.length > 0) await settle(feed, changes);
        }
      });
    }
    const report: LatePassReport = { horizonMs: pass.horizonMs, mode, feeds: ranges.size, reads, rows, late, delivered };
    this.options.onLatePass?.(report);
    return report;
  }

  /**
   * Hand changes a trailing pass read of `feed` to its subscribers: what the feed handled
   * keeps its answer; the rest is asked of admission, and a 'wait' stays open for the
   * next pass.
   */
  private async lateChanges(feed: LiveFeed, changes: readonly Change[]): Promise<{ delivered: number; late: number }> {
    const answers = new Map<string, Admission>();
    const open = changes.filter((c) => !feed.handled.has(changeKey(c.id)));
    if (feed.spec.admit && open.length > 0) {
      const said = await feed.spec.admit(open);
      open.forEach((c, i) => answers.set(c.id, said[i]!));
    }
    const answerOf = (c: Change): Admission => {
      const item = feed.handled.get(changeKey(c.id));
      if (item !== undefined) return item === null ? 'skip' : 'deliver';
      return feed.spec.admit ? (answers.get(c.id) ?? 'wait') : 'deliver';
    };
    const deliverable = changes.filter((c) => answerOf(c) === 'deliver');
    const decided = changes.filter((c) => answerOf(c) !== 'wait');
    return this.handle(feed, changes, deliverable, decided, null);
  }

  /**
   * Which layout a trailing pass reads: the operator's, or with `fanout: 'auto'` the
   * feeds unless the polls read the shards and the shards cost less over the pass's
   * span too (the cost model of `chooseMode`: partitions read, plus the rows the last
   * shard poll read, scaled from a poll's span to the pass's, and the feeds a pointer
   * may name: those the last shard poll read, scaled alike, at most every feed).
   */
  private lateMode(ranges: ReadonlyMap<LiveFeed, { from: bigint; below: bigint }>): 'feeds' | 'shards' {
    const { fanout } = this.options;
    if (fanout !== 'auto') return fanout;
    if (this.mode === 'feeds' || ranges.size === 0 || this.lastRows.shards === null) return 'feeds';
    let from: bigint | null = null;
    let below: bigint | null = null;
    // One slice per feed, whatever the span (a feed is one partition).
    const feedReads = ranges.size;
    for (const range of ranges.values()) {
      if (from === null || range.from < from) from = range.from;
      if (below === null || range.below > below) below = range.below;
    }
    const shardReads = BigInt(SHARD_READS) * ((pointerBucketOf(below!) - pointerBucketOf(from!)) / BigInt(POINTER_BUCKET_MS) + 1n);
    const scale = Number(below! - from!) / Number(this.windowMicros + BigInt(this.options.pollMs) * 1000n);
    const feedCost = feedReads + (scale * (this.lastRows.shardRowsOfOurFeeds ?? 0)) / ROWS_PER_READ;
    const pointedFeeds = Math.min(ranges.size, scale * this.lastRows.shardFeedsRead);
    const shardCost = Number(shardReads) + pointedFeeds + (scale * (this.lastRows.shards + (this.lastRows.shardRowsOfOurFeeds ?? 0))) / ROWS_PER_READ;
    return shardCost < feedCost ? 'shards' : 'feeds';
  }

  /** Forget, in every feed and subscriber, what lies below `micros` (past the longest horizon). */
  private forget(micros: bigint): void {
    for (const feed of this.feeds.values()) {
      const from = feed.handled.forget(micros, MAX_HANDLED_PER_FEED);
      if (from > feed.handledFrom) feed.handledFrom = from;
      for (const subscriber of [...feed.subscribers, ...feed.catchingUp]) {
        subscriber.outside.forget(micros, Number.POSITIVE_INFINITY);
        for (const key of subscriber.missed) if (microsOfKey(key) < micros) subscriber.missed.delete(key);
      }
    }
  }
}
