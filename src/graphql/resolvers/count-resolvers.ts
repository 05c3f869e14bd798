/**
 * `totalCount` of every counted connection: the page carries its count key, and the
 * request's loader reads every count asked for in one batch (counts/connection-counts.ts).
 */
import type { Counted } from '../../counts/connection-counts.js';
import type {
  AcceptorConnectionResolvers,
  ListItemConnectionResolvers,
  PostConnectionResolvers,
  SuspensionConnectionResolvers,
} from '../__generated__/resolvers-types.js';
import type { RequestContext } from '../context.js';

const totalCount = (page: Counted, _args: unknown, ctx: RequestContext) => ctx.loaders.connectionCount.load(page.countKey);

export const postConnectionType: PostConnectionResolvers = { totalCount };
export const listItemConnectionType: ListItemConnectionResolvers = { totalCount };
export const suspensionConnectionType: SuspensionConnectionResolvers = { totalCount };
export const acceptorConnectionType: AcceptorConnectionResolvers = { totalCount };
