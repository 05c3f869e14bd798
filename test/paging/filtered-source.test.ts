/**
 * The filtered source: a check's verdicts keep a row, drop it, or keep it with the
 * node the check read in its place (the same row, one object for it a page rather
 * than two); pages stay full across dropped rows, and the engine's flags exact.
 */
import { describe, expect, it } from 'vitest';
import { createCursorCodec } from '../../src/paging/cursor.js';
import { pageFromSource } from '../../src/paging/engine.js';
import { filteredSource, type Verdict } from '../../src/paging/filtered-source.js';
import type { CursorKey, Direction, OrderedSource } from '../../src/paging/types.js';

interface Item {
  readonly n: number;
  readonly from: 'rows' | 'check';
}

/** Rows 1..count in order, read as fresh objects each time. */
function numbers(count: number): OrderedSource<Item> {
  return {
    id: 'Test.numbers',
    async read(from: CursorKey | undefined, direction: Direction, limit: number): Promise<Item[]> {
      const all = Array.from({ length: count }, (_, i) => ({ n: i + 1, from: 'rows' as const }));
      const ordered = direction === 'forward' ? all : all.reverse();
      const at = from?.[0] as number | undefined;
      const start = at === undefined ? 0 : ordered.findIndex((r) => (direction === 'forward' ? r.n >= at : r.n <= at));
      return start < 0 ? [] : ordered.slice(start, start + limit);
    },
    keyOf: (item) => [item.n],
    compare: (a, b) => (a[0] as number) - (b[0] as number),
    isKey: (key) => key.length === 1 && Number.isInteger(key[0]),
  };
}

const codec = createCursorCodec('filtered-source-test-secret');
const options = { connectionName: 'numbers', codec };

describe('filtered source', () => {
  it('keeps what the check keeps, drops what it drops, and shows the node it hands in a row\'s place', async () => {
    // Multiples of 3 dropped; even rows shown as the check's own object for them.
    const verdict = (item: Item): Verdict<Item> => (item.n % 3 === 0 ? false : item.n % 2 === 0 ? { n: item.n, from: 'check' } : true);
    const source = filteredSource(numbers(12), async (items) => items.map(verdict));
    const page = await pageFromSource(source, { first: 5 }, options);
    expect(page.edges.map((e) => e.node)).toEqual([
      { n: 1, from: 'rows' },
      { n: 2, from: 'check' },
      { n: 4, from: 'check' },
      { n: 5, from: 'rows' },
      { n: 7, from: 'rows' },
    ]);
    expect(page.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    // A stood-in node's cursor is its row's: the next page starts right after it.
    const next = await pageFromSource(source, { first: 5, after: page.pageInfo.endCursor }, options);
    expect(next.edges.map((e) => e.node.n)).toEqual([8, 10, 11]);
    expect(next.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
    const back = await pageFromSource(source, { last: 2, before: next.edges[0]!.cursor }, options);
    expect(back.edges.map((e) => e.node)).toEqual([
      { n: 5, from: 'rows' },
      { n: 7, from: 'rows' },
    ]);
    expect(back.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });
  });
});
