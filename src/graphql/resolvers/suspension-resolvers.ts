/** Suspended users: the admin connection, the per-user field, suspend and unsuspend. */
import type {
  MutationResolvers,
  QueryResolvers,
  SuspensionResolvers,
  UserResolvers,
} from '../__generated__/resolvers-types.js';
import { requireViewer } from '../context.js';
import { apiError } from '../errors.js';
import { localIdOf } from '../ids.js';
import { existing } from './edge-node.js';
import { removal } from './idempotent.js';

const userIdOf = (id: string) => localIdOf(id, 'userId', 'User');
const unknownUser = (userId: string) => new Error(`suspension of unknown user ${userId}`);

export const suspensionQueries: Pick<QueryResolvers, 'suspendedUsers'> = {
  suspendedUsers: (_root, args, ctx) => ctx.suspensions.page(args),
};

export const suspensionMutations: Pick<MutationResolvers, 'suspendUser' | 'unsuspendUser'> = {
  suspendUser: async (_root, { input }, ctx) => {
    requireViewer(ctx);
    const suspension = await ctx.suspensions.suspend({
      userId: userIdOf(input.userId),
      reason: input.reason,
      suspendedAt: input.suspendedAt ?? null,
    });
    return { suspension, clientMutationId: input.clientMutationId ?? null };
  },
  unsuspendUser: async (_root, { input }, ctx) => {
    requireViewer(ctx);
    const userId = userIdOf(input.userId);
    await removal(ctx, () => ctx.suspensions.unsuspend(userId));
    const user = await ctx.loaders.userById.load(userId);
    if (!user) throw apiError('NOT_FOUND', 'no such user', 'userId');
    return { user, clientMutationId: input.clientMutationId ?? null };
  },
};

export const userSuspensionField: Pick<UserResolvers, 'suspension'> = {
  suspension: (user, _args, ctx) => ctx.suspensions.ofUser(user.id),
};

export const suspensionType: SuspensionResolvers = {
  user: (s, _args, ctx) => existing(ctx.loaders.userById.loadNow(s.userId), unknownUser, s.userId),
};
