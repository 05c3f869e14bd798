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
 * `token`: a reserved CQL keyword.) The count of its rows is a connection count
 * (counts/connection-counts.ts), which replaced the per-window counter tables
 * (`meeting_acceptance_windows`, `meeting_acceptance_settled`, `acceptance_window_marks`,
 * `acceptance_verifier_progress`) of earlier versions.
 */
export const meetingUsersTable = defineTable({
  name: 'meeting_users',
  columns: { meeting_id: 'uuid', user_id: 'uuid', accepted_at: 'timestamp', write_token: 'text' },
  partitionKey: ['meeting_id'],
  clustering: ['user_id'],
});

/**
 * Reverse lookup for `User.meetings`: the meetings a user created or accepted, one
 * partition per user, so a page is one slice. Newest meeting first, ordered by the
 * meeting's creation time rather than by when the user accepted: that time is known
 * before the acceptance is written and is the same for every attempt, so the row's key
 * is deterministic. A repeated or concurrent accept (and a creator who accepts their own
 * meeting) rewrites the very same row, never a second edge, and the row can be written
 * before the acceptance, so a crash between the two never leaves an accepted meeting
 * unreachable. Ordering by acceptance time would need the winning acceptance's time,
 * known only after seed 001's write-then-read, which forces the lookup to come second.
 * The row holds key columns only: an upsert repeated at any timestamp changes nothing.
 */
export const meetingsByUserTable = defineTable({
  name: 'meetings_by_user',
  columns: { user_id: 'uuid', created_at: 'timestamp', meeting_id: 'uuid' },
  partitionKey: ['user_id'],
  clustering: [
    { column: 'created_at', order: 'DESC' },
    { column: 'meeting_id', order: 'DESC' },
  ],
});

/** Every table this feature owns. */
export const meetingTables = [meetingsTable, meetingUsersTable, meetingsByUserTable];
