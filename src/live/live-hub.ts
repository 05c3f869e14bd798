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
 * each read.
 *
 * Two layouts (change-log-tables.ts). Reading each feed costs one read per feed per poll;
 * reading the shards costs CHANGE_SHARDS reads per poll whatever the number of feeds,
 * but every change of every feed in the window passes through. `fanout: 'auto'` weighs
 * the two with the rows each read last (a row costing 1/ROWS_PER_READ of a read) and
 * switches when the other is clearly cheaper; 'feeds' and 'shards' fix the choice.
 */
import type { Logger } from 'pino';
import type { ClusterSettings } from '../config.js';
import type { CursorCodec } from '../paging/cursor.js';
import type { Clock } from '../store/clock.js';
import type { Store } from '../store/port.js';
import { microsOfTimeuuid } from '../store/timeuuid.js';
import { CHANGE_SHARDS } from './change-log-tables.js';
import { readFeed, readShards, type Change, type LogRead } from './change-log.js';
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
}

/** What one poll did. */
export interface PollReport {
  readonly mode: 'feeds' | 'shards';
  readonly feeds: number;
  readonly reads: number;
  readonly rows: number;
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
/** The other layout must cost this fraction of the current one or less before the hub switches. */
const SWITCH_RATIO = 0.8;

/**
 * Read a range to its end: a read cut at its limit is continued from where it stopped,
 * so a burst of more changes than one read takes still moves on within the poll.
 */
async function readToEnd(from: bigint, through: bigint, read: (from: bigint) => Promise<LogRead & { reads?: number }>): Promise<LogRead & { reads: number }> {
  const changes: Change[] = [];
  let reads = 0;
  for (let start = from; ; ) {
    const part = await read(start);
    reads += part.reads ?? 1;
    changes.push(...part.changes);
    if (part.completeBelow > through) return { changes, completeBelow: part.completeBelow, reads };
    start = part.completeBelow;
  }
}

/** A subscription's state in the hub. */
class Subscriber implements AsyncIterableIterator<Delivery> {
  floor: bigint;
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
    this.catchUpFrom = start.floor;
    for (const key of start.received) this.received.set(key, null);
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
      if (BigInt(key.slice(0, key.indexOf(':'))) >= to) continue;
      this.received.delete(key);
      if (item !== null) {
        const n = this.items.get(item)! - 1;
        if (n === 0) this.items.delete(item);
        else this.items.set(item, n);
      }
    }
  }
}

/** A feed with subscribers on this server. */
interface LiveFeed {
  readonly spec: FeedSpec;
  readonly subscribers: Set<Subscriber>;
  /** Final admissions of changes still in the window, by change id. */
  readonly decided: Map<string, 'deliver' | 'skip'>;
}

/** The process's live hub (see the file comment). */
export class LiveHub {
  private readonly feeds = new Map<string, LiveFeed>();
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private stopped = false;
  private mode: 'feeds' | 'shards' = 'feeds';
  private pollsSinceProbe = 0;
  /** Rows the last poll of each layout read, and how many of them were changes of our feeds. */
  private lastRows: { feeds: number | null; shards: number | null; shardRowsOfOurFeeds: number | null } = {
    feeds: null,
    shards: null,
    shardRowsOfOurFeeds: null,
  };

