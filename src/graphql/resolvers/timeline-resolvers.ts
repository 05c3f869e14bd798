/** Posts: the Post type and the post mutations. */
import type { MutationResolvers, PostResolvers } from '../__generated__/resolvers-types.js';
import { requireViewerId } from '../context.js';
import { parseGlobalId, postGlobalId } from '../ids.js';
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
  author: async (post, _args, ctx) => {
    const author = await ctx.loaders.userById.load(post.authorId);
    if (!author) throw new Error(`post ${post.postId} has no author row ${post.authorId}`);
    return author;
  },
};
