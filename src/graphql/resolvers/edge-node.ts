/** The `node` of an edge whose page holds references: the object is read through a request loader. */
import type { RequestContext } from '../context.js';

/**
 * What a loader's `loadNow` gave, or the error `missing` makes when it found nothing:
 * a value at once when the request already holds it (no promise for graphql-jit to
 * wait on), otherwise a promise of it.
 */
export function existing<T, S>(found: T | null | Promise<T | null>, missing: (subject: S) => Error, subject: S): T | Promise<T> {
  // `missing` takes what it names as an argument: a resolver passes a function of its
  // module, not a closure made for each edge (20 of them a timeline page).
  if (found instanceof Promise) {
    return found.then((value) => {
      if (value === null) throw missing(subject);
      return value;
    });
  }
  if (found === null) throw missing(subject);
  return found;
}

/**
 * A `node` resolver for edges of references: loads the object (a page's visibility
 * check has usually filled the loader already, so this costs no read, nor a promise).
 * A reference to nothing is an internal error, masked for the client.
 */
export function edgeNodeFrom<R, T>(what: string, idOf: (ref: R) => string, load: (ctx: RequestContext, id: string) => T | null | Promise<T | null>) {
  const unknownNode = (id: string) => new Error(`edge to unknown ${what} ${id}`);
  return (edge: { readonly node: R }, _args: unknown, ctx: RequestContext): T | Promise<T> => {
    const id = idOf(edge.node);
    return existing(load(ctx, id), unknownNode, id);
  };
}
