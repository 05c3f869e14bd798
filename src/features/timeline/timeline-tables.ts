/** The timeline table, exactly as seed 000 declares it. */
import { defineTable } from '../../store/table.js';

/**
 * seed 000: `PRIMARY KEY (user_id, post_id) WITH CLUSTERING ORDER BY (post_id DESC)`:
 * one partition per author, newest post first, so a page is one slice.
 */
export const timelineTable = defineTable({
  name: 'timeline',
  columns: { user_id: 'uuid', post_id: 'timeuuid', content: 'text' },
  partitionKey: ['user_id'],
  clustering: [{ column: 'post_id', order: 'DESC' }],
});

/** Every table this feature owns. */
export const timelineTables = [timelineTable];
