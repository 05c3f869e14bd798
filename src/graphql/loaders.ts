/**
 * Per-request DataLoaders: every field that reads by key goes through one, so a page
 * of n edges costs a fixed number of store round trips, not n. The features read
 * through the same loaders (the composition root hands them over), so what a
 * mutation reads is not read again for its payload. Batch functions are the
 * features' keyed reads, in key order, with null for misses.
 */
import DataLoader from 'dataloader';
import { DEFAULT_CLUSTER_SETTINGS } from '../config.js';
import { readConnectionCounts, type CountReadOptions } from '../counts/connection-counts.js';
import { readListItems, readLists, type ListItem, type OrderedList } from '../features/lists/lists.js';
import { readMeetings, type Meeting } from '../features/meetings/meetings.js';
import { readSuspensions, type Suspension } from '../features/suspensions/suspensions.js';
import { readPosts, type Post } from '../features/timeline/timeline.js';
import { readUserIds, readUsers, type User } from '../features/users/users.js';
import { stopIfAborted } from '../store/deadline.js';
import type { Store } from '../store/port.js';

/** The loaders of one request. */
export interface Loaders {
  readonly userById: RequestLoader<string, User | null>;
  readonly userIdByUsername: RequestLoader<string, string | null>;
  readonly postByKey: RequestLoader<{ authorId: string; postId: string }, Post | null, string>;
  readonly suspensionByUserId: RequestLoader<string, Suspension | null>;
  readonly meetingById: RequestLoader<string, Meeting | null>;
  /**
   * Connection sizes by count key (`totalCount`, `acceptanceCount`): every count a
   * request asks for at once is one read.
   */
  readonly connectionCount: RequestLoader<string, number>;
  readonly listById: RequestLoader<string, OrderedList | null>;
  readonly listItemByRef: RequestLoader<{ listId: string; itemId: string }, ListItem | null, string>;
}

/**
 * A loader's cache that also keeps each value beside the promise DataLoader cached for
 * it, so `RequestLoader.loadNow` can hand the value out without a promise. A value is
 * kept only while the promise it came from is still the one cached for its key: `clear`,
 * `prime` and `clearAll` keep the two in step.
 *
 * The values come from the batch itself (`settling`), not from a `then` on each key's
 * promise: that was one more promise, two closures and a microtask per key, and a
 * 50-edge page asks for 101 keys (docs/benchmarks-history.md, issue 39: the keyed reads).
 */
class SettledCache<C, V> extends Map<C, Promise<V>> {
  readonly held = new Map<C, V>();
  /** While `prime` sets a key: its value (`RequestLoader.prime`). */
  priming: { readonly value: V } | null = null;

  override set(key: C, promise: Promise<V>): this {
    const primed = this.priming;
    // A primed error stays the loader's to report: `loadNow` then goes through `load`.
    if (primed !== null && !(primed.value instanceof Error)) this.held.set(key, primed.value);
    else this.held.delete(key);
    return super.set(key, promise);
  }

  override delete(key: C): boolean {
    this.held.delete(key);
    return super.delete(key);
  }

  override clear(): void {
    this.held.clear();
    super.clear();
  }

  /**
   * `batch`, keeping each value it reads for its key while the key's cached promise is
   * still the one `load` made for this batch (not cleared, re-primed or read again
   * since). Errors are not kept: `load` reports them. A key of the batch whose value is
   * held already was primed after `load` cached it: its primed value stands. The
   * promise `load` made is the one cached when the batch starts otherwise (no map of
   * pending promises beside the cache: a page's 101 keys made it grow and shrink).
   */
  settling<K>(batch: DataLoader.BatchLoadFn<K, V>, keyOf: (key: K) => C): DataLoader.BatchLoadFn<K, V> {
    return async (keys) => {
      const asked = keys.map((key) => {
        const cacheKey = keyOf(key);
        return this.held.has(cacheKey) ? undefined : super.get(cacheKey);
      });
      const values = await batch(keys);
      if (values.length !== keys.length) return values;
      for (let i = 0; i < keys.length; i++) {
        const promise = asked[i];
        const value = values[i]!;
        if (promise === undefined || value instanceof Error) continue;
        const cacheKey = keyOf(keys[i]!);
        if (super.get(cacheKey) !== promise) continue;
        this.held.set(cacheKey, value);
      }
      return values;
    };
  }
}

/**
 * A per-request DataLoader that hands out a value this request already read without a
 * promise (`loadNow`). DataLoader answers even a cache hit with a new promise, resolved
 * with the cached one when its batch is dispatched: three promises, two more microtasks
 * and a batch tick for a value already in hand. A page's edges ask for the same few
 * objects again and again (every post's author; each suspended user's suspension, read
 * while the page was filtered), so resolvers ask through `loadNow`.
 */
export class RequestLoader<K, V, C = K> extends DataLoader<K, V, C> {
  private readonly settled: SettledCache<C, V> | null;
  private readonly keyOf: (key: K) => C;

  constructor(batch: DataLoader.BatchLoadFn<K, V>, options: { cache: boolean; cacheKeyFn?: (key: K) => C }) {
    const settled = options.cache ? new SettledCache<C, V>() : null;
    const keyOf = options.cacheKeyFn ?? (sameKey as (key: K) => C);
    super(settled ? settled.settling(batch, keyOf) : batch, {
      cache: options.cache,
      ...(options.cacheKeyFn && { cacheKeyFn: options.cacheKeyFn }),
      ...(settled && { cacheMap: settled }),
    });
    this.settled = settled;
    this.keyOf = keyOf;
  }

