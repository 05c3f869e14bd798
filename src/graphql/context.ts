/**
 * The per-request context: the viewer, a round-trip-counting view of the store, the
 * features bound to it, and fresh DataLoaders.
 */
import type { Logger } from 'pino';
import { Directory } from '../features/directory/directory.js';
import { Lists } from '../features/lists/lists.js';
import { Meetings, type AcceptanceStrategy, type TokenSequence } from '../features/meetings/meetings.js';
import type { BucketGranularity } from '../features/suspensions/buckets.js';
import { suspensionSagas } from '../features/suspensions/suspension-sagas.js';
import { Suspensions } from '../features/suspensions/suspensions.js';
import type { CursorCodec } from '../paging/cursor.js';
import { Timeline } from '../features/timeline/timeline.js';
import { Users } from '../features/users/users.js';
import type { KeyedLock } from '../saga/keyed-lock.js';
import { SagaRunner } from '../saga/saga-runner.js';
import type { Clock } from '../store/clock.js';
import type { Store } from '../store/port.js';
import { CountingStore } from '../store/store-decorator.js';
import type { Viewer } from './auth.js';
import { apiError } from './errors.js';
import { createLoaders, type Loaders } from './loaders.js';

/** What every resolver receives. */
export interface RequestContext {
  readonly viewer: Viewer | null;
  /** The store as this request sees it; `roundTrips` counts its calls. */
  readonly store: CountingStore;
  readonly users: Users;
  readonly timeline: Timeline;
  readonly suspensions: Suspensions;
  readonly meetings: Meetings;
  readonly directory: Directory;
  readonly lists: Lists;
  readonly loaders: Loaders;
}

/** Shared, process-wide services a context is built from. */
export interface ContextServices {
  readonly store: Store;
  readonly codec: CursorCodec;
  readonly logger: Logger;
  /** Sagas running in this process (recovery leaves them alone). */
  readonly sagasInFlight: Set<string>;
  /** Serialises sagas per user within the process. */
  readonly userLock: KeyedLock;
  readonly suspensionBucket: BucketGranularity;
  readonly sagaStepDelayMs: number;
  /** The process's write clock (monotonic: timestamps never repeat). */
  readonly clock: Clock;
  readonly acceptanceTokens: TokenSequence;
  readonly acceptanceStrategy: AcceptanceStrategy;
  /** Wakes the list applier after a list transaction is appended. */
  readonly onListAppend?: (listId: string) => void;
}

/** Every saga definition the product runs. */
export const SAGA_DEFINITIONS = [...suspensionSagas];

/** A saga runner over a store view (the request's counting store, or the base store for recovery). */
export function createSagaRunner(services: ContextServices, store: Store = services.store): SagaRunner {
  return new SagaRunner({
    store,
    definitions: SAGA_DEFINITIONS,
    inFlight: services.sagasInFlight,
    logger: services.logger,
    stepDelayMs: services.sagaStepDelayMs,
  });
}

/** Build the context of one request. */
export function createRequestContext(services: ContextServices, viewer: Viewer | null): RequestContext {
  const store = new CountingStore(services.store);
  // The directory filters hits through the request's user loader (created below).
  let loaders: Loaders | undefined;
  const directory = new Directory({
    store,
    codec: services.codec,
    loadUsers: async (ids) => (await loaders!.userById.loadMany(ids)).map((u) => (u instanceof Error ? null : u)),
  });
  const users = new Users(store, (userId, values) => directory.plan(userId, values, []));
  const timeline = new Timeline(store, services.codec);
  const suspensions = new Suspensions({
    store,
    codec: services.codec,
    sagas: createSagaRunner(services, store),
    users,
    lock: services.userLock,
    granularity: services.suspensionBucket,
  });
  const meetings = new Meetings({
    store,
    codec: services.codec,
    clock: services.clock,
    tokens: services.acceptanceTokens,
    strategy: services.acceptanceStrategy,
  });
  const lists = new Lists({ store, codec: services.codec, clock: services.clock, onAppend: services.onListAppend });
  loaders = createLoaders({ users, timeline, suspensions, meetings, lists });
  return { viewer, store, users, timeline, suspensions, meetings, directory, lists, loaders };
}

/** The viewer if an admin; UNAUTHENTICATED or FORBIDDEN otherwise. */
export function requireAdmin(ctx: RequestContext): Viewer {
  const viewer = requireViewer(ctx);
  if (!viewer.isAdmin) throw apiError('FORBIDDEN', 'this requires an admin token');
  return viewer;
}

/** The viewer, or UNAUTHENTICATED. */
export function requireViewer(ctx: RequestContext): Viewer {
  if (!ctx.viewer) throw apiError('UNAUTHENTICATED', 'sign in: send "Authorization: Bearer <token>"');
  return ctx.viewer;
}

/** The viewer's user id, or NOT_FOUND when their user has not been created yet. */
export async function requireViewerId(ctx: RequestContext): Promise<string> {
  const viewer = requireViewer(ctx);
  const id = await ctx.loaders.userIdByUsername.load(viewer.username);
  if (!id) throw apiError('NOT_FOUND', `no user named "${viewer.username}" yet: create it with createUser first`);
  return id;
}
