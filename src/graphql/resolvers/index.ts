/** Every resolver of schema.graphql, checked against the generated resolver types. */
import type { Resolvers } from '../__generated__/resolvers-types.js';
import { DateTimeScalar } from '../scalars.js';
import { nodeInterface, nodeQueries } from './node-resolvers.js';
import { postType, timelineMutations } from './timeline-resolvers.js';
import { userMutations, userQueries, userType } from './user-resolvers.js';

export const resolvers: Resolvers = {
  DateTime: DateTimeScalar,
  Node: nodeInterface,
  Query: { ...nodeQueries, ...userQueries },
  Mutation: { ...userMutations, ...timelineMutations },
  User: userType,
  Post: postType,
};
