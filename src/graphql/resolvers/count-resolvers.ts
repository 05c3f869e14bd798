/**
 * `totalCount` of every counted connection: the page carries its count key, and the
 * request's loader reads every count asked for in one batch (counts/connection-counts.ts).
 *
 * A connection's resolver starts that read itself, beside its page, when the query
 * selects `totalCount` (`prefetchCount`): sibling connections (the nodes of `nodes`, the
 * users of a page) then put their counts into one batch however long each page takes
 * to read, where loading from `totalCount` alone would wait for each page and could
 * batch per page instead. Not selected, nothing is read.
 */
import { Kind, type FieldNode, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';
import type { Counted } from '../../counts/connection-counts.js';
import type {
  AcceptorConnectionResolvers,
  ListItemConnectionResolvers,
  PostConnectionResolvers,
  SuspensionConnectionResolvers,
} from '../__generated__/resolvers-types.js';
import type { RequestContext } from '../context.js';

const totalCount = (page: Counted, _args: unknown, ctx: RequestContext) => ctx.loaders.connectionCount.loadNow(page.countKey);

export const postConnectionType: PostConnectionResolvers = { totalCount };
export const listItemConnectionType: ListItemConnectionResolvers = { totalCount };
export const suspensionConnectionType: SuspensionConnectionResolvers = { totalCount };
export const acceptorConnectionType: AcceptorConnectionResolvers = { totalCount };

/** Whether a selection set asks for `totalCount` (through fragments too). */
function selectsTotalCount(set: SelectionSetNode | undefined, info: GraphQLResolveInfo, seen: Set<string>): boolean {
  for (const s of set?.selections ?? []) {
    if (s.kind === Kind.FIELD && s.name.value === 'totalCount') return true;
    if (s.kind === Kind.INLINE_FRAGMENT && selectsTotalCount(s.selectionSet, info, seen)) return true;
    if (s.kind === Kind.FRAGMENT_SPREAD && !seen.has(s.name.value)) {
      seen.add(s.name.value);
      if (selectsTotalCount(info.fragments[s.name.value]?.selectionSet, info, seen)) return true;
    }
  }
  return false;
}

/** The answer per field node: a compiled query reuses its nodes for every request. */
const asked = new WeakMap<FieldNode, boolean>();

/** Start reading a connection's count now if the query asks for it (see the file comment). */
export function prefetchCount(info: GraphQLResolveInfo, ctx: RequestContext, countKey: string): void {
  const node = info.fieldNodes[0]!;
  let wanted = asked.get(node);
  if (wanted === undefined) {
    wanted = info.fieldNodes.some((f) => selectsTotalCount(f.selectionSet, info, new Set()));
    asked.set(node, wanted);
  }
  // The loader keeps the promise: `totalCount` gets it; a failure is reported there.
  if (wanted) ctx.loaders.connectionCount.load(countKey).catch(() => undefined);
}
