/** Users: lookups, the viewer, and `createUser`. Thin: ids and arguments in, one feature call. */
import type { MutationResolvers, QueryResolvers, UserResolvers } from '../__generated__/resolvers-types.js';
import { requireViewer } from '../context.js';
import { localIdOf, userGlobalId } from '../ids.js';
import { Kind, getArgumentValues, type FieldNode, type GraphQLObjectType, type GraphQLResolveInfo } from 'graphql';
import { postsCountKey, type PostPage } from '../../features/timeline/timeline.js';
import type { RequestContext } from '../context.js';
import { prefetchCount } from './count-resolvers.js';

/**
 * The `posts` field a `userByUsername` field selects, or null: none, several (aliases),
 * or a fragment that might hold one. Per field node: a compiled query reuses its nodes.
 */
const postsFields = new WeakMap<FieldNode, FieldNode | null>();

function postsFieldOf(info: GraphQLResolveInfo): FieldNode | null {
  const node = info.fieldNodes[0]!;
  let found = postsFields.get(node);
  if (found === undefined) {
    found = null;
    let plain = info.fieldNodes.length === 1;
    for (const s of node.selectionSet?.selections ?? []) {
      if (s.kind !== Kind.FIELD) plain = false;
      else if (s.name.value === 'posts') {
        if (found) plain = false;
        found = s;
      }
    }
    if (!plain) found = null;
    postsFields.set(node, found);
  }
  return found;
}

/** Pages of posts a request started beside their user's row, by `posts` field node and user id. */
const startedPages = new WeakMap<RequestContext, Array<{ node: FieldNode; userId: string; page: Promise<PostPage> }>>();

/**
 * Start the page of posts the query asks for beside the user's row: both need only the
 * user's id, so they leave in one wave, not one after the other (issue 39: a timeline
 * request in two waves, a third fewer socket writes to Cassandra). `User.posts` takes the
 * page (`startedPage`); a user with no row leaves it unread, its failure unreported.
 */
function startPosts(info: GraphQLResolveInfo, ctx: RequestContext, userId: string): void {
  const node = postsFieldOf(info);
  if (!node) return;
  const field = (info.schema.getType('User') as GraphQLObjectType).getFields().posts!;
  let page: Promise<PostPage>;
  try {
    page = ctx.timeline.posts(userId, getArgumentValues(field, node, info.variableValues) as never);
  } catch (err) {
    page = Promise.reject(err);
  }
  page.catch(() => undefined);
  let started = startedPages.get(ctx);
  if (!started) startedPages.set(ctx, (started = []));
  started.push({ node, userId, page });
}

/** The page `startPosts` started for this `posts` field and user, taken once; else undefined. */
function startedPage(info: GraphQLResolveInfo, ctx: RequestContext, userId: string): Promise<PostPage> | undefined {
  const started = startedPages.get(ctx);
  const at = started?.findIndex((s) => s.node === info.fieldNodes[0] && s.userId === userId) ?? -1;
  return at === -1 ? undefined : started!.splice(at, 1)[0]!.page;
}

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
  userByUsername: async (_root, { username }, ctx, info) => {
    const id = await ctx.loaders.userIdByUsername.load(username);
    if (!id) return null;
    startPosts(info, ctx, id);
    return ctx.loaders.userById.load(id);
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
    return startedPage(info, ctx, user.id) ?? ctx.timeline.posts(user.id, args);
  },
  lists: (user, args, ctx) => ctx.lists.ofOwner(user.id, args),
  meetings: (user, args, ctx) => ctx.meetings.ofUser(user.id, args),
  location: (user, _args, ctx) => ctx.users.memberOnlyField(user, 'location'),
  lastName: (user, _args, ctx) => ctx.users.memberOnlyField(user, 'lastName'),
  firstName: (user, _args, ctx) => ctx.users.memberOnlyField(user, 'firstName'),
};
