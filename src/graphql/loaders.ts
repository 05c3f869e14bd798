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
  readonly userById: DataLoader<string, User | null>;
  readonly userIdByUsername: DataLoader<string, string | null>;
  readonly postByKey: DataLoader<{ authorId: string; postId: string }, Post | null, string>;
  readonly suspensionByUserId: DataLoader<string, Suspension | null>;
  readonly meetingById: DataLoader<string, Meeting | null>;
  /**
   * Connection sizes by count key (`totalCount`, `acceptanceCount`): every count a
   * request asks for at once is one read.
   */
  readonly connectionCount: DataLoader<string, number>;
  readonly listById: DataLoader<string, OrderedList | null>;
  readonly listItemByRef: DataLoader<{ listId: string; itemId: string }, ListItem | null, string>;
}

/** Without a verifier's progress or a clock of the process: the wall clock, and every window read as unsettled. */
const STANDALONE_COUNTS = (): CountReadOptions => ({ nowMs: Date.now(), cluster: DEFAULT_CLUSTER_SETTINGS, progress: null });

/**
 * Fresh loaders over one store view. `cache: false` keeps the batching but remembers
 * nothing: for long jobs (seeding) that would otherwise hold every row they touch.
 * `counts` tells count reads the time and the verifier's progress (the process's).
 * `signal` is the request's: once its client has gone, no batch reads
 * (`RequestAbortedError`).
 */
export function createLoaders(store: Store, options: { cache?: boolean; counts?: () => CountReadOptions; signal?: AbortSignal } = {}): Loaders {
  const cache = options.cache ?? true;
  const counts = options.counts ?? STANDALONE_COUNTS;
  const { signal } = options;
  // Each batch asks first whether its request still has a client.
  const batch =
    <K, V>(read: (keys: readonly K[]) => Promise<V[]>) =>
    async (keys: readonly K[]) => {
      stopIfAborted(signal);
      return read(keys);
    };
  return {
    userById: new DataLoader(batch((ids: readonly string[]) => readUsers(store, ids)), { cache }),
    userIdByUsername: new DataLoader(batch((names: readonly string[]) => readUserIds(store, names)), { cache }),
    postByKey: new DataLoader(batch((keys: readonly { authorId: string; postId: string }[]) => readPosts(store, keys)), {
      cache,
      cacheKeyFn: (k) => `${k.authorId}:${k.postId}`,
    }),
    suspensionByUserId: new DataLoader(batch((ids: readonly string[]) => readSuspensions(store, ids)), { cache }),
    meetingById: new DataLoader(batch((ids: readonly string[]) => readMeetings(store, ids)), { cache }),
    connectionCount: new DataLoader(batch((keys: readonly string[]) => readConnectionCounts(store, keys, counts())), { cache }),
    listById: new DataLoader(batch((ids: readonly string[]) => readLists(store, ids)), { cache }),
    // One ledger read per list, however many of its items are asked for.
    listItemByRef: new DataLoader(
      batch(async (refs: readonly { listId: string; itemId: string }[]) => {
        const byList = new Map<string, string[]>();
        for (const r of refs) byList.set(r.listId, [...(byList.get(r.listId) ?? []), r.itemId]);
        const found = new Map<string, ListItem | null>();
        for (const [listId, itemIds] of byList) {
          const items = await readListItems(store, listId, itemIds);
          itemIds.forEach((id, i) => found.set(`${listId}:${id}`, items[i] ?? null));
        }
        return refs.map((r) => found.get(`${r.listId}:${r.itemId}`) ?? null);
      }),
      { cache, cacheKeyFn: (r) => `${r.listId}:${r.itemId}` },
    ),
  };
}
