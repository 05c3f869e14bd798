import { describe, expect, it } from 'vitest';
import { createCursorCodec } from '../../src/paging/cursor.js';
import { pageFromSource, type PagingOptions } from '../../src/paging/engine.js';
import { PagingArgumentError, type PageArgs } from '../../src/paging/types.js';
import { ArraySource } from '../support/array-source.js';

const codec = createCursorCodec('test-secret-test-secret');
const options: PagingOptions = { connectionName: 'posts', codec };
const cursorOf = (k: number, id = 'test:numbers') => codec.encodeCursor(id, [k]);

async function page(source: ArraySource, args: PageArgs) {
  const p = await pageFromSource(source, args, options);
  return { nodes: p.edges.map((e) => e.node), ...p.pageInfo };
}

function expectedInfo(nodes: number[], hasPreviousPage: boolean, hasNextPage: boolean) {
  return {
    nodes,
    hasPreviousPage,
    hasNextPage,
    startCursor: nodes.length ? cursorOf(nodes[0]!) : null,
    endCursor: nodes.length ? cursorOf(nodes[nodes.length - 1]!) : null,
  };
}

const TEN = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

describe('the paging engine', () => {
  it('gives the first page with no cursor, reading page size + 1', async () => {
    const s = new ArraySource(TEN);
    expect(await page(s, { first: 3 })).toEqual(expectedInfo([1, 2, 3], false, true));
    expect(s.reads).toEqual([{ from: undefined, direction: 'forward', limit: 4 }]);
  });

  it('pages forward from a cursor reading page size + 2 in one round trip', async () => {
    const s = new ArraySource(TEN);
    expect(await page(s, { first: 3, after: cursorOf(3) })).toEqual(expectedInfo([4, 5, 6], true, true));
    expect(s.reads).toEqual([{ from: [3], direction: 'forward', limit: 5 }]);
  });

  it('knows the last page forward', async () => {
    const s = new ArraySource(TEN);
    expect(await page(s, { first: 3, after: cursorOf(7) })).toEqual(expectedInfo([8, 9, 10], true, false));
    expect(await page(s, { first: 3, after: cursorOf(10) })).toEqual(expectedInfo([], true, false));
  });

  it('pages backward from a cursor with both flags exact', async () => {
    const s = new ArraySource(TEN);
    expect(await page(s, { last: 3, before: cursorOf(8) })).toEqual(expectedInfo([5, 6, 7], true, true));
    expect(s.reads).toEqual([{ from: [8], direction: 'backward', limit: 5 }]);
    expect(await page(s, { last: 3, before: cursorOf(4) })).toEqual(expectedInfo([1, 2, 3], false, true));
    expect(await page(s, { last: 3 })).toEqual(expectedInfo([8, 9, 10], true, false));
  });

  it('settles a flag with one probe when the cursor row was deleted', async () => {
    const s = new ArraySource(TEN);
    s.remove(3);
    expect(await page(s, { first: 3, after: cursorOf(3) })).toEqual(expectedInfo([4, 5, 6], true, true));
    expect(s.reads).toEqual([
      { from: [3], direction: 'forward', limit: 5 },
      { from: [3], direction: 'backward', limit: 1 },
    ]);
    const t = new ArraySource([2, 3, 4]);
    t.remove(2);
    expect(await page(t, { first: 5, after: cursorOf(2) })).toEqual(expectedInfo([3, 4], false, false));
  });

  it('bounds a window with after and before', async () => {
    const s = new ArraySource(TEN);
    expect(await page(s, { after: cursorOf(2), before: cursorOf(6) })).toEqual(expectedInfo([3, 4, 5], true, true));
    expect(await page(s, { first: 2, after: cursorOf(2), before: cursorOf(6) })).toEqual(expectedInfo([3, 4], true, true));
    expect(await page(s, { last: 2, after: cursorOf(2), before: cursorOf(6) })).toEqual(expectedInfo([4, 5], true, true));
    expect(await page(s, { first: 5, before: cursorOf(3) })).toEqual(expectedInfo([1, 2], false, true));
    expect(await page(s, { last: 5, after: cursorOf(8) })).toEqual(expectedInfo([9, 10], true, false));
  });

  it('treats a lone before as paging backward with the default size', async () => {
    const s = new ArraySource(Array.from({ length: 50 }, (_, i) => i));
    const p = await page(s, { before: cursorOf(40) });
    expect(p.nodes).toEqual(Array.from({ length: 20 }, (_, i) => i + 20));
    expect([p.hasPreviousPage, p.hasNextPage]).toEqual([true, true]);
  });

  it('uses a default page size of 20 and allows a size of 0', async () => {
    const s = new ArraySource(Array.from({ length: 30 }, (_, i) => i));
    expect((await page(s, {})).nodes).toHaveLength(20);
    expect(await page(s, { first: 0, after: cursorOf(4) })).toEqual(expectedInfo([], true, true));
    expect(await page(new ArraySource([]), { first: 10 })).toEqual(expectedInfo([], false, false));
  });

  describe('refuses bad arguments before reading anything', () => {
    const cases: Array<[string, PageArgs, string, string]> = [
      ['first and last together', { first: 1, last: 1 }, 'last', 'Passing both `first` and `last` to paginate the `posts` connection is not supported.'],
      ['a negative first', { first: -1 }, 'first', '`first` must be between 0 and 100, got -1'],
      ['a first above 100', { first: 101 }, 'first', '`first` must be between 0 and 100, got 101'],
      ['a negative last', { last: -5 }, 'last', '`last` must be between 0 and 100, got -5'],
      ['a malformed cursor', { after: 'not a cursor!' }, 'after', '`after` is not a valid cursor for this connection, got "not a cursor!"'],
      ['a cursor of another connection', { before: cursorOf(3, 'test:other') }, 'before', '`before` is not a valid cursor for this connection'],
      ['a cursor signed with another secret', { after: createCursorCodec('another-secret-entirely').encodeCursor('test:numbers', [3]) }, 'after', 'not a valid cursor'],
      ['a cursor with a key of the wrong shape', { after: codec.encodeCursor('test:numbers', ['three']) }, 'after', 'not a valid cursor'],
    ];
    for (const [what, args, argument, message] of cases) {
      it(`refuses ${what}`, async () => {
        const s = new ArraySource(TEN);
        const error = await pageFromSource(s, args, options).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(PagingArgumentError);
        expect((error as PagingArgumentError).argument).toBe(argument);
        expect((error as PagingArgumentError).message).toContain(message);
        expect(s.reads).toEqual([]);
      });
    }
  });

  it('tells a genuine cursor of a retired format apart from a bad one: out of date, nothing read', async () => {
    // A codec that no longer reads the format `codec` writes stands for the release after a format change.
    const later = { ...options, codec: createCursorCodec('test-secret-test-secret', { retiredVersions: [3] }) };
    const s = new ArraySource(TEN);
    const error = await pageFromSource(s, { first: 2, after: cursorOf(5) }, later).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PagingArgumentError);
    expect((error as PagingArgumentError).argument).toBe('after');
    expect((error as PagingArgumentError).message).toContain('out of date');
    const forged = await pageFromSource(s, { first: 2, after: createCursorCodec('another-secret-0123456789').encodeCursor('test:numbers', [5]) }, later).catch((e: unknown) => e);
    expect((forged as PagingArgumentError).message).toContain('not a valid cursor');
    expect(s.reads).toEqual([]);
  });

  it('encodes the same row to the same cursor text every time', async () => {
    const s = new ArraySource(TEN);
    const a = await pageFromSource(s, { first: 3 }, options);
    const b = await pageFromSource(s, { first: 3 }, options);
    expect(a.edges.map((e) => e.cursor)).toEqual(b.edges.map((e) => e.cursor));
    expect(a.edges[0]!.cursor).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('refuses a cursor whose text was edited by one character', () => {
    const good = cursorOf(5);
    const i = Math.floor(good.length / 2);
    const edited = good.slice(0, i) + (good[i] === 'A' ? 'B' : 'A') + good.slice(i + 1);
    expect(codec.decodeCursor('test:numbers', good)).toEqual([5]);
    expect(codec.decodeCursor('test:numbers', edited)).toBeNull();
    expect(codec.decodeCursor('test:numbers', good.slice(0, -2))).toBeNull();
  });
});
