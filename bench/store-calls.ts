/**
 * The embedded store's cost per call on the paths a page takes (issue 18): a 21-row
 * slice of one timeline partition, and a `getMany` of 20 users (the DataLoader batch),
 * in µs per call, median of rounds. Run: `npx tsx bench/store-calls.ts`.
 */
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { v1 as uuidv1 } from 'uuid';
import { timelineTable } from '../src/features/timeline/timeline-tables.js';
import { usersTable } from '../src/features/users/users-tables.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { medianMicrosPerCall } from './history/harness.js';

const store = new SqliteStore({ database: new Database(':memory:') });
await store.ensureTables([timelineTable, usersTable]);
const author = randomUUID();
for (let i = 0; i < 200; i++) {
  await store.upsert(timelineTable, { user_id: author, post_id: uuidv1(), content: `post number ${i} with some text` });
}
const ids: string[] = [];
for (let i = 0; i < 200; i++) {
  const user_id = randomUUID();
  ids.push(user_id);
  await store.upsert(usersTable, {
    user_id,
    username: `user_${i}`,
    display_name: `User ${i}`,
    created_at: new Date(),
    location: 'Paris',
    last_name: `Name${i}`,
    location_ts: uuidv1(),
    last_name_ts: uuidv1(),
  });
}
const keys = (i: number) => Array.from({ length: 20 }, (_, k) => ({ user_id: ids[(i * 20 + k) % ids.length]! }));
const options = { calls: 2_000, rounds: 7, warmup: 500 };
const slice = await medianMicrosPerCall(() => store.slice(timelineTable, { partition: { user_id: author }, limit: 21 }), options);
const getMany = await medianMicrosPerCall((i) => store.getMany(usersTable, keys(i)), options);
const get = await medianMicrosPerCall((i) => store.get(usersTable, { user_id: ids[i % ids.length]! }), options);
console.log(`slice of 21 rows: ${slice.toFixed(1)} µs per call`);
console.log(`getMany of 20 keys: ${getMany.toFixed(1)} µs per call`);
console.log(`get of 1 key: ${get.toFixed(1)} µs per call`);
await store.close();
