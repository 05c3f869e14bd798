/**
 * The two sagas of seed 000, ordered so that nothing ever becomes unreachable:
 * - suspend writes the reverse lookup first (claimed with insert-if-not-exists, so a
 *   second suspension is CONFLICT), then registers the bucket, then writes the
 *   sorted-set row. A sorted-set row is thus never without its lookup (it can always
 *   be unsuspended) nor in an unregistered bucket (paging always finds it).
 * - unsuspend deletes the sorted-set row first, then the lookup: "if we start the other
 *   way around and the second deletion fails, we'll be unable to delete that row".
 *
 * Buckets emptied by unsuspensions leave the registry, so paging never probes them.
 * Pruning races a suspension into the same bucket; two rules keep every row reachable:
 * the pruner re-checks after deleting the entry (and re-registers if a row appeared),
 * and a suspension confirms its registration after writing its row. Whichever runs
 * last, the entry exists whenever the bucket holds a row.
 */
import { DomainError } from '../../errors.js';
import type { SagaDefinition } from '../../saga/saga-runner.js';
import type { Store } from '../../store/port.js';
import { SUSPENDED, statusBucketsTable, suspendedUsersTable, usersByStatusTable } from './suspensions-tables.js';

async function bucketIsEmpty(store: Store, bucket: string): Promise<boolean> {
  const rows = await store.slice(usersByStatusTable, { partition: { bucket, status: SUSPENDED }, limit: 1 });
  return rows.length === 0;
}

/** Drop an empty bucket from the registry (see the race note above). */
async function pruneBucket(store: Store, bucket: string): Promise<void> {
  if (!(await bucketIsEmpty(store, bucket))) return;
  await store.delete(statusBucketsTable, { status: SUSPENDED, bucket });
  if (!(await bucketIsEmpty(store, bucket))) await store.upsert(statusBucketsTable, { status: SUSPENDED, bucket });
}

/** What both sagas carry (JSON in the saga log). */
export interface SuspensionPayload {
  readonly userId: string;
  readonly reason: string;
  /** Epoch milliseconds. */
  readonly occurredOn: number;
  readonly bucket: string;
  /** The saga that created the suspension (owner of the reverse lookup). */
  readonly ownerSagaId: string;
}

function sortedSetRow(p: SuspensionPayload) {
  return { bucket: p.bucket, status: SUSPENDED, occurred_on: new Date(p.occurredOn), user_id: p.userId, reason: p.reason };
}

function sortedSetKey(p: SuspensionPayload) {
  return { bucket: p.bucket, status: SUSPENDED, occurred_on: new Date(p.occurredOn), user_id: p.userId };
}

/**
 * Delete the reverse lookup only if this suspension owns it: a conditional delete, as
 * for every row written by a lightweight transaction.
 */
async function releaseLookup(store: Store, p: SuspensionPayload): Promise<void> {
  await store.deleteIf(suspendedUsersTable, { user_id: p.userId }, { saga_id: p.ownerSagaId });
}

export const suspendSaga: SagaDefinition<SuspensionPayload> = {
  kind: 'suspendUser',
  // A crash means the admin never saw a success: undo rather than finish.
  recovery: 'backward',
  steps: (store) => [
    {
      name: 'claim the reverse lookup',
      async run(p) {
        const claim = await store.insertIfNotExists(suspendedUsersTable, {
          user_id: p.userId,
          occurred_on: new Date(p.occurredOn),
          bucket: p.bucket,
          reason: p.reason,
          saga_id: p.ownerSagaId,
        });
        // A re-run (recovery) finds its own claim: that is success, not a conflict.
        if (!claim.applied && claim.existing?.saga_id !== p.ownerSagaId) {
          throw new DomainError('CONFLICT', 'the user is already suspended', 'userId');
        }
      },
      compensate: (p) => releaseLookup(store, p),
    },
    {
      name: 'register the bucket',
      // Idempotent and harmless to leave: an empty bucket costs paging one empty read.
      run: (p) => store.upsert(statusBucketsTable, { status: SUSPENDED, bucket: p.bucket }),
    },
    {
      name: 'write the sorted-set row',
      run: (p) => store.upsert(usersByStatusTable, sortedSetRow(p)),
      compensate: (p) => store.delete(usersByStatusTable, sortedSetKey(p)),
    },
    {
      name: 'confirm the bucket registration',
      // Later than any prune that could not yet see the row (see the note above).
      run: (p) => store.upsert(statusBucketsTable, { status: SUSPENDED, bucket: p.bucket }),
    },
  ],
};

export const unsuspendSaga: SagaDefinition<SuspensionPayload> = {
  kind: 'unsuspendUser',
  // Once the sorted-set row may be gone, finishing is the shortest way to consistency.
  recovery: 'forward',
  // Deleting the lookup commits the unsuspension; pruning the bucket is housekeeping.
  pivot: 1,
  steps: (store) => [
    {
      name: 'delete the sorted-set row',
      run: (p) => store.delete(usersByStatusTable, sortedSetKey(p)),
      async compensate(p) {
        // Put the row back only while its lookup still exists (it does until step 2).
        const lookup = await store.get(suspendedUsersTable, { user_id: p.userId });
        if (lookup && lookup.saga_id === p.ownerSagaId) await store.upsert(usersByStatusTable, sortedSetRow(p));
      },
    },
    {
      name: 'delete the reverse lookup',
      run: (p) => releaseLookup(store, p),
    },
    {
      name: 'prune the bucket if it is empty',
      run: (p) => pruneBucket(store, p.bucket),
    },
  ],
};

/** Both definitions, for the saga runner. */
export const suspensionSagas = [suspendSaga, unsuspendSaga];
