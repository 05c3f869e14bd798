/**
 * The small demo data set `npm start` loads into an empty store, so every playground
 * example has something to show: users with locations and names, enough posts
 * for several pages, a suspension, a meeting with acceptances, and an ordered list.
 * It imports nothing above it: the composition root hands in the features it writes
 * through (`demoSeeding` there).
 */
import type { Lists } from '../features/lists/lists.js';
import type { Meetings } from '../features/meetings/meetings.js';
import type { Suspensions } from '../features/suspensions/suspensions.js';
import type { Timeline } from '../features/timeline/timeline.js';
import { readUserIds, type Users } from '../features/users/users.js';
import type { DemoIds } from '../graphql/playground.js';
import { listGlobalId, meetingGlobalId, userGlobalId } from '../graphql/ids.js';
import type { Store } from '../store/port.js';
import { seedProgressTable } from './seed-tables.js';

const DEMO_USERS = [
  { username: 'alice', displayName: 'Alice Liddell', location: 'Paris', firstName: 'Alice', lastName: 'Liddell', posts: 45 },
  { username: 'bob', displayName: 'Bob Cratchit', location: 'Lyon', firstName: 'Bob', lastName: 'Cratchit', posts: 12 },
  { username: 'carol', displayName: 'Carol Danvers', location: 'Paris', firstName: 'Carol', lastName: 'Danvers', posts: 3 },
  { username: 'dave', displayName: 'Dave Lister', location: 'Paris', firstName: 'Dave', lastName: 'Lister', posts: 1 },
];

/** The features the demo set is written through. */
export interface DemoFeatures {
  readonly users: Users;
  readonly timeline: Timeline;
  readonly suspensions: Suspensions;
  readonly meetings: Meetings;
  readonly lists: Lists;
}

/** What seeding the demo set needs from whoever wires the features (the composition root's `demoSeeding`). */
export interface DemoSeeding {
  readonly store: Store;
  /** The features of one unit of work, acting as an admin. */
  readonly features: () => DemoFeatures;
  /** Apply a list's pending transactions now, so the demo list is settled before the server answers. */
  readonly drainList: (listId: string) => Promise<void>;
}

/** What was seeded, for the start-up log. */
export interface DemoSummary {
  readonly meetingId: string;
  readonly listId: string;
}

/** Where the demo set's ids are kept, so every start (not only the first) can show them. */
const DEMO_KEY = { run: 'demo', unit: 'ids' } as const;

/** The demo set's meeting and list ids, or null when the store holds no demo set. */
export async function demoIds(store: Store): Promise<DemoSummary | null> {
  const row = await store.get(seedProgressTable, DEMO_KEY);
  return row?.done ? { meetingId: row.ref as string, listId: row.detail as string } : null;
}

/** The demo set's global IDs for the playground's example tabs, or null. */
export async function demoGlobalIds(store: Store): Promise<DemoIds | null> {
  const [ids, [alice]] = await Promise.all([demoIds(store), readUserIds(store, [DEMO_USERS[0]!.username])]);
  return ids && alice ? { meeting: meetingGlobalId(ids.meetingId), list: listGlobalId(ids.listId), alice: userGlobalId(alice) } : null;
}

/** Seed the demo set unless its first user exists; returns the ids to try, or null. */
export async function seedDemoData(seeding: DemoSeeding, now = Date.now()): Promise<DemoSummary | null> {
  const ctx = seeding.features();
  const [existing] = await ctx.users.idsByUsername([DEMO_USERS[0]!.username]);
  if (existing) return null;
  const ids: string[] = [];
  for (const demo of DEMO_USERS) {
    const user = await ctx.users.create(demo, new Date(now - 30 * 86_400_000));
    ids.push(user.id);
    for (let i = 0; i < demo.posts; i++) {
      // One post an hour, oldest first, ending now.
      const at = new Date(now - (demo.posts - i) * 3_600_000);
      await ctx.timeline.createPost(user.id, `${demo.displayName}'s post #${i + 1}`, at);
    }
  }
  await ctx.suspensions.suspend({ userId: ids[3]!, reason: 'posted spam links', suspendedAt: new Date(now - 2 * 86_400_000) });
  const meeting = await ctx.meetings.create({ title: 'Tea party planning' }, ids[0]!);
  for (const id of ids.slice(0, 3)) await ctx.meetings.accept(meeting.meetingId, id);
  const list = await ctx.lists.create('Groceries', ids[0]!);
  for (const label of ['milk', 'eggs', 'bread', 'tea', 'jam']) await ctx.lists.add(list.listId, label);
  await seeding.drainList(list.listId);
  await seeding.store.upsert(seedProgressTable, { ...DEMO_KEY, ref: meeting.meetingId, step: 0, detail: list.listId, done: true });
  return { meetingId: meeting.meetingId, listId: list.listId };
}
