/** Users: lookups, the viewer, and `createUser`. Thin: ids and arguments in, one feature call. */
import type { MutationResolvers, QueryResolvers, UserResolvers } from '../__generated__/resolvers-types.js';
import { requireViewer } from '../context.js';
import { localIdOf, userGlobalId } from '../ids.js';
import { postsCountKey } from '../../features/timeline/timeline.js';
import { prefetchCount } from './count-resolvers.js';

export const userQueries: Pick<QueryResolvers, 'viewer' | 'userByUsername' | 'usersByLocation' | 'usersByLastName' | 'usersByName'> = {
  // The directory decides who may search it (members).
  usersByLocation: (_root, { location, ...args }, ctx) => ctx.directory.byLocation(location, args),
  usersByLastName: (_root, { prefix, ...args }, ctx) => ctx.directory.byLastName(prefix, args),
  usersByName: (_root, { query, ...args }, ctx) => ctx.directory.byName(query, args),
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

export const userMutations: Pick<MutationResolvers, 'createUser' | 'updateUser'> = {
  updateUser: async (_root, { input }, ctx) => {
    const userId = localIdOf(input.id, 'id', 'User');
    requireViewer(ctx);
    const user = await ctx.users.update(userId, {
      displayName: input.displayName,
      location: input.location,
      lastName: input.lastName,
      firstName: input.firstName,
    });
    return { user, clientMutationId: input.clientMutationId ?? null };
  },
  createUser: async (_root, { input }, ctx) => {
    requireViewer(ctx);
    const user = await ctx.users.create({
      username: input.username,
      displayName: input.displayName,
      location: input.location,
      lastName: input.lastName,
      firstName: input.firstName,
    });
    return { user, clientMutationId: input.clientMutationId ?? null };
  },
};

export const userType: UserResolvers = {
  id: (user) => userGlobalId(user.id),
  posts: (user, args, ctx, info) => {
    prefetchCount(info, ctx, postsCountKey(user.id));
    return ctx.timeline.posts(user.id, args);
  },
  lists: (user, args, ctx) => ctx.lists.ofOwner(user.id, args),
  meetings: (user, args, ctx) => ctx.meetings.ofUser(user.id, args),
  location: (user, _args, ctx) => ctx.users.memberOnlyField(user, 'location'),
  lastName: (user, _args, ctx) => ctx.users.memberOnlyField(user, 'lastName'),
  firstName: (user, _args, ctx) => ctx.users.memberOnlyField(user, 'firstName'),
};
