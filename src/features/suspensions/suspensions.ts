/**
 * Suspended users (seed 000): a sorted set of suspensions partitioned by (bucket,
 * status), newest first, paged seamlessly across buckets; a reverse lookup by user;
 * suspend and unsuspend as sagas.
 */
import { DomainError, badInput, checkText } from '../../errors.js';
import { bucketedSource } from '../../paging/bucketed-source.js';
import type { Change } from '../../live/change-log.js';
import type { FeedSpec } from '../../live/live-hub.js';
import type { CursorCodec } from '../../paging/cursor.js';
import { edgeFromNode, pageFromSource } from '../../paging/engine.js';
import { filteredSource } from '../../paging/filtered-source.js';
import { sliceSource } from '../../paging/slice-source.js';
import type { Edge, OrderedSource, Page, PageArgs } from '../../paging/types.js';
import type { KeyedLock } from '../../saga/keyed-lock.js';
import { openSagaIds } from '../../saga/saga-log.js';
import type { SagaRunner } from '../../saga/saga-runner.js';
import type { Store } from '../../store/port.js';
import type { Row } from '../../store/table.js';
import type { IdSource } from '../../store/id-source.js';
import { newTimeuuid } from '../../store/timeuuid.js';
import { requireAdmin, signedIn, type Actor } from '../actor.js';
import type { KeyLoader } from '../key-loader.js';
import type { User } from '../users/users.js';
import { bucketOf, type BucketGranularity } from './buckets.js';
import { listRegistered } from '../bucket-registry.js';
import type { Counted } from '../../counts/connection-counts.js';
import { scanRows, type Membership } from '../../counts/recount.js';
import { countedIndex, indexKeyOf } from '../../counts/count-ranks.js';
import type { RankCache } from '../../paging/ranked-index.js';
import { suspensionOrder } from './suspension-ranks.js';
import { SUSPENSIONS_COUNT_KEY, SUSPENSIONS_FEED, suspendSaga, suspensionEntry, suspensionBuckets, unsuspendSaga, type SuspensionPayload } from './suspension-sagas.js';
import { SUSPENDED, suspendedUsersTable, usersByStatusTable } from './suspensions-tables.js';

/** A suspension as the API shows it. */
export interface Suspension {
  readonly userId: string;
  readonly reason: string;
  readonly suspendedAt: Date;
  readonly bucket: string;
}

/** A page of suspensions, with the key its `totalCount` is read by. */
export type SuspensionPage = Page<Suspension> & Counted;

/** The loaders Suspensions reads and keeps true. */
export interface SuspensionLoaders {
  readonly userById: KeyLoader<string, User | null>;
  readonly suspensionByUserId: KeyLoader<string, Suspension | null>;
}

/** What the feature needs besides its store. */
export interface SuspensionsDeps {
  readonly store: Store;
  readonly codec: CursorCodec;
  /** The request's signal: a page stops reading once its client has gone (`PagingOptions.signal`). */
  readonly signal?: AbortSignal;
  readonly actor: Actor | null;
  readonly loaders: SuspensionLoaders;
  readonly sagas: SagaRunner;
  /** Shared by every request of the process: serialises sagas per user. */
  readonly lock: KeyedLock;
  readonly granularity: BucketGranularity;
  /** The process's kept bucket lists of counted indexes (`offset`); without it, every page reads them. */
  readonly rankCache?: RankCache;
  /** "Now": the clock's, or an idempotency key's plan (a redo suspends at the same time). */
  readonly ids: IdSource;
}

/** A change to the suspended users, as a subscriber sees it. */
export type SuspensionChange = { readonly kind: 'suspended'; readonly suspension: Suspension } | { readonly kind: 'unsuspended'; readonly userId: string };

