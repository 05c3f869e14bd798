/** Relay Global Object Identification: `node`, `nodes`, and the Node interface. */
import type { QueryResolvers, NodeResolvers } from '../__generated__/resolvers-types.js';
import type { RequestContext } from '../context.js';
import { badInput } from '../../errors.js';
import { parseGlobalId, type NodeRef } from '../ids.js';

const MAX_NODES = 100;

function load(ctx: RequestContext, ref: NodeRef) {
  switch (ref.type) {
    case 'User':
      return ctx.loaders.userById.load(ref.userId);
    case 'Post':
      return ctx.loaders.postByKey.load(ref);
    case 'Meeting':
      return ctx.loaders.meetingById.load(ref.meetingId);
    case 'OrderedList':
      return ctx.loaders.listById.load(ref.listId);
    case 'ListItem':
      return ctx.loaders.listItemByRef.load(ref);
  }
}

export const nodeQueries: Pick<QueryResolvers, 'node' | 'nodes'> = {
  node: (_root, { id }, ctx) => load(ctx, parseGlobalId(id, 'id')),
  nodes: (_root, { ids }, ctx) => {
    if (ids.length > MAX_NODES) throw badInput('ids', `\`ids\` must hold at most ${MAX_NODES} IDs, got ${ids.length}`);
    // Parse every id first: one bad id refuses the request before anything is read.
    const refs = ids.map((id) => parseGlobalId(id, 'ids'));
    return Promise.all(refs.map((ref) => load(ctx, ref)));
  },
};

export const nodeInterface: NodeResolvers = {
  __resolveType: (obj) =>
    'postId' in obj ? 'Post' : 'meetingId' in obj ? 'Meeting' : 'itemId' in obj ? 'ListItem' : 'listId' in obj ? 'OrderedList' : 'User',
};
