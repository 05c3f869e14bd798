/** Meetings: creation, acceptance (seed 001's unique counter), reconciliation. */
import type { MeetingEdgeResolvers, MeetingResolvers, MutationResolvers, UserEdgeResolvers } from '../__generated__/resolvers-types.js';
import { requireViewer, requireViewerId } from '../context.js';
import { localIdOf, meetingGlobalId } from '../ids.js';
import { edgeNodeFrom } from './edge-node.js';
import { acceptanceCountKey } from '../../features/meetings/meetings.js';
import { prefetchCount } from './count-resolvers.js';

export const meetingMutations: Pick<MutationResolvers, 'createMeeting' | 'acceptMeeting' | 'reconcileMeeting'> = {
  createMeeting: async (_root, { input }, ctx) => {
    const viewerId = await requireViewerId(ctx);
    const meeting = await ctx.meetings.create({ title: input.title }, viewerId);
    return { meeting, clientMutationId: input.clientMutationId ?? null };
  },
  acceptMeeting: async (_root, { input }, ctx) => {
    const meetingId = localIdOf(input.meetingId, 'meetingId', 'Meeting');
    const viewerId = await requireViewerId(ctx);
    const { meeting, counted } = await ctx.meetings.accept(meetingId, viewerId);
    return { meeting, counted, clientMutationId: input.clientMutationId ?? null };
  },
  reconcileMeeting: async (_root, { input }, ctx) => {
    requireViewer(ctx);
    const meetingId = localIdOf(input.meetingId, 'meetingId', 'Meeting');
    const { meeting, previousCount } = await ctx.meetings.reconcile(meetingId);
    return { meeting, previousCount, clientMutationId: input.clientMutationId ?? null };
  },
};

export const meetingType: MeetingResolvers = {
  id: (m) => meetingGlobalId(m.meetingId),
  acceptanceCount: (m, _args, ctx) => ctx.meetings.acceptanceCount(m.meetingId),
  acceptedBy: (m, args, ctx, info) => {
    prefetchCount(info, ctx, acceptanceCountKey(m.meetingId));
    return ctx.meetings.acceptedBy(m.meetingId, args);
  },
};

export const meetingEdgeType: MeetingEdgeResolvers = {
  node: edgeNodeFrom('meeting', (ref: { meetingId: string }) => ref.meetingId, (ctx, id) => ctx.loaders.meetingById.loadNow(id)),
};

const loadedUser = edgeNodeFrom('user', (ref: { userId: string }) => ref.userId, (ctx, id) => ctx.loaders.userById.loadNow(id));

export const userEdgeType: UserEdgeResolvers = {
  // A name search's edge may carry its user, from the index entry: no read (name-index.ts).
  node: (edge, args, ctx) => edge.node.user ?? loadedUser(edge, args, ctx),
};
