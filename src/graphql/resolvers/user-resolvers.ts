/** Users: lookups, the viewer, and `createUser`. Thin: ids and arguments in, one feature call. */
import type { MutationResolvers, QueryResolvers, UserResolvers } from '../__generated__/resolvers-types.js';
import { requireViewer } from '../context.js';
import { apiError } from '../errors.js';
import { userGlobalId } from '../ids.js';

export const userQueries: Pick<QueryResolvers, 'viewer' | 'userByUsername'> = {
  viewer: async (_root, _args, ctx) => {
    if (!ctx.viewer) return null;
    const id = await ctx.loaders.userIdByUsername.load(ctx.viewer.username);
    return id ? ctx.loaders.userById.load(id) : null;
  },
  userByUsername: async (_root, { username }, ctx) => {
    const id = await ctx.loaders.userIdByUsername.load(username);
    return id ? ctx.loaders.userById.load(id) : null;
  },
};

export const userMutations: Pick<MutationResolvers, 'createUser'> = {
  createUser: async (_root, { input }, ctx) => {
    const viewer = requireViewer(ctx);
    if (!viewer.isAdmin && viewer.username !== input.username) {
      throw apiError('FORBIDDEN', 'a token may only create the user named by its subject (or be an admin\'s)');
    }
    const user = await ctx.users.create({ username: input.username, displayName: input.displayName });
    ctx.loaders.userById.prime(user.id, user);
    ctx.loaders.userIdByUsername.prime(user.username, user.id);
    return { user, clientMutationId: input.clientMutationId ?? null };
  },
};

export const userType: UserResolvers = {
  id: (user) => userGlobalId(user.id),
  posts: (user, args, ctx) => ctx.timeline.posts(user.id, args),
};
