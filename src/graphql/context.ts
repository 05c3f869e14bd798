/**
 * What every resolver receives: the viewer, the features of this request, the
 * request's loaders, and the guards that authenticate. Who may do what is the
 * features' rule; the composition root builds the context.
 */
import type { FieldNode } from 'graphql';
import { signedIn, type Actor } from '../features/actor.js';
import type { Directory } from '../features/directory/directory.js';
import type { RequestKeys } from '../features/idempotency/mutation-keys.js';
import type { Lists } from '../features/lists/lists.js';
import type { Meetings } from '../features/meetings/meetings.js';
import type { Suspensions } from '../features/suspensions/suspensions.js';
import type { Timeline } from '../features/timeline/timeline.js';
import type { Users } from '../features/users/users.js';
import type { LiveSubscriptions } from '../live/subscriptions.js';
import type { Loaders } from './loaders.js';
import type { Budgeted, RequestBudget } from './rate-limit.js';

/** The context of one request. */
export interface RequestContext extends Budgeted {
  /** The signed-in caller, or null for an anonymous request. */
  readonly viewer: Actor | null;
  readonly users: Users;
  readonly timeline: Timeline;
  readonly suspensions: Suspensions;
  readonly meetings: Meetings;
  readonly directory: Directory;
  readonly lists: Lists;
  readonly loaders: Loaders;
  /** Subscribing to live feeds (subscriptions over WebSocket). */
  readonly live: LiveSubscriptions;
  /** Runs a mutation given a `clientMutationId` once per key (resolvers/idempotent.ts). */
  readonly mutationKeys: RequestKeys;
  /** `performance.now()` when the context was made: the request's start, for its latency metric. */
  readonly startedAt: number;
  /** Store round trips this request has made so far (`extensions.storeRoundTrips`). */
  readonly storeRoundTrips: () => number;
  /** Statements the store sent for them so far (`extensions.storeStatements`). */
  readonly storeStatements: () => number;
  /** This request's budget (`Query.rateLimit`), or null when budgets are off or for a live event. */
  readonly rateLimit: RequestBudget | null;
  /**
   * Reads a resolver started ahead for a field further down, each taken once by that
   * field's resolver (resolvers/user-resolvers.ts: a user's page of posts, beside the
   * user's row); null until one is. On the context, not in a map keyed by it: a weak
   * map's entry a request is work for every scavenge.
   */
  startedAhead: StartedAhead[] | null;
}

/** A read started ahead for a field node (`RequestContext.startedAhead`). */
export interface StartedAhead {
  readonly node: FieldNode;
  /** Which object the field belongs to (a user's id). */
  readonly key: string;
  readonly read: Promise<unknown>;
}

/** The viewer, or UNAUTHENTICATED. */
export function requireViewer(ctx: RequestContext): Actor {
  return signedIn(ctx.viewer);
}

/** The viewer's user id, or NOT_FOUND when their user has not been created yet. */
export async function requireViewerId(ctx: RequestContext): Promise<string> {
  return requireViewer(ctx).userId();
}
