/** Tables of meeting acceptances (seed 001). */
import { defineTable } from '../../store/table.js';

/** One row per meeting. */
export const meetingsTable = defineTable({
  name: 'meetings',
  columns: { meeting_id: 'uuid', title: 'text', created_by: 'uuid', created_at: 'timestamp' },
  partitionKey: ['meeting_id'],
});

/**
 * seed 001's unique set: one row per (meeting, user). CQL cannot select WRITETIME of a
 * key column, so the row carries regular columns written `USING TIMESTAMP (2^63-1 - now)`:
 * `write_token` (this request's, to break timestamp ties) and `accepted_at`. (Not
 * `token`: a reserved CQL keyword.)
 */
export const meetingUsersTable = defineTable({
  name: 'meeting_users',
  columns: { meeting_id: 'uuid', user_id: 'uuid', accepted_at: 'timestamp', write_token: 'text' },
  partitionKey: ['meeting_id'],
  clustering: ['user_id'],
});

/** seed 001's counter: incremented only by the request whose write won. */
export const meetingAcceptanceCountsTable = defineTable({
  name: 'meeting_acceptance_counts',
  columns: { meeting_id: 'uuid', acceptance_count: 'counter' },
  partitionKey: ['meeting_id'],
});

/** Every table this feature owns. */
export const meetingTables = [meetingsTable, meetingUsersTable, meetingAcceptanceCountsTable];
