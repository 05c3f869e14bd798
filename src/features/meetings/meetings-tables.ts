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

/**
 * seed 001's counter, split by time window: the request whose write won increments the
 * window of its own timestamp (`window_start`, ms, a multiple of ACCEPTANCE_WINDOW_MS).
 * Quick, and exact in the common case; the verifier replaces closed windows by an exact
 * count (`meetingAcceptanceSettledTable`).
 */
export const meetingAcceptanceWindowsTable = defineTable({
  name: 'meeting_acceptance_windows',
  columns: { meeting_id: 'uuid', window_start: 'bigint', acceptance_count: 'counter' },
  partitionKey: ['meeting_id'],
  clustering: ['window_start'],
});

/**
 * The verified part of a meeting's count: `settled_count` acceptances were first made
 * before `settled_through` (ms). Written idempotently (the same through always gives
 * the same count) with `USING TIMESTAMP settled_through`, so a later settlement always
 * wins, whichever server writes it, and the pair is never torn. `first_window` and
 * `last_window` (ms) bound the windows the meeting's acceptances may have counted in,
 * each cell ordered by its own timestamp (acceptance-verifier.ts), so a count is read
 * by key, for a whole page of meetings at once.
 */
export const meetingAcceptanceSettledTable = defineTable({
  name: 'meeting_acceptance_settled',
  columns: {
    meeting_id: 'uuid',
    settled_through: 'bigint',
    settled_count: 'bigint',
    first_window: 'bigint',
    last_window: 'bigint',
  },
  partitionKey: ['meeting_id'],
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

/**
 * Which meetings had acceptances in which window: the verifier's work list. Written
 * with every acceptance (in its logged batch) with a TTL, never deleted; sharded so one
 * window is not one hot partition.
 */
export const acceptanceWindowMarksTable = defineTable({
  name: 'acceptance_window_marks',
  columns: { window_start: 'bigint', shard: 'int', meeting_id: 'uuid' },
  partitionKey: ['window_start', 'shard'],
  clustering: ['meeting_id'],
});

/**
 * How far the verifiers have got (one row): written `USING TIMESTAMP verified_through`,
 * so it only moves forward, whichever verifier writes last.
 */
export const acceptanceVerifierProgressTable = defineTable({
  name: 'acceptance_verifier_progress',
  columns: { name: 'text', verified_through: 'bigint' },
  partitionKey: ['name'],
});

/** Every table this feature owns. */
export const meetingTables = [
  meetingsTable,
  meetingUsersTable,
  meetingAcceptanceWindowsTable,
  meetingAcceptanceSettledTable,
  acceptanceWindowMarksTable,
  acceptanceVerifierProgressTable,
  meetingsByUserTable,
];
