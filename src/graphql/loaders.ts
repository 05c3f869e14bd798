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
 * Keys asked for together (`RequestLoader.loadAll`), travelling through DataLoader as one
 * key: one promise, one batch callback and one cache check for them all, not one each.
 * The batch function sees the keys themselves, in the batch DataLoader dispatches (so
 * they share a batch, and its store call, with whatever else the request loads in that
 * tick, as loads of their own would), and its answer for the bulk is their values.
 */
class Bulk<K, C, V> {
  /** The values, once the bulk's batch was dispatched: DataLoader's promise for it. */
  values: Promise<Array<V | Error>> | null = null;
  /** Promises made for single keys of the bulk asked for while it was read (rare). */
  single: Map<C, Promise<V>> | null = null;
  constructor(
    readonly keys: K[],
    readonly cacheKeys: C[],
  ) {}
}

/** A held value of `undefined`, told apart from a key the cache has no entry for. */
const UNDEFINED = Symbol('undefined');
/** What `SettledCache.held` answers for a key whose value the request does not hold. */
const NOT_HELD = Symbol('not held');

/**
 * A loader's cache that holds, for each key, the value read when the request has it, and
 * otherwise DataLoader's promise for it or the bulk reading it: one map entry a key,
 * set once and then overwritten in place, so `RequestLoader.loadNow` can hand the value
 * out without a promise. A value replaces the promise it came from only while that
 * promise is still the one cached for its key: `clear`, `prime` and `clearAll` replace
 * or drop the entry, and a batch then leaves it alone.
 *
 * The values come from the batch itself (`settling`), not from a `then` on each key's
 * promise: that was one more promise, two closures and a microtask per key, and a
 * 50-edge page asks for 101 keys (docs/benchmarks-history.md, issue 39: the keyed reads).
 * A page's keys went into three maps (DataLoader's promises, the values held, the keys a
 * bulk was reading), each grown to 64 entries a page, the last emptied again: one map
 * now (round four).
 *
 * A key a bulk is reading has the bulk as its entry, and no promise of its own: one is
 * made from the bulk's if someone asks for the key meanwhile; once read, its value is
 * held, and `get` makes a resolved promise for it only when `load` asks.
 */
class SettledCache<C, V> extends Map<C, unknown> {
  /** While `prime` sets a key: its value (`RequestLoader.prime`). */
  priming: { readonly value: V } | null = null;

  /** The value this request holds for `key`, or NOT_HELD. */
  held(key: C): V | typeof NOT_HELD {
    return heldIn<V>(super.get(key));
  }

  /** The key's entry as it stands: a value held (UNDEFINED for `undefined`), a promise, a bulk, or undefined. */
  entry(key: C): unknown {
    return super.get(key);
  }

  /** `key` is read by `bulk` (`RequestLoader.loadAll`). */
  readBy(key: C, bulk: Bulk<unknown, C, V>): void {
    super.set(key, bulk);
  }

  override get(key: C): Promise<V> | undefined {
    const entry = super.get(key);
    if (entry === undefined || entry instanceof Promise) return entry as Promise<V> | undefined;
    if (!(entry instanceof Bulk)) return Promise.resolve(heldIn<V>(entry) as V);
    const bulk = entry as Bulk<unknown, C, V>;
    if (bulk.values === null) return undefined;
    const at = bulk.cacheKeys.indexOf(key);
    const single = quiet(bulk.values.then((values) => (values[at] instanceof Error ? Promise.reject(values[at]) : (values[at] as V))));
    (bulk.single ??= new Map()).set(key, single);
    super.set(key, single);
    return single;
  }

  override set(key: C, promise: Promise<V>): this {
    // A bulk's own promise is not a key's: DataLoader caches it, this does not.
    if (key instanceof Bulk) return this;
    const primed = this.priming;
    // A primed error stays the loader's to report: `loadNow` then goes through `load`.
    return super.set(key, primed !== null && !(primed.value instanceof Error) ? heldEntry(primed.value) : promise);
  }

  override delete(key: C): boolean {
    // A bulk whose batch failed (DataLoader clears its keys): its keys are read again when next asked for.
    if (key instanceof Bulk) {
      const bulk = key as Bulk<unknown, C, V>;
      for (const k of bulk.cacheKeys) if (this.readingBy(bulk, k)) super.delete(k);
      return true;
    }
    return super.delete(key);
  }

  /** Whether `key`'s entry is still `bulk`'s: the bulk itself, or the promise made from it for the key. */
  private readingBy(bulk: Bulk<unknown, C, V>, key: C): boolean {
    const entry = super.get(key);
    return entry === bulk || (entry !== undefined && bulk.single?.get(key) === entry);
  }

