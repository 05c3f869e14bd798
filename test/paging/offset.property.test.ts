/**
 * `offset` in the paging engine, against the reference model: from the start, the end
 * or a cursor (deleted or not), in both directions, through a counted index
 * (`rankedIndex`, its buckets counted from the data) and without one (reading the
 * edges skipped). Every page equals the model's slice, flags included; a negative
 * offset is refused naming `offset`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCursorCodec } from '../../src/paging/cursor.js';
import { pageFromSource, type PagingOptions } from '../../src/paging/engine.js';
import { RANK_LEVEL_SHIFTS, rankPrefixes, rankedIndex, type RankBucket } from '../../src/paging/ranked-index.js';
import { PagingArgumentError } from '../../src/paging/types.js';
import { ArraySource } from '../support/array-source.js';
import { modelOffsetPage } from '../support/paging-model.js';

const codec = createCursorCodec('offset-property-secret');
const byNumber = (a: number, b: number) => a - b;

/** A counted index over an ArraySource's keys, each key its own rank; `reads` counts bucket reads. */
function indexOver(source: ArraySource) {
  const stats = { reads: 0 };
  const index = rankedIndex({
    order: { rankOf: (key) => BigInt(key[0] as number), edgeKey: (rank) => [Number(rank)] },
    async buckets(level, parent) {
      stats.reads++;
      const counts = new Map<bigint, number>();
      for (const k of source.all) {
        const prefixes = rankPrefixes(BigInt(k));
        if (level > 0 && prefixes[level - 1] !== parent) continue;
        counts.set(prefixes[level]!, (counts.get(prefixes[level]!) ?? 0) + 1);
      }
      return [...counts].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([prefix, count]): RankBucket => ({ prefix, count }));
    },
  });
  return { index, stats };
}

// Keys spread over several leaves and upper buckets: a leaf holds 256 ranks, the level above 2^18.
const key = fc.oneof(fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 0, max: 2 ** 30 }));

describe('offset', () => {
  for (const indexed of [true, false]) {
    it(`gives the model's slice from the start, the end and any cursor, ${indexed ? 'through a counted index' : 'reading the edges skipped'}`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.uniqueArray(key, { maxLength: 80 }),
          fc.boolean(),
          fc.integer({ min: 0, max: 9 }),
          fc.integer({ min: 0, max: 90 }),
          fc.option(fc.tuple(key, fc.boolean())),
          async (keys, backward, size, offset, cursorChoice) => {
            const source = new ArraySource(keys);
            const { index } = indexOver(source);
            const options: PagingOptions = { connectionName: 'numbers', codec, ...(indexed && { index }) };
            // A cursor at an existing key, or at one deleted since (a key not held).
            let cursor: number | undefined;
            if (cursorChoice) {
              const [k, existing] = cursorChoice;
              cursor = existing && source.all.length ? source.all[k % source.all.length]! : k;
            }
            const encoded = cursor === undefined ? undefined : codec.encodeCursor(source.id, [cursor]);
            const page = await pageFromSource(source, backward ? { last: size, before: encoded, offset } : { first: size, after: encoded, offset }, options);
            expect({
              nodes: page.edges.map((e) => e.node),
              hasPreviousPage: page.pageInfo.hasPreviousPage,
              hasNextPage: page.pageInfo.hasNextPage,
            }).toEqual(modelOffsetPage(source.all, byNumber, backward ? 'backward' : 'forward', size, offset, cursor));
            // Every edge keeps its own cursor: going on from the jumped-to page is ordinary paging.
            for (const edge of page.edges) expect(codec.decodeCursor(source.id, edge.cursor)).toEqual([edge.node]);
          },
        ),
        { numRuns: 300 },
      );
    });
  }

  it('reads a counted index once per level to select, and its cursor rank in one wave', async () => {
    const source = new ArraySource(Array.from({ length: 5_000 }, (_, i) => i * 97));
    const { index, stats } = indexOver(source);
    const page = await pageFromSource(source, { first: 20, offset: 4_000 }, { connectionName: 'numbers', codec, index });
    expect(page.edges.map((e) => e.node)).toEqual(source.all.slice(4_000, 4_020));
    expect(stats.reads).toBe(RANK_LEVEL_SHIFTS.length);
    // The page itself: one read from the leaf's start (it holds 3 keys at most), and no probe (edges were skipped).
    expect(source.reads.length).toBe(1);
  });

  it('refuses a negative offset, naming it, before reading anything', async () => {
    const source = new ArraySource([1, 2, 3]);
    await expect(pageFromSource(source, { first: 2, offset: -1 }, { connectionName: 'numbers', codec })).rejects.toMatchObject(
      new PagingArgumentError('offset', '`offset` must be 0 or more, got -1'),
    );
    expect(source.reads).toEqual([]);
  });
});