/** A change read from the suspensions feed, in the feature's own terms. */
export function suspensionChangeFrom(change: Change): SuspensionChange {
  const p = change.payload as { userId: string; reason?: string; occurredOn?: number; bucket?: string };
  if (change.kind === 'unsuspended') return { kind: 'unsuspended', userId: p.userId };
  return { kind: 'suspended', suspension: { userId: p.userId, reason: p.reason!, suspendedAt: new Date(p.occurredOn!), bucket: p.bucket! } };
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

/** No saga open (never added to). */
const NONE_OPEN: ReadonlySet<string> = new Set();

/**
 * Current suspensions by user id, in order, null for users not suspended (one round
 * trip). A suspension whose saga has not confirmed it is not shown: it was never
 * acknowledged, and recovery may still undo it. A lookup without the confirmation
 * column (written before it existed) is shown once its saga is closed (one more round
 * trip, only for such rows).
 */
export async function readSuspensions(store: Store, userIds: readonly string[]): Promise<Array<Suspension | null>> {
  const rows = await store.getMany(
    suspendedUsersTable,
    userIds.map((user_id) => ({ user_id })),
  );
  const unconfirmed = rows.filter((r): r is Row => r !== null && r.confirmed !== true);
  // Nearly always none: no saga log read, and no wait for one.
  const open = unconfirmed.length === 0 ? NONE_OPEN : await openSagaIds(
    store,
    unconfirmed.map((r) => r.saga_id as string),
  );
  return rows.map((r) => (r && (r.confirmed === true || !open.has(r.saga_id as string)) ? suspensionFromRow(r) : null));
}

/**
 * The suspensions `suspendedUsers` shows, each named by the saga that made it, for
 * recounts: a scan of the reverse lookups, each kept if shown (`readSuspensions`) and
 * its sorted-set row is there; and the same suspensions' entries in its counted index.
 */
export async function* suspensionMemberships(store: Store): AsyncGenerator<Membership> {
  for await (const lookups of scanRows(store, suspendedUsersTable)) {
    const shown = await readSuspensions(store, lookups.map((r) => r.user_id as string));
    const kept = lookups.filter((_, i) => shown[i] !== null);
    const rows = await store.getMany(
      usersByStatusTable,
      kept.map((r) => ({ bucket: r.bucket!, status: SUSPENDED, occurred_on: r.occurred_on!, user_id: r.user_id! })),
    );
    const shownRows = kept.filter((_, i) => rows[i] !== null);
    if (shownRows.length === 0) continue;
    yield { key: SUSPENSIONS_COUNT_KEY, items: shownRows.map((r) => r.saga_id as string) };
    // And their entries in the count's counted index.
    yield {
      key: indexKeyOf(SUSPENSIONS_COUNT_KEY),
      items: shownRows.map((r) => suspensionEntry({ occurredOn: (r.occurred_on as Date).getTime(), userId: r.user_id as string, ownerSagaId: r.saga_id as string })),
    };
  }
}

/** The suspended-users feature. */
export class Suspensions {
  constructor(private readonly deps: SuspensionsDeps) {}

  /**
   * Suspend a user (admins only). `suspendedAt` defaults to now and may lie in the past
   * (imports). CONFLICT when already suspended, NOT_FOUND for an unknown user.
   */
  async suspend(input: { userId: string; reason: string; suspendedAt?: Date | null }, now = this.deps.ids.now()): Promise<Suspension> {
    requireAdmin(this.deps.actor);
    const reason = checkText('reason', input.reason, 1, MAX_REASON_LENGTH, { multiline: true });
    const at = input.suspendedAt ?? now;
    if (at.getTime() < EARLIEST || at.getTime() > now.getTime() + 60_000) {
      throw badInput('suspendedAt', `\`suspendedAt\` must lie between 1970 and now, got ${at.toISOString()}`);
    }
    const user = await this.deps.loaders.userById.load(input.userId);
    if (!user) throw new DomainError('NOT_FOUND', 'no such user', 'userId');
    const bucket = bucketOf(at, this.deps.granularity);
    const suspension: Suspension = { userId: input.userId, reason, suspendedAt: at, bucket };
    try {
      await this.deps.lock.with(input.userId, () => {
        // The id is made once the lock is ours: a saga starts within moments of its id (saga-log.ts).
        const sagaId = newTimeuuid();
        const payload: SuspensionPayload = { userId: input.userId, reason, occurredOn: at.getTime(), bucket, ownerSagaId: sagaId };
        return this.deps.sagas.run(suspendSaga, payload, sagaId);
      });
    } catch (err) {
      // A redo under an idempotency key whose first attempt's suspension stands (the same
      // reason, at the plan's time): that suspension is this request's, not a conflict.
      if (!(err instanceof DomainError && err.code === 'CONFLICT' && this.deps.ids.redo)) throw err;
      const [standing] = await readSuspensions(this.deps.store, [input.userId]);
      if (standing?.reason !== reason || standing.suspendedAt.getTime() !== at.getTime()) throw err;
    }
    this.deps.loaders.suspensionByUserId.clear(suspension.userId);
    this.deps.loaders.suspensionByUserId.prime(suspension.userId, suspension);
    return suspension;
  }

  /**
   * Lift a suspension (admins only), from the user alone: the reverse lookup supplies
   * `occurred_on` and the bucket. NOT_FOUND when the user is not suspended.
   */
  async unsuspend(userId: string): Promise<void> {
    requireAdmin(this.deps.actor);
    await this.deps.lock.with(userId, async () => {
      const lookup = await this.deps.store.get(suspendedUsersTable, { user_id: userId });
      if (!lookup) throw new DomainError('NOT_FOUND', 'the user is not suspended', 'userId');
      // The suspension that wrote this lookup may still be running on another server
      // (the lock above is per process): unsuspending now would delete a sorted-set row
      // not yet written, and that saga would then write it with no lookup. Wait for it.
      if (await this.deps.sagas.isOpen(lookup.saga_id as string)) {
        throw new DomainError('CONFLICT', 'the suspension is still being written; retry in a moment', 'userId');
      }
      const payload: SuspensionPayload = {
        userId,
        reason: lookup.reason as string,
        occurredOn: (lookup.occurred_on as Date).getTime(),
        bucket: lookup.bucket as string,
        ownerSagaId: lookup.saga_id as string,
        ...(typeof lookup.change_id === 'string' && { changeId: lookup.change_id }),
      };
      await this.deps.sagas.run(unsuspendSaga, payload);
    });
    this.deps.loaders.suspensionByUserId.clear(userId);
    this.deps.loaders.suspensionByUserId.prime(userId, null);
  }

  /**
   * A user's current suspension, or null: admins see every suspension, a member only
   * their own (FORBIDDEN otherwise).
   */
  ofUser(userId: string): Suspension | null | Promise<Suspension | null> {
    const actor = signedIn(this.deps.actor);
    // An admin's page has read these already (its filter): the value at once, no promise.
    if (actor.isAdmin) return this.deps.loaders.suspensionByUserId.loadNow(userId);
    return this.ownSuspension(actor, userId);
  }

  /** A member's own suspension; FORBIDDEN for anyone else's. */
  private async ownSuspension(actor: Actor, userId: string): Promise<Suspension | null> {
    const self = await actor.userId().catch(() => null);
    if (self !== userId) throw new DomainError('FORBIDDEN', "only admins and the user may see a user's suspension");
    return this.deps.loaders.suspensionByUserId.load(userId);
  }

  /** Current suspensions by user id, in order, null for users not suspended (one round trip). */
  byUserIds(ids: readonly string[]): Promise<Array<Suspension | null>> {
    return readSuspensions(this.deps.store, ids);
  }

  /**
   * One page of suspensions, newest first, across buckets (admins only). A sorted-set
   * row is shown only with its confirmed lookup, as `User.suspension` shows it: a
   * suspension whose saga is still open was never acknowledged (recovery may undo it).
   * The lookups of a page are read in one batch, through the request's loader, so
   * `User.suspension` on the page's users costs nothing more. An `offset` is found
   * through the count's counted index (suspension-ranks.ts).
   */
  async page(args: PageArgs): Promise<SuspensionPage> {
    requireAdmin(this.deps.actor);
    // Only a page with an offset looks anything up in the index: none is made for the others (as the timeline does).
    const index = args.offset ? countedIndex(this.deps.store, indexKeyOf(SUSPENSIONS_COUNT_KEY), suspensionOrder(this.deps.granularity), this.deps.rankCache) : undefined;
    const page = await pageFromSource(this.source(), args, { connectionName: 'suspendedUsers', codec: this.deps.codec, index, signal: this.deps.signal });
    return { ...page, countKey: SUSPENSIONS_COUNT_KEY };
  }

  /** The `suspendedUsers` edge of a suspension, cursor and all, as a page of that connection gives it. */
  suspensionEdge(suspension: Suspension): Edge<Suspension> {
    return edgeFromNode(this.source(), suspension, this.deps.codec);
  }

  /** The live feed of suspensions and unsuspensions (admins only). */
  feed(): FeedSpec {
    requireAdmin(this.deps.actor);
    return { feed: SUSPENSIONS_FEED };
  }

  /** The `suspendedUsers` connection: registered buckets, each a slice, rows shown with their confirmed lookup. */
  private source(): OrderedSource<Suspension> {
    const { store, loaders } = this.deps;
    const rows = bucketedSource<Suspension>({
      id: 'Query.suspendedUsers',
      listBuckets: (from, direction, limit) => listRegistered(store, suspensionBuckets, from, direction, limit),
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
    return filteredSource(rows, async (nodes) => {
      const lookups = await loaders.suspensionByUserId.loadAll(nodes.map((n) => n.userId));
      return nodes.map((n, i) => {
        const lookup = lookups[i];
        // The lookup must be this very suspension's (a user suspended anew has another).
        if (lookup?.suspendedAt.getTime() !== n.suspendedAt.getTime()) return false;
        // The page shows the lookup the loader holds (for `User.suspension`) when it says
        // the same: the row's own object, its Date and its strings then go with this
        // wave instead of living through the users' reads.
        return lookup.bucket === n.bucket && lookup.reason === n.reason ? lookup : true;
      });
    });
  }
}