  /**
   * `batch`, holding each value it reads for its key while the key's entry is still the
   * promise `load` made for this batch (not cleared, re-primed or read again since).
   * Errors are not held: `load` reports them. A key of the batch whose value is held
   * already was primed after `load` cached it: its primed value stands. A bulk's keys go
   * to `batch` in its place, and their values are held while the bulk still reads them.
   */
  settling<K>(batch: DataLoader.BatchLoadFn<K, V>, keyOf: (key: K) => C): DataLoader.BatchLoadFn<K, V> {
    return async (keys) => {
      const asked = keys.map((key) => {
        if (key instanceof Bulk) return undefined;
        const entry = super.get(keyOf(key));
        return entry instanceof Promise ? entry : undefined;
      });
      const bulks = keys.some((key) => key instanceof Bulk);
      const flat = bulks ? keys.flatMap((key) => (key instanceof Bulk ? (key.keys as K[]) : [key])) : keys;
      const values = await batch(flat);
      if (values.length !== flat.length) return values;
      if (!bulks) {
        for (let i = 0; i < keys.length; i++) this.hold(keyOf(keys[i]!), asked[i], values[i]!);
        return values;
      }
      const out = new Array<V | Error>(keys.length);
      for (let i = 0, at = 0; i < keys.length; i++) {
        const key = keys[i]!;
        if (key instanceof Bulk) {
          const bulk = key as Bulk<K, C, V>;
          out[i] = Array.prototype.slice.call(values, at, at + bulk.keys.length) as V;
          for (const k of bulk.cacheKeys) {
            const value = values[at++]!;
            if (!this.readingBy(bulk as Bulk<unknown, C, V>, k)) continue;
            super.set(k, value instanceof Error ? quiet(Promise.reject(value)) : heldEntry(value));
          }
          continue;
        }
        const value = values[at++]!;
        out[i] = value;
        this.hold(keyOf(key), asked[i], value);
      }
      return out;
    };
  }

  /** Hold `cacheKey`'s value, when it is not an error and the promise `load` cached for it (`asked`) still stands. */
  private hold(cacheKey: C, asked: Promise<V> | undefined, value: V | Error): void {
    if (asked === undefined || value instanceof Error) return;
    if (super.get(cacheKey) === asked) super.set(cacheKey, heldEntry(value));
  }
}

/** A value as the cache holds it (`undefined` as UNDEFINED). */
function heldEntry<V>(value: V): unknown {
  return value === undefined ? UNDEFINED : value;
}

/** The value a cache entry holds, or NOT_HELD for no entry, a promise or a bulk. */
function heldIn<V>(entry: unknown): V | typeof NOT_HELD {
  if (entry === undefined || entry instanceof Promise || entry instanceof Bulk) return NOT_HELD;
  return (entry === UNDEFINED ? undefined : entry) as V;
}

/** A rejected promise cached for a key, which nobody may ever ask for: not an unhandled rejection. */
function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
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
      // A bulk is its own cache key (`SettledCache.set` does not keep it).
      cacheKeyFn: (key: K) => (key instanceof Bulk ? (key as C) : keyOf(key)),
      ...(settled && { cacheMap: settled }),
    });
    this.settled = settled;
    this.keyOf = keyOf;
  }

  /** The value of `key` when this request has already read it; otherwise `load(key)`. */
  loadNow(key: K): V | Promise<V> {
    if (this.settled !== null) {
      const held = this.settled.held(this.keyOf(key));
      if (held !== NOT_HELD) return held;
    }
    return this.load(key);
  }

  /**
   * The values of `keys`, in order, as `load` gives each (the same batching, caching and
   * errors), with one promise for the keys not yet read rather than one each: those the
   * request holds come as they are, the others travel as one key of DataLoader's batch
   * (`Bulk`). A page's filter asks for 51 at once; a promise, its two resolving
   * functions, a callback record and a `Promise.all` element each lived through the
   * page's lookups (issue 39, round three).
   */
  async loadAll(keys: readonly K[]): Promise<V[]> {
    const settled = this.settled;
    if (settled === null) return Promise.all(keys.map((key) => this.load(key)));
    const out = new Array<V>(keys.length);
    const bulk = new Bulk<K, C, V>([], []);
    /** Where each of the bulk's keys goes in `out`; a key asked for twice, where else (and which of the bulk's it is). */
    const places: number[] = [];
    let repeats: Array<readonly [number, number]> | null = null;
    let others: Array<Promise<void>> | null = null;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const cacheKey = this.keyOf(key);
      const entry = settled.entry(cacheKey);
      if (entry === undefined) {
        bulk.keys.push(key);
        bulk.cacheKeys.push(cacheKey);
        places.push(i);
        settled.readBy(cacheKey, bulk as Bulk<unknown, C, V>);
      } else if (entry === bulk) {
        (repeats ??= []).push([i, bulk.cacheKeys.indexOf(cacheKey)]);
      } else if (entry instanceof Promise || entry instanceof Bulk) {
        // Read or being read already: as `load` answers it.
        (others ??= []).push(this.load(key).then((value) => void (out[i] = value)));
      } else {
        out[i] = heldIn<V>(entry) as V;
      }
    }
    if (bulk.keys.length > 0) bulk.values = this.load(bulk as unknown as K) as unknown as Promise<Array<V | Error>>;
    // Both waited for together: a failure of either is this call's, and neither is left unhandled.
    const values = others === null ? await bulk.values : (await Promise.all([bulk.values, Promise.all(others)]))[0];
    if (values === null) return out;
    for (let j = 0; j < places.length; j++) {
      const value = values[j]!;
      if (value instanceof Error) throw value;
      out[places[j]!] = value;
    }
    for (const [i, j] of repeats ?? []) out[i] = values[j] as V;
    return out;
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
