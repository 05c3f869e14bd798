/**
 * Checking `offset` on a connection against the model: every page from the start, the
 * end and cursors at both ends and the middle, both directions, at offsets that cross
 * leaves and ends, equals the model's slice of what the connection holds, flags included.
 */
import { expect } from 'vitest';
import type { Page, PageArgs } from '../../src/paging/types.js';
import { modelOffsetPage } from './paging-model.js';

/** Offsets and page sizes that cross the connections' leaves and ends. */
const OFFSETS = [0, 1, 7, 20, 41, 99, 130];
const SIZES = [1, 5, 20];

/** A connection as the checks see it: a page for Relay arguments, and each node's id. */
export interface CheckedConnection<N> {
  page(args: PageArgs): Promise<Page<N>>;
  idOf(node: N): string;
}

/** Every edge of a connection, in order, through plain pages (no offset): ids and cursors. */
export async function plainEdges<N>(connection: CheckedConnection<N>): Promise<Array<{ id: string; cursor: string }>> {
  const out: Array<{ id: string; cursor: string }> = [];
  let after: string | undefined;
  for (;;) {
    const page = await connection.page({ first: 100, after });
    out.push(...page.edges.map((e) => ({ id: connection.idOf(e.node), cursor: e.cursor })));
    if (!page.pageInfo.hasNextPage) return out;
    after = page.pageInfo.endCursor!;
  }
}

/**
 * Every offset page of `connection` equals the model's slice of `held` (its ids in
 * connection order; `cursorOf` gives an id's cursor). Returns how many edges it holds.
 */
export async function expectExactOffsetPages<N>(connection: CheckedConnection<N>, held: readonly string[], cursorOf: (id: string) => string): Promise<number> {
  const order = (x: string, y: string) => held.indexOf(x) - held.indexOf(y);
  for (const backward of [false, true]) {
    for (const at of [undefined, held[0], held[Math.floor(held.length / 2)], held[held.length - 1]]) {
      for (const offset of OFFSETS) {
        for (const size of SIZES) {
          const cursor = at === undefined ? undefined : cursorOf(at);
          const page = await connection.page(backward ? { last: size, before: cursor, offset } : { first: size, after: cursor, offset });
          expect(
            { nodes: page.edges.map((e) => connection.idOf(e.node)), hasPreviousPage: page.pageInfo.hasPreviousPage, hasNextPage: page.pageInfo.hasNextPage },
            JSON.stringify({ backward, cursor: at && held.indexOf(at), offset, size }),
          ).toEqual(modelOffsetPage(held, order, backward ? 'backward' : 'forward', size, offset, at));
        }
      }
    }
  }
  return held.length;
}

/** `expectExactOffsetPages` over what plain pages show: for connections whose truth is their own plain pages. */
export async function expectOffsetPagesAsPlainOnes<N>(connection: CheckedConnection<N>): Promise<number> {
  const edges = await plainEdges(connection);
  const cursors = new Map(edges.map((e) => [e.id, e.cursor]));
  return expectExactOffsetPages(
    connection,
    edges.map((e) => e.id),
    (id) => cursors.get(id)!,
  );
}
