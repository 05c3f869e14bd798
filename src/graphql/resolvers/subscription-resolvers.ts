/**
 * Live connections: each subscription follows one feed from `after` (or from now), and
 * turns each change delivered into its payload, whose edges are edges of the connection
 * itself (cursors included), so clients merge them into pages they hold.
 */
import { acceptanceChangeFrom } from '../../features/meetings/meetings.js';
import { listChangeFrom } from '../../features/lists/lists.js';
import { suspensionChangeFrom } from '../../features/suspensions/suspensions.js';
import { postsFeedOf, timelineChangeFrom } from '../../features/timeline/timeline.js';
import type { Delivery } from '../../live/live-hub.js';
import type {
  SubscriptionListItemsChangedArgs,
  SubscriptionMeetingChangedArgs,
  SubscriptionPostsChangedArgs,
  SubscriptionResolvers,
} from '../__generated__/resolvers-types.js';
import type { RequestContext } from '../context.js';
import { apiError } from '../errors.js';
import { listItemGlobalId, localIdOf, postGlobalId, userGlobalId } from '../ids.js';

export const subscriptionType: SubscriptionResolvers = {
  postsChanged: {
    subscribe: async (_root, { authorId, after }, ctx) => {
      const id = localIdOf(authorId, 'authorId', 'User');
      if (!(await ctx.loaders.userById.load(id))) throw apiError('NOT_FOUND', 'no such user', 'authorId');
      return ctx.live.subscribe(postsFeedOf(id), after, (cursor) => ctx.timeline.positionAfterPostCursor(id, cursor));
    },
    resolve: (delivery: Delivery, { authorId }: SubscriptionPostsChangedArgs, ctx: RequestContext) => {
      const change = timelineChangeFrom(localIdOf(authorId, 'authorId', 'User'), delivery.change);
      return change.kind === 'added'
        ? { cursor: delivery.cursor, addedEdge: ctx.timeline.postEdge(change.post), deletedPostId: null }
        : { cursor: delivery.cursor, addedEdge: null, deletedPostId: postGlobalId(change) };
    },
  },
  listItemsChanged: {
    subscribe: async (_root, { listId, after }, ctx) => {
      const id = localIdOf(listId, 'listId', 'OrderedList');
      return ctx.live.subscribe(await ctx.lists.feed(id), after);
    },
    resolve: (delivery: Delivery, { listId }: SubscriptionListItemsChangedArgs, ctx: RequestContext) => {
      const change = listChangeFrom(localIdOf(listId, 'listId', 'OrderedList'), delivery.change);
      const moved = change.kind === 'ADDED' || change.kind === 'MOVED';
      return {
        cursor: delivery.cursor,
        kind: change.kind,
        edge: change.item ? ctx.lists.itemEdge(change.item) : null,
        previousItemId: moved && change.previousItemId ? listItemGlobalId({ listId: change.listId, itemId: change.previousItemId }) : null,
        removedItemId: change.kind === 'REMOVED' ? listItemGlobalId(change) : null,
      };
    },
  },
  meetingChanged: {
    subscribe: async (_root, { meetingId, after }, ctx) => {
      const id = localIdOf(meetingId, 'meetingId', 'Meeting');
      return ctx.live.subscribe(await ctx.meetings.feed(id), after);
    },
    resolve: async (delivery: Delivery, { meetingId }: SubscriptionMeetingChangedArgs, ctx: RequestContext) => {
      const id = localIdOf(meetingId, 'meetingId', 'Meeting');
      const { acceptance } = acceptanceChangeFrom(id, delivery.change);
      const meeting = await ctx.loaders.meetingById.load(id);
      if (!meeting) throw new Error(`meeting ${id} of a change is gone`);
      return { cursor: delivery.cursor, meeting, acceptedEdge: ctx.meetings.acceptedEdge(acceptance) };
    },
  },
  suspensionsChanged: {
    subscribe: (_root, { after }, ctx) => ctx.live.subscribe(ctx.suspensions.feed(), after),
    resolve: (delivery: Delivery, _args: unknown, ctx: RequestContext) => {
      const change = suspensionChangeFrom(delivery.change);
      return change.kind === 'suspended'
        ? { cursor: delivery.cursor, addedEdge: ctx.suspensions.suspensionEdge(change.suspension), unsuspendedUserId: null }
        : { cursor: delivery.cursor, addedEdge: null, unsuspendedUserId: userGlobalId(change.userId) };
    },
  },
};
