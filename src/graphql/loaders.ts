/**
 * Per-request DataLoaders: every field that reads by key goes through one, so a page
 * of n edges costs a fixed number of store round trips, not n. Batch functions
 * return results in key order, with null for misses.
 */
import DataLoader from 'dataloader';
import type { ListItem, Lists, OrderedList } from '../features/lists/lists.js';
import type { Meeting, Meetings } from '../features/meetings/meetings.js';
import type { Suspension, Suspensions } from '../features/suspensions/suspensions.js';
import type { Post, Timeline } from '../features/timeline/timeline.js';
import type { User, Users } from '../features/users/users.js';

/** The loaders of one request. */
export interface Loaders {
  readonly userById: DataLoader<string, User | null>;
  readonly userIdByUsername: DataLoader<string, string | null>;
  readonly postByKey: DataLoader<{ authorId: string; postId: string }, Post | null, string>;
  readonly suspensionByUserId: DataLoader<string, Suspension | null>;
  readonly meetingById: DataLoader<string, Meeting | null>;
  readonly acceptanceCount: DataLoader<string, number>;
  readonly listById: DataLoader<string, OrderedList | null>;
  readonly listItemByRef: DataLoader<{ listId: string; itemId: string }, ListItem | null, string>;
}

/** Fresh loaders for one request. */
export function createLoaders(features: {
  users: Users;
  timeline: Timeline;
  suspensions: Suspensions;
  meetings: Meetings;
  lists: Lists;
}): Loaders {
  return {
    userById: new DataLoader((ids) => features.users.byIds(ids)),
    userIdByUsername: new DataLoader((names) => features.users.idsByUsername(names)),
    postByKey: new DataLoader((keys) => features.timeline.byKeys(keys), {
      cacheKeyFn: (k) => `${k.authorId}:${k.postId}`,
    }),
    suspensionByUserId: new DataLoader((ids) => features.suspensions.byUserIds(ids)),
    meetingById: new DataLoader((ids) => features.meetings.byIds(ids)),
    acceptanceCount: new DataLoader((ids) => features.meetings.countsByIds(ids)),
    listById: new DataLoader((ids) => features.lists.byIds(ids)),
    // One ledger read per list, however many of its items are asked for.
    listItemByRef: new DataLoader(
      async (refs) => {
        const byList = new Map<string, string[]>();
        for (const r of refs) byList.set(r.listId, [...(byList.get(r.listId) ?? []), r.itemId]);
        const found = new Map<string, ListItem | null>();
        for (const [listId, itemIds] of byList) {
          const items = await features.lists.itemsByIds(listId, itemIds);
          itemIds.forEach((id, i) => found.set(`${listId}:${id}`, items[i] ?? null));
        }
        return refs.map((r) => found.get(`${r.listId}:${r.itemId}`) ?? null);
      },
      { cacheKeyFn: (r) => `${r.listId}:${r.itemId}` },
    ),
  };
}
