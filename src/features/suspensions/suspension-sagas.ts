/**
 * The two sagas of seed 000, ordered so that nothing ever becomes unreachable:
 * - suspend writes the reverse lookup first (claimed with insert-if-not-exists, so a
 *   second suspension is CONFLICT), then registers the bucket, then writes the
 *   sorted-set row. A sorted-set row is thus never without its lookup (it can always
 *   be unsuspended) nor in an unregistered bucket (paging always finds it).
 * - unsuspend deletes the sorted-set row first, then the lookup: "if we start the other
 *   way around and the second deletion fails, we'll be unable to delete that row".
 *
 * On many servers with skewed clocks, no step may rest on one server's clock beating
 * another's:
 * - The bucket registry shrinks, safely (features/bucket-registry.ts): registration and
 *   pruning are Paxos rounds, a suspension ensures its bucket's entry before and again
 *   after writing its sorted-set row, and an unsuspension prunes its bucket (last step,
 *   after the pivot, so recovery finishes a prune that failed or crashed midway).
 * - A suspension's sorted-set row is written, and deleted, at one timestamp fixed by
 *   the suspension itself (its saga id's time), not by the clock of whichever server
 *   runs the step: the delete of an unsuspension, or of a compensation run by recovery
 *   on another server, always hides the row (a tombstone wins a tie).
 * - The reverse lookup, claimed with insert-if-not-exists, is removed only by its
 *   owner, with a conditional delete (`deleteIfOwned`: `DELETE … IF saga_id = ?`).
 */
import { DomainError } from '../../errors.js';
import type { SagaDefinition } from '../../saga/saga-runner.js';
import type { CountWriter } from '../../counts/connection-counts.js';
import { indexChange, indexEntry } from '../../counts/count-ranks.js';
import type { ChangeWriter } from '../../live/change-log.js';
import type { Mutation, Store } from '../../store/port.js';
import { microsOfTimeuuid } from '../../store/timeuuid.js';
import { amendIfOwned, deleteIfOwned } from '../../store/owned-rows.js';
import { ensureRegistered, pruneStep, type BucketRegistry } from '../bucket-registry.js';
import { suspensionRank } from './suspension-ranks.js';
import { SUSPENDED, statusBucketsTable, suspendedUsersTable, usersByStatusTable } from './suspensions-tables.js';

/** What both sagas carry (JSON in the saga log). */
export interface SuspensionPayload {
  readonly userId: string;
  readonly reason: string;
  /** Epoch milliseconds. */
  readonly occurredOn: number;
  readonly bucket: string;
  /** The saga that created the suspension (owner of the reverse lookup). */
  readonly ownerSagaId: string;
  /** For an unsuspension: the live change that announced the suspension, if any (its change goes above). */
  readonly changeId?: string;
}

/** The live feed of suspensions (one for all: suspending is an admin's act, rare). */
export const SUSPENSIONS_FEED = 'suspensions';

/** The count key of the suspended users (`suspendedUsers.totalCount`). */
export const SUSPENSIONS_COUNT_KEY = 'suspended';

/**
 * A suspension entering (+1) or leaving (-1) the count, named by the saga that made it,
 * and its entry in the count's counted index (`suspensionEntry`).
 * Written in the step that shows or hides it; a step run again by recovery records a
 * second attempt, which the count's ledger rules out (counts/connection-counts.ts), and
 * an undo of a suspension that never counted (its confirmation failed first) takes
 * nothing away.
 */
function countChange(counts: CountWriter, p: SuspensionPayload, sign: 1 | -1): Mutation[] {
  return [...counts.mutations({ key: SUSPENSIONS_COUNT_KEY, item: p.ownerSagaId, sign }), ...indexChange(counts, SUSPENSIONS_COUNT_KEY, suspensionEntry(p), sign)];
}

/**
 * A suspension's entry in the counted index of `suspendedUsers` (`offset`): its rank
 * (its time and user), then its saga. Its count key is the count's index key: the count
 * names suspensions by saga, whose id tells nothing of where the suspension stands.
 */
export function suspensionEntry(p: Pick<SuspensionPayload, 'occurredOn' | 'userId' | 'ownerSagaId'>): string {
  return indexEntry(suspensionRank(p.occurredOn, p.userId), p.ownerSagaId);
}

/** The change announcing a suspension, identified by the saga that made it. */
function suspendedChange(changes: ChangeWriter, p: SuspensionPayload, id: string): Mutation[] {
  return changes.mutations({
    feed: SUSPENSIONS_FEED,
    id,
    kind: 'suspended',
    item: `${p.ownerSagaId}+`,
    payload: { userId: p.userId, reason: p.reason, occurredOn: p.occurredOn, bucket: p.bucket },
  });
}

/** The change announcing that a suspension ended (lifted, or undone by a compensation). */
function unsuspendedChange(changes: ChangeWriter, p: SuspensionPayload): Mutation[] {
  return changes.mutations({
    feed: SUSPENSIONS_FEED,
    id: changes.nextId(p.changeId),
    kind: 'unsuspended',
    item: `${p.ownerSagaId}-`,
    payload: { userId: p.userId },
  });
}

