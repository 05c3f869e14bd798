/** The idempotency keys of mutations (`clientMutationId`): tables. */
import { defineTable } from '../../store/table.js';

/**
 * One partition per key (a hash of the viewer, the mutation field and the
 * `clientMutationId`), one row per attempt at the mutation. The first claim
 * (insert-if-not-exists; attempt 0, or the number above rows an expired claim left
 * behind) holds the input's fingerprint and the plan every attempt draws its ids from
 * (`seed`, `planned_at`). A later attempt claims the next
 * number, also by insert-if-not-exists, when the one before ended without a result
 * (`ended`), outlived any request, or lost its process. `result` is the payload of the
 * attempt that finished. `result` and `ended` are written by plain upserts: the claim
 * (a Paxos round) never writes them, so no ballot timestamp can hide them. Every row
 * lives `IDEMPOTENCY_RETENTION_S` (a TTL); a row is deleted only by a conditional delete.
 */
export const mutationKeysTable = defineTable({
  name: 'mutation_keys',
  columns: {
    scope: 'text',
    attempt: 'int',
    fingerprint: 'text',
    seed: 'text',
    planned_at: 'timestamp',
    started_at: 'timestamp',
    owner_process: 'uuid',
    owner_node: 'int',
    owner_instance: 'text',
    result: 'text',
    ended: 'boolean',
  },
  partitionKey: ['scope'],
  clustering: ['attempt'],
});

/** Every table of idempotency keys. */
export const idempotencyTables = [mutationKeysTable];
