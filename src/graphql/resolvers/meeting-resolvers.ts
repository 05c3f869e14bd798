/** Meetings: creation, acceptance (seed 001's unique counter), reconciliation. */
import type { MeetingResolvers, MutationResolvers, UserEdgeResolvers } from '../__generated__/resolvers-types.js';
import { requireAdmin, requireViewerId } from '../context.js';
import { apiError } from '../errors.js';
import { localIdOf, meetingGlobalId } from '../ids.js';
import type { RequestContext } from '../context.js';

async function loadMeeting(ctx: RequestContext, meetingId: string) {
  const meeting = await ctx.loaders.meetingById.load(meetingId);
  if (!meeting) throw apiError('NOT_FOUND', 'no such meeting', 'meetingId');
  return meeting;
}

export const meetingMutations: Pick<MutationResolvers, 'createMeeting' | 'acceptMeeting' | 'reconcileMeeting'> = {
  createMeeting: async (_root, { input }, ctx) => {
    const viewerId = await requireViewerId(ctx);
    const meeting = await ctx.meetings.create({ title: input.title }, viewerId);
    ctx.loaders.meetingById.prime(meeting.meetingId, meeting);
    return { meeting, clientMutationId: input.clientMutationId ?? null };
  },
  acceptMeeting: async (_root, { input }, ctx) => {
    const meetingId = localIdOf(input.meetingId, 'meetingId', 'Meeting');
    const viewerId = await requireViewerId(ctx);
    const { counted } = await ctx.meetings.accept(meetingId, viewerId);
    ctx.loaders.acceptanceCount.clear(meetingId);
    return { meeting: await loadMeeting(ctx, meetingId), counted, clientMutationId: input.clientMutationId ?? null };
  },
  reconcileMeeting: async (_root, { input }, ctx) => {
    requireAdmin(ctx);
    const meetingId = localIdOf(input.meetingId, 'meetingId', 'Meeting');
    const { previousCount, acceptanceCount } = await ctx.meetings.reconcile(meetingId);
    ctx.loaders.acceptanceCount.clear(meetingId).prime(meetingId, acceptanceCount);
    return { meeting: await loadMeeting(ctx, meetingId), previousCount, clientMutationId: input.clientMutationId ?? null };
  },
};

export const meetingType: MeetingResolvers = {
  id: (m) => meetingGlobalId(m.meetingId),
  acceptanceCount: (m, _args, ctx) => ctx.loaders.acceptanceCount.load(m.meetingId),
  acceptedBy: (m, args, ctx) => ctx.meetings.acceptedBy(m.meetingId, args),
};

export const userEdgeType: UserEdgeResolvers = {
  node: async (edge, _args, ctx) => {
    const user = await ctx.loaders.userById.load(edge.node.userId);
    if (!user) throw new Error(`edge to unknown user ${edge.node.userId}`);
    return user;
  },
};