  constructor(private readonly options: LiveHubOptions) {}

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
    return this.feeds.size;
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
    const position = start.kind === 'after' ? start.position : { floor: now - this.aheadMicros, received: [] };
    const subscriber = new Subscriber(this, spec, position, start.kind === 'after', onOverflow);
    if (start.kind === 'now') this.attach(subscriber);
    return subscriber;
  }

  private feedOf(spec: FeedSpec): LiveFeed {
    let feed = this.feeds.get(spec.feed);
    if (!feed) {
      feed = { spec, subscribers: new Set(), decided: new Map() };
      this.feeds.set(spec.feed, feed);
    }
    return feed;
  }

  private attach(subscriber: Subscriber): void {
    subscriber.state = 'live';
    this.feedOf(subscriber.spec).subscribers.add(subscriber);
    this.schedule();
  }

  /** A subscriber leaves its feed (a feed without subscribers is polled no more). */
  detach(subscriber: Subscriber): void {
    const feed = this.feeds.get(subscriber.spec.feed);
    if (!feed) return;
    feed.subscribers.delete(subscriber);
    if (feed.subscribers.size === 0) this.feeds.delete(subscriber.spec.feed);
  }

  /**
   * One page of a resuming subscriber's catch-up: the feed from its floor on. Once a
   * read reaches the end, the subscriber joins the live polls.
   */
  async catchUp(subscriber: Subscriber): Promise<void> {
    const started = this.options.clock.nowMicros();
    const through = started + this.aheadMicros;
    try {
      const read = await readFeed(this.options.store, subscriber.spec.feed, subscriber.catchUpFrom, through, READ_LIMIT);
      if (subscriber.state !== 'catching-up') return;
      const feed = this.feeds.get(subscriber.spec.feed);
      const { deliverable, completeBelow } = await this.admitted(subscriber.spec, feed?.decided ?? new Map(), read, started);
      this.offer(subscriber, deliverable, started, completeBelow, {}, read.changes);
      if (read.completeBelow > through) this.attach(subscriber);
      else subscriber.catchUpFrom = read.completeBelow;
    } catch (err) {
      subscriber.fail(err as Error);
    }
  }

  /**
   * The changes of a read that began at `started` to deliver, in order, and below which
   * point everything read was decided: a change the feature asks to wait for holds the
   * floor below it, until nothing can land below it any more (then it is never
   * delivered: what it waited for will not come).
   */
  private async admitted(
    spec: FeedSpec,
    decided: Map<string, 'deliver' | 'skip'>,
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
          else if (at < settled) decided.set(c.id, 'skip');
          else if (at < completeBelow) completeBelow = at;
        });
      }
    }
    const deliverable = spec.admit ? read.changes.filter((c) => decided.get(c.id) === 'deliver') : read.changes;
    return { deliverable, completeBelow };
  }

  /**
   * Give a subscriber the changes of a read that began at `started` (µs), complete below
   * `completeBelow`: each change it has not received, once per item, with the position
   * after it; then raise its floor to what the read proved complete.
   */
  private offer(
    subscriber: Subscriber,
    changes: readonly Change[],
    started: bigint,
    completeBelow: bigint,
    batch: object,
    read: readonly Change[] = changes,
  ): number {
    const settledBelow = started - this.windowMicros < completeBelow ? started - this.windowMicros : completeBelow;
    // Learn the items of the changes a cursor named, before deciding any duplicate: from
    // every change read, delivered or not (an acceptance delivered before may have lost
    // since to an earlier one that landed late, which must not be delivered again).
    for (const change of read) {
      const key = changeKey(change.id);
      if (subscriber.received.get(key) === null) subscriber.remember(key, change.item);
    }
    let delivered = 0;
    for (const change of changes) {
      if (subscriber.state === 'closed') break;
      const at = microsOfTimeuuid(change.id);
      const key = changeKey(change.id);
      if (at < subscriber.floor || subscriber.received.has(key) || subscriber.items.has(change.item)) continue;
      subscriber.remember(key, change.item);
      // Everything below this change's microsecond (a change beside it in the same
      // microsecond may follow), and below what the read settled, is delivered.
      subscriber.raiseFloor(at < settledBelow ? at : settledBelow);
      const cursor = encodeFeedCursor(this.options.codec, subscriber.spec.feed, { floor: subscriber.floor, received: [...subscriber.received.keys()] });
      subscriber.push({ change, cursor, batch });
      delivered++;
    }
    subscriber.raiseFloor(settledBelow);
    return delivered;
  }

  /** Start polling (idles while no feed has a subscriber). */
  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /** Stop polling and end every subscription. */
  stop(): void {
    this.stopped = true;
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
    if (feeds <= CHANGE_SHARDS) return 'feeds';
    const rowsCost = (rows: number | null) => (rows ?? 0) / ROWS_PER_READ;
    if (this.mode === 'shards') {
      const shardCost = CHANGE_SHARDS + rowsCost(this.lastRows.shards);
      const feedCost = feeds + rowsCost(this.lastRows.shardRowsOfOurFeeds);
      return feedCost <= SWITCH_RATIO * shardCost ? 'feeds' : 'shards';
    }
    this.pollsSinceProbe++;
    // Never priced, or priced long ago: read the shards once to price them.
    if (this.lastRows.shards === null || this.pollsSinceProbe >= PROBE_EVERY_POLLS) return 'shards';
    const shardCost = CHANGE_SHARDS + rowsCost(this.lastRows.shards);
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
    const floorOf = (feed: LiveFeed) => {
      let min: bigint | null = null;
      for (const s of feed.subscribers) if (min === null || s.floor < min) min = s.floor;
      return min!;
    };
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
      const read = await readToEnd(from, through, (start) => readShards(this.options.store, start, through, READ_LIMIT));
      reads += read.reads;
      rows += read.changes.length;
      const byFeed = new Map<string, Change[]>();
      for (const change of read.changes) {
        if (!this.feeds.has(change.feed)) continue;
        let list = byFeed.get(change.feed);
        if (!list) byFeed.set(change.feed, (list = []));
        list.push(change);
      }
      let ours = 0;
      for (const feed of feeds) {
        const changes = byFeed.get(feed.spec.feed) ?? [];
        ours += changes.length;
        results.push({ feed, read: { changes, completeBelow: read.completeBelow } });
      }
      this.lastRows.shards = rows;
      this.lastRows.shardRowsOfOurFeeds = ours;
    }
    let delivered = 0;
    for (const { feed, read } of results) {
      const { deliverable, completeBelow } = await this.admitted(feed.spec, feed.decided, read, started);
      const batch = {};
      for (const subscriber of [...feed.subscribers]) {
        if (subscriber.state === 'live') delivered += this.offer(subscriber, deliverable, started, completeBelow, batch, read.changes);
      }
      // Forget admissions below every subscriber's floor: they are not read again.
      if (feed.subscribers.size > 0) {
        const floor = floorOf(feed);
        for (const id of feed.decided.keys()) if (microsOfTimeuuid(id) < floor) feed.decided.delete(id);
      }
    }
    const report: PollReport = { mode, feeds: feeds.length, reads, rows, delivered };
    this.options.onPoll?.(report);
    return report;
  }
}
