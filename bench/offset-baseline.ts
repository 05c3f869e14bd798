/**
 * The naive baselines deep paging is compared against: pages by offset.
 * - connectionFromArray: read the whole partition, then slice it (graphql-relay's way
 *   for in-memory arrays);
 * - SQL OFFSET: let SQLite skip the first n rows of the partition.
 */
import { connectionFromArray, offsetToCursor } from 'graphql-relay';
import type Database from 'better-sqlite3';
import { timelineTable } from '../src/features/timeline/timeline-tables.js';
import type { Store } from '../src/store/port.js';

/** Page `page` (1-based) of 20 by reading everything and slicing. */
export async function pageByArraySlice(store: Store, userId: string, page: number) {
  const rows = await store.slice(timelineTable, { partition: { user_id: userId }, limit: 1_000_000 });
  const after = page > 1 ? offsetToCursor((page - 1) * 20 - 1) : undefined;
  return connectionFromArray(rows, { first: 20, after });
}

/** Page `page` (1-based) of 20 with SQL OFFSET on the embedded store's table. */
export function pageBySqlOffset(db: Database.Database, pk: Buffer, page: number) {
  return db.prepare('SELECT * FROM t_timeline WHERE pk = ? ORDER BY ck LIMIT 20 OFFSET ?').all(pk, (page - 1) * 20);
}
