/**
 * The per-request context: the viewer, a round-trip-counting view of the store, the
 * features bound to it, and fresh DataLoaders.
 */
import type { CursorCodec } from '../paging/cursor.js';
import { Timeline } from '../features/timeline/timeline.js';
import { Users } from '../features/users/users.js';
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
  readonly loaders: Loaders;
}

/** Shared services a context is built from. */
export interface ContextServices {
  readonly store: Store;
  readonly codec: CursorCodec;
}

/** Build the context of one request. */
export function createRequestContext(services: ContextServices, viewer: Viewer | null): RequestContext {
  const store = new CountingStore(services.store);
  const users = new Users(store);
  const timeline = new Timeline(store, services.codec);
  return { viewer, store, users, timeline, loaders: createLoaders({ users, timeline }) };
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
