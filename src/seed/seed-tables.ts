/**
 * The progress of `npm run seed`, so an interrupted run completes when run again: one
 * row per unit of work (a user with its posts, a meeting with its acceptances, a list
 * with its items and moves), keyed by the run's parameters.
 */
import { defineTable } from '../store/table.js';

/**
 * `ref` is the id the unit created (recorded as soon as it exists, so a resumed run
 * continues that user, meeting or list instead of creating another); `step` counts the
 * steps done that cannot be read back; `detail` holds what later steps need (a list's
 * item ids in the order they were added); `done` marks the unit complete.
 */
export const seedProgressTable = defineTable({
  name: 'seed_progress',
  columns: { run: 'text', unit: 'text', ref: 'text', step: 'int', detail: 'text', done: 'boolean' },
  partitionKey: ['run'],
  clustering: ['unit'],
});
