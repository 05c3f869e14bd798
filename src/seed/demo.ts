/**
 * The small demo data set `npm start` loads into an empty store: a few users and
 * enough posts for several pages, so the first query shows paging at work.
 */
import { Timeline } from '../features/timeline/timeline.js';
import { Users } from '../features/users/users.js';
import type { CursorCodec } from '../paging/cursor.js';
import type { Store } from '../store/port.js';

const DEMO_USERS = [
  { username: 'alice', displayName: 'Alice Liddell', posts: 45 },
  { username: 'bob', displayName: 'Bob Cratchit', posts: 12 },
  { username: 'carol', displayName: 'Carol Danvers', posts: 3 },
];

/** Seed the demo set unless its first user exists; returns whether anything was written. */
export async function seedDemoData(store: Store, codec: CursorCodec, now = Date.now()): Promise<boolean> {
  const users = new Users(store);
  const timeline = new Timeline(store, codec);
  const [existing] = await users.idsByUsername([DEMO_USERS[0]!.username]);
  if (existing) return false;
  for (const demo of DEMO_USERS) {
    const user = await users.create(demo, new Date(now - 30 * 86_400_000));
    for (let i = 0; i < demo.posts; i++) {
      // One post an hour, oldest first, ending now.
      const at = new Date(now - (demo.posts - i) * 3_600_000);
      await timeline.createPost(user.id, `${demo.displayName}'s post #${i + 1}`, at);
    }
  }
  return true;
}
