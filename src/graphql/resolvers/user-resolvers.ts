/** Users: lookups, the viewer, and `createUser`. Thin: ids and arguments in, one feature call. */
import type { MutationResolvers, QueryResolvers, UserResolvers } from '../__generated__/resolvers-types.js';
import { requireViewer } from '../context.js';
import { localIdOf, userGlobalId } from '../ids.js';
import { Kind, getArgumentValues, type FieldNode, type GraphQLObjectType, type GraphQLResolveInfo, type ValueNode } from 'graphql';
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

/**
 * The arguments of a `posts` field node that holds no variable, as graphql-js coerces
 * them, made once per node (frozen: every request of the query shares them); null for
 * a node with variables, whose arguments are coerced per request.
 */
const literalArguments = new WeakMap<FieldNode, Readonly<Record<string, unknown>> | null>();

function postsArguments(info: GraphQLResolveInfo, node: FieldNode): Record<string, unknown> {
  let args = literalArguments.get(node);
  const field = () => (info.schema.getType('User') as GraphQLObjectType).getFields().posts!;
  if (args === undefined) {
    const literal = !(node.arguments ?? []).some((a) => hasVariable(a.value));
    args = literal ? Object.freeze(getArgumentValues(field(), node, {})) : null;
    literalArguments.set(node, args);
  }
  return args ?? getArgumentValues(field(), node, info.variableValues);
}

function hasVariable(value: ValueNode): boolean {
  if (value.kind === Kind.VARIABLE) return true;
  if (value.kind === Kind.LIST) return value.values.some(hasVariable);
  if (value.kind === Kind.OBJECT) return value.fields.some((f) => hasVariable(f.value));
  return false;
}

/**
 * Start the page of posts the query asks for beside the user's row: both need only the
 * user's id, so they leave in one wave, not one after the other (issue 39: a timeline
 * request in two waves, a third fewer socket writes to Cassandra). `User.posts` takes the
 * page (`startedPage`); a user with no row leaves it unread, its failure unreported.
 */
function startPosts(info: GraphQLResolveInfo, ctx: RequestContext, userId: string): void {
  const node = postsFieldOf(info);
  if (!node) return;
  let page: Promise<PostPage>;
  try {
    page = ctx.timeline.posts(userId, postsArguments(info, node) as never);
  } catch (err) {
    page = Promise.reject(err);
  }
  page.catch(() => undefined);
  (ctx.startedAhead ??= []).push({ node, key: userId, read: page });
}

/** The page `startPosts` started for this `posts` field and user, taken once; else undefined. */
function startedPage(info: GraphQLResolveInfo, ctx: RequestContext, userId: string): Promise<PostPage> | undefined {
  const started = ctx.startedAhead;
  const at = started?.findIndex((s) => s.node === info.fieldNodes[0] && s.key === userId) ?? -1;
  return at === -1 ? undefined : (started!.splice(at, 1)[0]!.read as Promise<PostPage>);
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
