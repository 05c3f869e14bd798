/** Ordered lists (seed 002): the list and item types and the list mutations. */
import type { ListItemResolvers, MutationResolvers, OrderedListEdgeResolvers, OrderedListResolvers } from '../__generated__/resolvers-types.js';
import { requireViewer, requireViewerId } from '../context.js';
import { apiError } from '../errors.js';
import { edgeNodeFrom } from './edge-node.js';
import { listGlobalId, listItemGlobalId, listItemRefOf, localIdOf } from '../ids.js';
import { itemsCountKey } from '../../features/lists/lists.js';
import { prefetchCount } from './count-resolvers.js';
import { removal } from './idempotent.js';

/** An item id that must belong to `listId`: another list's item is BAD_USER_INPUT. */
function sameListItem(id: string | null | undefined, argument: string, listId: string): string | null {
  if (id === null || id === undefined) return null;
  const ref = listItemRefOf(id, argument);
  if (ref.listId !== listId) throw apiError('BAD_USER_INPUT', `\`${argument}\` belongs to another list`, argument);
  return ref.itemId;
}

export const listMutations: Pick<
  MutationResolvers,
  'createList' | 'addListItem' | 'moveListItem' | 'renameListItem' | 'removeListItem'
> = {
  createList: async (_root, { input }, ctx) => {
    const ownerId = await requireViewerId(ctx);
    const list = await ctx.lists.create(input.title, ownerId);
    return { list, clientMutationId: input.clientMutationId ?? null };
  },
  addListItem: async (_root, { input }, ctx) => {
    const listId = localIdOf(input.listId, 'listId', 'OrderedList');
    const before = sameListItem(input.beforeItemId, 'beforeItemId', listId);
    requireViewer(ctx);
    const item = await ctx.lists.add(listId, input.label, before);
    return { item, clientMutationId: input.clientMutationId ?? null };
  },
  moveListItem: async (_root, { input }, ctx) => {
    const { listId, itemId } = listItemRefOf(input.itemId, 'itemId');
    const beforeItemId = sameListItem(input.beforeItemId, 'beforeItemId', listId);
    const afterItemId = sameListItem(input.afterItemId, 'afterItemId', listId);
    requireViewer(ctx);
    const item = await ctx.lists.move(listId, itemId, { beforeItemId, afterItemId, toEnd: input.toEnd ?? null });
    return { item, clientMutationId: input.clientMutationId ?? null };
  },
  renameListItem: async (_root, { input }, ctx) => {
    const { listId, itemId } = listItemRefOf(input.itemId, 'itemId');
    requireViewer(ctx);
    const item = await ctx.lists.rename(listId, itemId, input.label);
    return { item, clientMutationId: input.clientMutationId ?? null };
  },
  removeListItem: async (_root, { input }, ctx) => {
    const ref = listItemRefOf(input.itemId, 'itemId');
    requireViewer(ctx);
    await removal(ctx, () => ctx.lists.remove(ref.listId, ref.itemId));
    return { removedItemId: listItemGlobalId(ref), clientMutationId: input.clientMutationId ?? null };
  },
};

export const orderedListType: OrderedListResolvers = {
  id: (list) => listGlobalId(list.listId),
  items: (list, args, ctx, info) => {
    prefetchCount(info, ctx, itemsCountKey(list.listId));
    return ctx.lists.items(list.listId, args);
  },
  owner: async (list, _args, ctx) => {
    const owner = await ctx.loaders.userById.load(list.ownerId);
    if (!owner) throw new Error(`list ${list.listId} has no owner row ${list.ownerId}`);
    return owner;
  },
};

export const orderedListEdgeType: OrderedListEdgeResolvers = {
  node: edgeNodeFrom('list', (ref: { listId: string }) => ref.listId, (ctx, id) => ctx.loaders.listById.loadNow(id)),
};

export const listItemType: ListItemResolvers = {
  id: (item) => listItemGlobalId(item),
  list: async (item, _args, ctx) => {
    const list = await ctx.loaders.listById.load(item.listId);
    if (!list) throw new Error(`item of unknown list ${item.listId}`);
    return list;
  },
};
