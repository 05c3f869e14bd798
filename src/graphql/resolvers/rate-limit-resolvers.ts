/** `Query.rateLimit`: the request's budget as its cost check left it. */
import type { QueryResolvers } from '../__generated__/resolvers-types.js';

/** The budget field of Query. */
export const rateLimitQueries: Pick<QueryResolvers, 'rateLimit'> = {
  rateLimit: (_root, _args, ctx) => {
    if (!ctx.rateLimit) return null;
    const { limit, cost, remaining, resetAt } = ctx.rateLimit.status();
    return { limit, cost, remaining, resetAt: new Date(resetAt) };
  },
};
