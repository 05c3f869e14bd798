/**
 * Suspended users (seed 000): a sorted set of suspensions partitioned by (bucket,
 * status), newest first, paged seamlessly across buckets; a reverse lookup by user;
 * suspend and unsuspend as sagas.
 */
import { DomainError, badInput, checkText } from '../../errors.js';
import { bucketedSource } from '../../paging/bucketed-source.js';
import type { CursorCodec } from '../../paging/cursor.js';
import { pageFromSource } from '../../paging/engine.js';
import { sliceSource } from '../../paging/slice-source.js';
import type { Page, PageArgs } from '../../paging/types.js';
import type { KeyedLock } from '../../saga/keyed-lock.js';
import { SagaLog } from '../../saga/saga-log.js';
import type { SagaRunner } from '../../saga/saga-runner.js';
import type { Store } from '../../store/port.js';
import type { Row } from '../../store/table.js';
import { newTimeuuid } from '../../store/timeuuid.js';
import type { Users } from '../users/users.js';
import { bucketOf, type BucketGranularity } from './buckets.js';
import { suspendSaga, unsuspendSaga, type SuspensionPayload } from './suspension-sagas.js';
import { SUSPENDED, statusBucketsTable, suspendedUsersTable, usersByStatusTable } from './suspensions-tables.js';

/** A suspension as the API shows it. */
export interface Suspension {
  readonly userId: string;
  readonly reason: string;
  readonly suspendedAt: Date;
  readonly bucket: string;
}

/** What the feature needs besides its store. */
export interface SuspensionsDeps {
  readonly store: Store;
  readonly codec: CursorCodec;
  readonly sagas: SagaRunner;
  readonly users: Users;
  /** Shared by every request of the process: serialises sagas per user. */
  readonly lock: KeyedLock;
  readonly granularity: BucketGranularity;
}

/** The longest reason accepted. */
export const MAX_REASON_LENGTH = 500;
const EARLIEST = Date.UTC(1970, 0, 1);

/** A suspension from a sorted-set row or a reverse-lookup row (same column names). */
function suspensionFromRow(row: Row): Suspension {
  return {
    userId: row.user_id as string,
    reason: row.reason as string,
    suspendedAt: row.occurred_on as Date,
    bucket: row.bucket as string,
  };
}

/** The suspended-users feature. */
export class Suspensions {
  constructor(private readonly deps: SuspensionsDeps) {}

  /**
   * Suspend a user (admin check is the caller's). `suspendedAt` defaults to now and
   * may lie in the past (imports). CONFLICT when already suspended, NOT_FOUND for an
   * unknown user.
   */
  async suspend(input: { userId: string; reason: string; suspendedAt?: Date | null }, now = new Date()): Promise<Suspension> {
    const reason = checkText('reason', input.reason, 1, MAX_REASON_LENGTH);
    const at = input.suspendedAt ?? now;
    if (at.getTime() < EARLIEST || at.getTime() > now.getTime() + 60_000) {
      throw badInput('suspendedAt', `\`suspendedAt\` must lie between 1970 and now, got ${at.toISOString()}`);
    }
    const [user] = await this.deps.users.byIds([input.userId]);
    if (!user) throw new DomainError('NOT_FOUND', 'no such user', 'userId');
    const sagaId = newTimeuuid();
    const payload: SuspensionPayload = {
      userId: input.userId,
      reason,
      occurredOn: at.getTime(),
      bucket: bucketOf(at, this.deps.granularity),
      ownerSagaId: sagaId,
    };
    await this.deps.lock.with(input.userId, () => this.deps.sagas.run(suspendSaga.kind, payload, sagaId));
    return { userId: payload.userId, reason, suspendedAt: at, bucket: payload.bucket };
  }

  /**
   * Lift a suspension, from the user alone: the reverse lookup supplies `occurred_on`
   * and the bucket. NOT_FOUND when the user is not suspended.
   */
  async unsuspend(userId: string): Promise<void> {
    await this.deps.lock.with(userId, async () => {
      const lookup = await this.deps.store.get(suspendedUsersTable, { user_id: userId });
      if (!lookup) throw new DomainError('NOT_FOUND', 'the user is not suspended', 'userId');
      // The suspension that wrote this lookup may still be running on another server
      // (the lock above is per process): unsuspending now would delete a sorted-set row
      // not yet written, and that saga would then write it with no lookup. Wait for it.
      if (await new SagaLog(this.deps.store).isOpen(lookup.saga_id as string)) {
        throw new DomainError('CONFLICT', 'the suspension is still being written; retry in a moment', 'userId');
      }
      const payload: SuspensionPayload = {
        userId,
        reason: lookup.reason as string,
        occurredOn: (lookup.occurred_on as Date).getTime(),
        bucket: lookup.bucket as string,
        ownerSagaId: lookup.saga_id as string,
      };
      await this.deps.sagas.run(unsuspendSaga.kind, payload);
    });
  }

  /** Current suspensions by user id, in order, null for users not suspended (one round trip). */
  async byUserIds(ids: readonly string[]): Promise<Array<Suspension | null>> {
    const rows = await this.deps.store.getMany(
      suspendedUsersTable,
      ids.map((user_id) => ({ user_id })),
    );
    return rows.map((r) => (r ? suspensionFromRow(r) : null));
  }

  /** One page of suspensions, newest first, across buckets. */
  page(args: PageArgs): Promise<Page<Suspension>> {
    const { store, codec } = this.deps;
    const source = bucketedSource<Suspension>({
      id: 'Query.suspendedUsers',
      async listBuckets(from, direction) {
        const bound = from === undefined ? undefined : { values: [from], inclusive: true };
        const rows = await store.slice(statusBucketsTable, {
          partition: { status: SUSPENDED },
          limit: 100_000,
          reverse: direction === 'backward',
          ...(direction === 'forward' ? { lower: bound } : { upper: bound }),
        });
        return rows.map((r) => r.bucket as string);
      },
      // Newest bucket first: the registry's clustering order (bucket DESC).
      compareBuckets: (a, b) => (a === b ? 0 : a > b ? -1 : 1),
      bucketSource: (bucket) =>
        sliceSource<Suspension>({
          id: '',
          store,
          table: usersByStatusTable,
          partition: { bucket, status: SUSPENDED },
          toNode: suspensionFromRow,
          rowOf: (s) => ({ occurred_on: s.suspendedAt, user_id: s.userId }),
        }),
      bucketOf: (s) => s.bucket,
    });
    return pageFromSource(source, args, { connectionName: 'suspendedUsers', codec });
  }
}
