/** Every resolver of schema.graphql, checked against the generated resolver types. */
import type { Resolvers } from '../__generated__/resolvers-types.js';
import { DateTimeScalar } from '../scalars.js';
import { keyedMutations } from './idempotent.js';
import { acceptorConnectionType, listItemConnectionType, postConnectionType, suspensionConnectionType } from './count-resolvers.js';
import { listItemType, listMutations, orderedListEdgeType, orderedListType } from './list-resolvers.js';
import { meetingEdgeType, meetingMutations, meetingType, userEdgeType } from './meeting-resolvers.js';
import { nodeInterface, nodeQueries } from './node-resolvers.js';
import { rateLimitQueries } from './rate-limit-resolvers.js';
import { suspensionMutations, suspensionQueries, suspensionType, userSuspensionField } from './suspension-resolvers.js';
import { subscriptionType } from './subscription-resolvers.js';
import { postType, timelineMutations } from './timeline-resolvers.js';
import { userMutations, userQueries, userType } from './user-resolvers.js';

export const resolvers: Resolvers = {
  DateTime: DateTimeScalar,
  Node: nodeInterface,
  Query: { ...nodeQueries, ...userQueries, ...suspensionQueries, ...rateLimitQueries },
  // Each mutation runs once per `clientMutationId` of its viewer (idempotent.ts).
  Mutation: keyedMutations({ ...userMutations, ...timelineMutations, ...suspensionMutations, ...meetingMutations, ...listMutations }),
  Subscription: subscriptionType,
  User: { ...userType, ...userSuspensionField },
  Post: postType,
  Suspension: suspensionType,
  Meeting: meetingType,
  UserEdge: userEdgeType,
  MeetingEdge: meetingEdgeType,
  OrderedList: orderedListType,
  OrderedListEdge: orderedListEdgeType,
  ListItem: listItemType,
  PostConnection: postConnectionType,
  ListItemConnection: listItemConnectionType,
  SuspensionConnection: suspensionConnectionType,
  AcceptorConnection: acceptorConnectionType,
};
