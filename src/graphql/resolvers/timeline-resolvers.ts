/** Posts: the Post type and the post mutations. */
import type { MutationResolvers, PostResolvers } from '../__generated__/resolvers-types.js';
import { requireViewerId } from '../context.js';
import { parseGlobalId, postGlobalId } from '../ids.js';
import { existing } from './edge-node.js';
import { removal } from './idempotent.js';

export const timelineMutations: Pick<MutationResolvers, 'createPost' | 'deletePost'> = {
  createPost: async (_root, { input }, ctx) => {
    const authorId = await requireViewerId(ctx);
    const post = await ctx.timeline.createPost(authorId, input.content);
    return { post, clientMutationId: input.clientMutationId ?? null };
  },
  deletePost: async (_root, { input }, ctx) => {
    const ref = parseGlobalId(input.id, 'id', 'Post');
    if (ref.type !== 'Post') throw new Error('unreachable');
    const viewerId = await requireViewerId(ctx);
    await removal(ctx, () => ctx.timeline.deletePost(viewerId, ref));
    return { deletedPostId: postGlobalId(ref), clientMutationId: input.clientMutationId ?? null };
  },
};

export const postType: PostResolvers = {
  id: (post) => postGlobalId(post),
  // Every post of a page has its author in hand after the first: no promise for those.
  author: (post, _args, ctx) => existing(ctx.loaders.userById.loadNow(post.authorId), noAuthor, post),
};

function noAuthor(post: { authorId: string; postId: string }): Error {
  return new Error(`post ${post.postId} has no author row ${post.authorId}`);
}