/** The registry of suspension buckets: entries in status_buckets, rows in users_by_status. */
export const suspensionBuckets: BucketRegistry = {
  table: statusBucketsTable,
  partition: { status: SUSPENDED },
  bucketTable: usersByStatusTable,
  bucketPartition: (bucket) => ({ bucket, status: SUSPENDED }),
};

function sortedSetRow(p: SuspensionPayload) {
  return { bucket: p.bucket, status: SUSPENDED, occurred_on: new Date(p.occurredOn), user_id: p.userId, reason: p.reason };
}

function sortedSetKey(p: SuspensionPayload) {
  return { bucket: p.bucket, status: SUSPENDED, occurred_on: new Date(p.occurredOn), user_id: p.userId };
}

/**
 * The write timestamp of a suspension's sorted-set row (µs): its saga id's time, so
 * every server writing or deleting that row uses the same one.
 */
export function sortedSetTimestamp(p: Pick<SuspensionPayload, 'ownerSagaId'>): bigint {
  return microsOfTimeuuid(p.ownerSagaId);
}

/**
 * Delete the reverse lookup only if this suspension owns it: a conditional delete, as
 * for every row written by a lightweight transaction.
 */
async function releaseLookup(store: Store, p: SuspensionPayload): Promise<void> {
  await deleteIfOwned(store, suspendedUsersTable, { user_id: p.userId }, 'saga_id', p.ownerSagaId);
}

/** The delete of a suspension's sorted-set row, at its own timestamp (see above). */
function sortedSetDelete(p: SuspensionPayload): Mutation {
  return { kind: 'delete', table: usersByStatusTable, key: sortedSetKey(p), options: { timestamp: sortedSetTimestamp(p) } };
}

/** Delete the suspension's sorted-set row at its own timestamp (see above). */
function deleteSortedSetRow(store: Store, p: SuspensionPayload): Promise<void> {
  const { table, key, options } = sortedSetDelete(p) as Mutation & { kind: 'delete' };
  return store.delete(table, key, options);
}

export const suspendSaga: SagaDefinition<SuspensionPayload> = {
  kind: 'suspendUser',
  // A crash means the admin never saw a success: undo rather than finish.
  recovery: 'backward',
  steps: (store, { changes, counts }) => [
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
      // Never undone: an extra entry costs paging one empty read, and the unsuspension
      // (or a later one in the same bucket) prunes it.
      run: (p) => ensureRegistered(store, suspensionBuckets, p.bucket),
    },
    {
      name: 'write the sorted-set row',
      run: (p) => store.upsert(usersByStatusTable, sortedSetRow(p), { timestamp: sortedSetTimestamp(p) }),
      compensate: (p) => deleteSortedSetRow(store, p),
    },
    {
      name: 'confirm the lookup',
      // From here on reads show the suspension. Stamped like the claim, so releasing
      // the lookup removes the confirmation with it.
      // First the bucket's entry again: a prune may have dropped it between the first
      // registration and the row (bucket-registry.ts, step w3). Then the confirmation,
      // which records the id of the change announcing the suspension, and the change.
      run: async (p) => {
        await ensureRegistered(store, suspensionBuckets, p.bucket);
        const changeId = changes.nextId();
        await amendIfOwned(store, suspendedUsersTable, { user_id: p.userId }, 'saga_id', p.ownerSagaId, { confirmed: true, change_id: changeId });
        await store.batch([...suspendedChange(changes, p, changeId), ...countChange(counts, p, 1)]);
      },
      // Undone (a failure or a crash before the saga closed): subscribers that saw the
      // suspension announced learn that it ended, and the count loses it (if it had it).
      compensate: (p) => store.batch([...unsuspendedChange(changes, p), ...countChange(counts, p, -1)]),
    },
  ],
};

export const unsuspendSaga: SagaDefinition<SuspensionPayload> = {
  kind: 'unsuspendUser',
  // Once the sorted-set row may be gone, finishing is the shortest way to consistency.
  recovery: 'forward',
  // Deleting the sorted-set row commits the unsuspension: a row put back could only be
  // written at the row's own timestamp, which its tombstone hides. Whatever fails
  // after it, recovery finishes.
  pivot: 0,
  steps: (store, { changes, counts, onRegistryPrune }) => [
    {
      name: 'delete the sorted-set row',
      // With the change announcing it and the count: one logged batch, committed together.
      run: (p) => store.batch([sortedSetDelete(p), ...unsuspendedChange(changes, p), ...countChange(counts, p, -1)]),
    },
    {
      name: 'delete the reverse lookup',
      run: (p) => releaseLookup(store, p),
    },
    {
      name: 'prune the bucket if it emptied',
      run: (p) => pruneStep(store, suspensionBuckets, p.bucket, onRegistryPrune),
    },
  ],
};

/** Both definitions, for the saga runner. */
export const suspensionSagas = [suspendSaga, unsuspendSaga];