  /** The value of `key` when this request has already read it; otherwise `load(key)`. */
  loadNow(key: K): V | Promise<V> {
    if (this.settled !== null) {
      const cacheKey = this.keyOf(key);
      const { held } = this.settled;
      if (held.has(cacheKey)) return held.get(cacheKey)!;
    }
    return this.load(key);
  }

  /** DataLoader's `prime`; the primed value is held at once (`loadNow`). */
  override prime(key: K, value: V | PromiseLike<V> | Error): this {
    const settled = this.settled;
    // A primed promise is not a value in hand: it is cached as `load` caches one.
    if (settled === null || (typeof value === 'object' && value !== null && 'then' in value)) return super.prime(key, value);
    settled.priming = { value: value as V };
    try {
      return super.prime(key, value);
    } finally {
      settled.priming = null;
    }
  }
}

/** A key that is its own cache key (DataLoader's default). */
const sameKey = <K>(key: K): K => key;

/** Without a verifier's progress or a clock of the process: the wall clock, and every window read as unsettled. */
const STANDALONE_COUNTS = (): CountReadOptions => ({ nowMs: Date.now(), cluster: DEFAULT_CLUSTER_SETTINGS, progress: null });

/**
 * Fresh loaders over one store view, each made on first use. `cache: false` keeps the batching but remembers
 * nothing: for long jobs (seeding) that would otherwise hold every row they touch.
 * `counts` tells count reads the time and the verifier's progress (the process's).
 * `signal` is the request's: once its client has gone, no batch reads
 * (`RequestAbortedError`).
 */
export function createLoaders(store: Store, options: { cache?: boolean; counts?: () => CountReadOptions; signal?: AbortSignal } = {}): Loaders {
  return new RequestLoaders(store, options.cache ?? true, options.counts ?? STANDALONE_COUNTS, options.signal);
}

/**
 * The loaders of one request, each made when the request first asks for it (a getter on
 * the prototype, so a request pays for the two or three it uses, and no closure per loader).
 */
class RequestLoaders implements Loaders {
  private madeUserById?: Loaders['userById'];
  private madeUserIdByUsername?: Loaders['userIdByUsername'];
  private madePostByKey?: Loaders['postByKey'];
  private madeSuspensionByUserId?: Loaders['suspensionByUserId'];
  private madeMeetingById?: Loaders['meetingById'];
  private madeConnectionCount?: Loaders['connectionCount'];
  private madeListById?: Loaders['listById'];
  private madeListItemByRef?: Loaders['listItemByRef'];

  constructor(
    private readonly store: Store,
    private readonly cache: boolean,
    private readonly counts: () => CountReadOptions,
    private readonly signal: AbortSignal | undefined,
  ) {}

  /** A batch function that first asks whether its request still has a client. */
  private batch<K, V>(read: (keys: readonly K[]) => Promise<V[]>): (keys: readonly K[]) => Promise<V[]> {
    const { signal } = this;
    return async (keys) => {
      stopIfAborted(signal);
      return read(keys);
    };
  }

  get userById(): Loaders['userById'] {
    const { store, cache } = this;
    return (this.madeUserById ??= new RequestLoader(this.batch((ids: readonly string[]) => readUsers(store, ids)), { cache }));
  }

  get userIdByUsername(): Loaders['userIdByUsername'] {
    const { store, cache } = this;
    return (this.madeUserIdByUsername ??= new RequestLoader(this.batch((names: readonly string[]) => readUserIds(store, names)), { cache }));
  }

  get postByKey(): Loaders['postByKey'] {
    const { store, cache } = this;
    return (this.madePostByKey ??= new RequestLoader(this.batch((keys: readonly { authorId: string; postId: string }[]) => readPosts(store, keys)), {
      cache,
      cacheKeyFn: (k: { authorId: string; postId: string }) => `${k.authorId}:${k.postId}`,
    }));
  }

  get suspensionByUserId(): Loaders['suspensionByUserId'] {
    const { store, cache } = this;
    return (this.madeSuspensionByUserId ??= new RequestLoader(this.batch((ids: readonly string[]) => readSuspensions(store, ids)), { cache }));
  }

  get meetingById(): Loaders['meetingById'] {
    const { store, cache } = this;
    return (this.madeMeetingById ??= new RequestLoader(this.batch((ids: readonly string[]) => readMeetings(store, ids)), { cache }));
  }

  get connectionCount(): Loaders['connectionCount'] {
    const { store, cache, counts } = this;
    return (this.madeConnectionCount ??= new RequestLoader(this.batch((keys: readonly string[]) => readConnectionCounts(store, keys, counts())), { cache }));
  }

  get listById(): Loaders['listById'] {
    const { store, cache } = this;
    return (this.madeListById ??= new RequestLoader(this.batch((ids: readonly string[]) => readLists(store, ids)), { cache }));
  }

  /** One ledger read per list, however many of its items are asked for. */
  get listItemByRef(): Loaders['listItemByRef'] {
    const { store, cache } = this;
    return (this.madeListItemByRef ??= new RequestLoader(
      this.batch(async (refs: readonly { listId: string; itemId: string }[]) => {
        const byList = new Map<string, string[]>();
        for (const r of refs) byList.set(r.listId, [...(byList.get(r.listId) ?? []), r.itemId]);
        const found = new Map<string, ListItem | null>();
        for (const [listId, itemIds] of byList) {
          const items = await readListItems(store, listId, itemIds);
          itemIds.forEach((id, i) => found.set(`${listId}:${id}`, items[i] ?? null));
        }
        return refs.map((r) => found.get(`${r.listId}:${r.itemId}`) ?? null);
      }),
      { cache, cacheKeyFn: (r: { listId: string; itemId: string }) => `${r.listId}:${r.itemId}` },
    ));
  }
}
