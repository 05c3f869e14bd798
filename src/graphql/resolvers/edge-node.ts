/** The `node` of an edge whose page holds references: the object is read through a request loader. */
import type { RequestContext } from '../context.js';

/**
 * A `node` resolver for edges of references: loads the object (a page's visibility
 * check has usually filled the loader already, so this costs no read). A reference to
 * nothing is an internal error, masked for the client.
 */
export function edgeNodeFrom<R, T>(what: string, idOf: (ref: R) => string, load: (ctx: RequestContext, id: string) => Promise<T | null>) {
  return async (edge: { readonly node: R }, _args: unknown, ctx: RequestContext): Promise<T> => {
    const id = idOf(edge.node);
    const found = await load(ctx, id);
    if (!found) throw new Error(`edge to unknown ${what} ${id}`);
    return found;
  };
}
