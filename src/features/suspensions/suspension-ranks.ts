/**
 * The ranks of `suspendedUsers` (newest first: bucket, then `occurred_on` DESC, then
 * `user_id` ASC), by which its counted index is kept (`offset`). Buckets follow time
 * within one granularity (buckets.ts), so the order is time descending, then user id:
 * the rank is the time counted down from 2^42 ms (the year 2109) in its top 42 bits,
 * then the top 18 bits of the user id's own rank. Suspensions of one millisecond whose
 * user ids share those bits share a rank, and the page reads past them in its leaf.
 */
import { lowBits, uuidAtRank, uuidRank } from '../../paging/rank-orders.js';
import type { RankOrder } from '../../paging/ranked-index.js';
import { bucketOf, type BucketGranularity } from './buckets.js';

const TIME_BITS = 42n;
const USER_BITS = 18n;
const LATEST = lowBits(Number(TIME_BITS));

/** The rank of the suspension of `userId` at `occurredOn` (ms). */
export function suspensionRank(occurredOn: number, userId: string): bigint {
  const ms = BigInt(Math.min(Math.max(0, occurredOn), Number(LATEST)));
  return ((LATEST - ms) << USER_BITS) | (uuidRank(userId) >> (60n - USER_BITS));
}

/** How `suspendedUsers`' keys (`[bucket, occurred_on ms, user_id]`) map to ranks, for buckets of `granularity`. */
export function suspensionOrder(granularity: BucketGranularity): RankOrder {
  return {
    rankOf: (key) => suspensionRank(key[1] as number, key[2] as string),
    edgeKey(rank, direction) {
      const ms = Number(LATEST - (rank >> USER_BITS));
      const user = (rank & lowBits(Number(USER_BITS))) << (60n - USER_BITS);
      // Newest first, user ids ascending: a forward read starts at the lowest user id of the rank.
      const userId = direction === 'forward' ? uuidAtRank(user, 'lowest') : uuidAtRank(user | lowBits(60 - Number(USER_BITS)), 'highest');
      return [bucketOf(new Date(ms), granularity), ms, userId];
    },
    // A level-2 bucket is 16 s of suspensions (2^14 ms): a few at most. A cursor's rank
    // stops there, its lists above coming with the index's top (levels 0 and 1: 12 days
    // and 70 minutes a bucket), rather than read every level's list and its leaf.
    cursorLevel: 2,
  };
}
