/** Tables of the users feature (seed 000's `users` plus a username lookup). */
import { defineTable } from '../../store/table.js';

/**
 * One row per user, by id. `location_ts` / `last_name_ts` name the directory index
 * entries that are current (see features/directory): written in the same batch as the
 * values, they let readers drop stale index hits. `name_ts` names the current version
 * of the name index's entries (µs: the write time of the change that made it).
 */
export const usersTable = defineTable({
  name: 'users',
  columns: {
    user_id: 'uuid',
    username: 'text',
    display_name: 'text',
    created_at: 'timestamp',
    location: 'text',
    last_name: 'text',
    location_ts: 'timeuuid',
    last_name_ts: 'timeuuid',
    first_name: 'text',
    name_ts: 'bigint',
  },
  partitionKey: ['user_id'],
});

/** Username -> user id; claimed with insert-if-not-exists so names are unique. */
export const usersByUsernameTable = defineTable({
  name: 'users_by_username',
  columns: { username: 'text', user_id: 'uuid' },
  partitionKey: ['username'],
});

/** Every table this feature owns. */
export const userTables = [usersTable, usersByUsernameTable];
