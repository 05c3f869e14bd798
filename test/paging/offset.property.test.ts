/**
 * `offset` in the paging engine, against the reference model: from the start, the end
 * or a cursor (deleted or not), in both directions, through a counted index
 * (`rankedIndex`, its buckets counted from the data) and without one (reading the
 * edges skipped). Every page equals the model's slice, flags included; a negative
 * offset is refused naming `offset`. With bucket lists kept across pages (`RankCache`),
 * every page read after a settlement equals the model's slice whatever was kept before
 * it, and a page whose lists are all kept reads only the settlement and the page.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCursorCodec } from '../../src/paging/cursor.js';
import { pageFromSource, type PagingOptions } from '../../src/paging/engine.js';
import { RANK_LEVEL_SHIFTS, RankCache, SMALL_BUCKET, bucketList, rankPrefixes, rankedIndex, type RankBucket, type RankList, type RankListName } from '../../src/paging/ranked-index.js';
import { PagingArgumentError, type CursorKey, type Direction } from '../../src/paging/types.js';
import { ArraySource } from '../support/array-source.js';
import { modelOffsetPage } from '../support/paging-model.js';

const codec = createCursorCodec('offset-property-secret');
const byNumber = (a: number, b: number) => a - b;

/** The buckets of `level` under `parent` counted from `keys`, each key its own rank. */
function bucketsOf(keys: readonly number[], level: number, parent: bigint | undefined): RankBucket[] {
  const counts = new Map<bigint, number>();
  for (const k of keys) {
    const prefixes = rankPrefixes(BigInt(k));
    if (level > 0 && prefixes[level - 1] !== parent) continue;
    counts.set(prefixes[level]!, (counts.get(prefixes[level]!) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([prefix, count]): RankBucket => ({ prefix, count }));
}

/** The first `limit` lists of the index counted from `keys`, in level then parent order. */
function topOf(keys: readonly number[], limit: number): RankList[] {
  const lists: RankList[] = [];
  // Level by level: the list under every parent with edges, in prefix order.
  let parents: Array<bigint | undefined> = [undefined];
  for (let level = 0; level < RANK_LEVEL_SHIFTS.length && lists.length < limit; level++) {
    const next: bigint[] = [];
    for (const parent of parents) {
      if (lists.length >= limit) break;
      const buckets = bucketsOf(keys, level, parent);
      if (buckets.length > 0) lists.push({ level, parent, buckets });
      next.push(...buckets.map((b) => b.prefix));
    }
    parents = next;
  }
  return lists.slice(0, limit);
}

const numberOrder = { rankOf: (key: readonly unknown[]) => BigInt(key[0] as number), edgeKey: (rank: bigint) => [Number(rank)] };

/**
 * A counted index over an ArraySource's keys, each key its own rank; `reads` counts
 * bucket reads. With `top`, level 0 comes with the index's first rows, and the levels
 * they hold whole with it.
 */
function indexOver(source: ArraySource, top = false, random = false) {
  // `sourceReadsByLastList`: the source's reads started when the last list read came back (a task after it started).
  const stats = { reads: 0, sourceReadsByLastList: 0 };
  const index = rankedIndex({
    order: random ? { ...numberOrder, random } : numberOrder,
    async buckets(level, parent) {
      stats.reads++;
      const list = bucketsOf(source.all, level, parent);
      await null;
      stats.sourceReadsByLastList = source.reads.length;
      return list;
    },
    ...(top && {
      async top(limit: number) {
        stats.reads++;
        return { lists: topOf(source.all, limit) };
      },
    }),
  });
  return { index, stats };
}

/**
 * An index settled from a snapshot of a source (`settle` takes a new one and moves the
 * settlement), its lists kept in `cache`; `slow` answers the settlement's read a task
 * later than the buckets' reads (as a remote store may), and they come back `lag`
 * ticks after they read.
 */
class SettledIndex {
  private snapshot: readonly number[] = [];
  private settlements = 0;
  /** Settle within the next read of the settlement, after the reads that page starts with. */
  settleWithin = false;
  readonly stats = { buckets: 0, settlements: 0 };

  constructor(
    private readonly source: ArraySource,
    readonly cache: RankCache,
    private readonly slow: boolean,
    private readonly lag = 0,
    /** The top's read brings the settlement (`cached.inTop`), as the stores' indexes do. */
    private readonly inTop = false,
    /** Ranks taken as random: a page from a cursor reads its lists in one read of several (`several`), which brings the settlement too. */
    private readonly random = false,
    /** Lists named before the first read are read in one (`several`), as the stores' indexes do, whatever the ranks. */
    private readonly several = false,
  ) {
    this.settle();
  }

  settle(): void {
    this.snapshot = [...this.source.all];
    this.settlements++;
  }

  /** The index as one page sees it. */
  page() {
    return rankedIndex({
      order: this.random ? { ...numberOrder, random: true } : numberOrder,
      ...((this.random || this.several) && {
        several: async (wanted: readonly RankListName[]) => {
          this.stats.buckets++;
          if (this.inTop && this.settleWithin) {
            this.settleWithin = false;
            this.settle();
          }
          const lists = wanted.map((w) => ({ ...w, buckets: bucketsOf(this.snapshot, w.level, w.parent) }));
          const settlement = String(this.settlements);
          for (let i = 0; i < this.lag; i++) await null;
          return this.inTop ? { lists, whole: 0, settlement } : { lists, whole: 0 };
        },
      }),
      buckets: async (level, parent) => {
        this.stats.buckets++;
        const list = bucketsOf(this.snapshot, level, parent);
        for (let i = 0; i < this.lag; i++) await null;
        return list;
      },
      top: async (limit) => {
        this.stats.buckets++;
        if (this.inTop && this.settleWithin) {
          this.settleWithin = false;
          this.settle();
        }
        const lists = topOf(this.snapshot, limit);
        const settlement = String(this.settlements);
        for (let i = 0; i < this.lag; i++) await null;
        return this.inTop ? { lists, settlement } : { lists };
      },
      cached: {
        cache: this.cache,
        id: 'numbers',
        inTop: this.inTop,
        settlement: async () => {
          this.stats.settlements++;
          await null;
          if (this.settleWithin) {
            this.settleWithin = false;
            this.settle();
          }
          const token = String(this.settlements);
          if (this.slow) await new Promise((resolve) => setTimeout(resolve, 0));
          return token;
        },
      },
    });
  }
}

/**
 * The page of 20 at `offset` from the start (or the end, `backward`) through a counted
 * index over `source` with a top, which must equal the model's slice; its index's reads,
 * `source.reads` holding the page's.
 */
async function expectPageWithTop(source: ArraySource, backward: boolean, offset: number) {
  const { index, stats } = indexOver(source, true);
  source.reads.length = 0;
  const page = await pageFromSource(source, backward ? { last: 20, offset } : { first: 20, offset }, { connectionName: 'numbers', codec, index });
  expect({ nodes: page.edges.map((e) => e.node), hasPreviousPage: page.pageInfo.hasPreviousPage, hasNextPage: page.pageInfo.hasNextPage }).toEqual(
    modelOffsetPage(source.all, byNumber, backward ? 'backward' : 'forward', 20, offset, undefined),
  );
  return stats;
}

/** `count` keys drawn at random below 2^53 (mulberry32 from `seed`, 32 bits a call), as a meeting's acceptors' ranks. */
function randomKeys(seed: number, count: number): number[] {
  let state = seed;
  const bits = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  };
  return Array.from({ length: count }, () => bits() * 2 ** 21 + (bits() >>> 11));
}

/** An ArraySource that counts the reads asked to stop at a key (`until`): a cursor's bucket's edges read up to it. */
class UntilSource extends ArraySource {
  untils = 0;

  override read(from: CursorKey | undefined, direction: Direction, limit: number, until?: CursorKey): Promise<number[]> {
    if (until !== undefined) this.untils++;
    return super.read(from, direction, limit);
  }
}

// Keys spread over several leaves and upper buckets: a leaf holds 256 ranks, the level above 2^18.
const key = fc.oneof(fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 0, max: 2 ** 30 }));

describe('offset', () => {
  for (const indexed of [true, false]) {
    it(`gives the model's slice from the start, the end and any cursor, ${indexed ? 'through a counted index' : 'reading the edges skipped'}`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.uniqueArray(key, { maxLength: 80, size: 'medium' }),
          fc.boolean(),
          fc.integer({ min: 0, max: 9 }),
          fc.integer({ min: 0, max: 90 }),
          fc.option(fc.tuple(key, fc.boolean())),
          fc.boolean(),
          fc.boolean(),
          async (keys, backward, size, offset, cursorChoice, top, random) => {
            const source = new ArraySource(keys);
            // Ranks taken as random or not: a walk reads pages on guesses of either kind.
            const { index } = indexOver(source, top, random);
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

  it('stops at a bucket of SMALL_BUCKET edges or fewer and reads the page from its first key, skipping the edges before the position', async () => {
    // 3,000 keys 2^21 apart: a level-3 bucket (2^24 ranks) holds 8 of them.
    const source = new ArraySource(Array.from({ length: 3_000 }, (_, i) => i * 2 ** 21 + (i % 7)));
    for (const top of [false, true]) {
      for (const backward of [false, true]) {
        for (const offset of [1, 700, 1_999, 2_990]) {
          const { index, stats } = indexOver(source, top);
          source.reads.length = 0;
          const page = await pageFromSource(source, backward ? { last: 5, offset } : { first: 5, offset }, { connectionName: 'numbers', codec, index });
          expect(page.edges.map((e) => e.node)).toEqual(modelOffsetPage(source.all, byNumber, backward ? 'backward' : 'forward', 5, offset, undefined).nodes);
          // Levels 0 to 3, one read each; or the index's top, which holds them all.
          expect(stats.reads).toBe(top ? 1 : 4);
          expect(source.reads.length).toBe(1);
          expect(SMALL_BUCKET).toBeGreaterThanOrEqual(8);
        }
      }
    }
  });

  it('reads the page on a guess beside the list of a dense level, and gives the model\'s slice whether the guess holds the page or not', async () => {
    // 40,000 keys 2^15 apart, some a little off: 79 level-3 buckets of 512 under one
    // level-2 bucket (a dense level), 2 keys a level-4 bucket.
    const source = new ArraySource(Array.from({ length: 40_000 }, (_, i) => i * 2 ** 15 + (i % 3)));
    for (const backward of [false, true]) {
      for (const offset of [10_000, 25_001, 35_000]) {
        const stats = await expectPageWithTop(source, backward, offset);
        // The top, then the list under the position's level-3 bucket beside the guessed read, which held the page.
        expect(stats.reads).toBe(2);
        expect(source.reads.length).toBe(1);
      }
    }
    // A guess that misses (the keys of a bucket all at its far end): the page is read from the position found.
    const skewed = new ArraySource(Array.from({ length: 40_000 }, (_, i) => Math.floor(i / 512) * 2 ** 24 + 2 ** 24 - 600 + (i % 512)));
    for (const offset of [10_000, 25_001]) {
      const { index } = indexOver(skewed, true);
      skewed.reads.length = 0;
      const page = await pageFromSource(skewed, { first: 20, offset }, { connectionName: 'numbers', codec, index });
      expect(page.edges.map((e) => e.node)).toEqual(skewed.all.slice(offset, offset + 20));
      expect(skewed.reads.length).toBe(2);
    }
  });

  it('reads the page on a guess beside a dense list whose edges come slower than one a child, whatever their phase', async () => {
    // 8,000 keys 240,007 ranks apart, as suspensions one a minute: a level-3 bucket (2^24
    // ranks) holds 69 or 70 (more than SMALL_BUCKET), one level-4 child (2^16) in 3.66 holds
    // one. Where in its spacing the bucket's first key falls is unknown to the walk: up to
    // one spacing (four children) off where an even spread puts the position. (The top
    // holds the level-4 lists of the first 8 level-3 buckets: no page starts there.)
    for (const phase of [0, 90_000, 200_000]) {
      const source = new ArraySource(Array.from({ length: 8_000 }, (_, i) => phase + i * 240_007));
      for (const backward of [false, true]) {
        for (const offset of [1_000, 3_003, 4_999, 6_345, 7_001]) {
          const stats = await expectPageWithTop(source, backward, offset);
          // The top, then the level-4 list under the position's bucket beside the guess, which held the page.
          expect(stats.reads).toBe(2);
          expect(source.reads.length).toBe(1);
          expect(source.reads[0]!.limit).toBeLessThanOrEqual(26);
        }
      }
    }
  });

  it('reads the page on a guess as wide as a binomial deviation beside a list where ranks are random, from the start or a cursor, and gives the model\'s slice when it misses', async () => {
    // 40,000 keys drawn at random below 2^53, as a meeting's acceptors: 32 level-0
    // buckets of about 1,250 (a sparse level), a level-1 bucket (2^40 ranks) holds 5 on
    // average; the top holds the level-1 lists of the first 11 (13,750 edges).
    const keys = randomKeys(38, 40_000);
    const source = new ArraySource(keys);
    const middle = source.all[20_000]!;
    for (const backward of [false, true]) {
      for (const [offset, cursor] of [[20_000, undefined], [22_000, undefined], [25_001, undefined], [3_000, middle], [5_000, middle]] as const) {
        const { index, stats } = indexOver(source, true, true);
        source.reads.length = 0;
        const after = cursor === undefined ? undefined : codec.encodeCursor(source.id, [cursor]);
        const page = await pageFromSource(source, backward ? { last: 20, before: after, offset } : { first: 20, after, offset }, { connectionName: 'numbers', codec, index });
        expect({ nodes: page.edges.map((e) => e.node), hasPreviousPage: page.pageInfo.hasPreviousPage, hasNextPage: page.pageInfo.hasNextPage }).toEqual(
          modelOffsetPage(source.all, byNumber, backward ? 'backward' : 'forward', 20, offset, cursor),
        );
        // The guess beside the level-1 list under the position's bucket held the page: no
        // read of the page after that list. From a cursor, its rank first: the top, the
        // level-1 list under its bucket and the edges of its level-1 bucket up to it, no
        // deeper list; then the position's list beside the guess.
        expect(source.reads.length).toBe(cursor === undefined ? 1 : 2);
        if (cursor !== undefined) expect(source.reads[0]!.limit).toBe(16);
        expect(stats.sourceReadsByLastList).toBe(source.reads.length);
        expect(stats.reads).toBe(cursor === undefined ? 2 : 3);
      }
    }
    // Without `random`, no guess where the level is sparse: the page is read once the list is back.
    const plain = indexOver(source, true);
    source.reads.length = 0;
    await pageFromSource(source, { first: 20, offset: 25_001 }, { connectionName: 'numbers', codec, index: plain.index });
    expect(source.reads.length).toBe(1);
    expect(plain.stats.sourceReadsByLastList).toBe(0);
    // A guess that misses (each level-0 bucket's keys all in its last 32 level-1 buckets): the page is read from the position found.
    const skewed = new ArraySource(keys.map((k) => Math.floor(k / 2 ** 48) * 2 ** 48 + 2 ** 48 - 1 - (k % 2 ** 45)));
    // 1,000 edges into a level-0 bucket: past what a guess from its first edges holds.
    for (const bucket of [16, 24]) {
      const offset = skewed.all.findIndex((k) => k >= bucket * 2 ** 48) + 1_000;
      const { index: skewedIndex } = indexOver(skewed, true, true);
      skewed.reads.length = 0;
      const page = await pageFromSource(skewed, { first: 20, offset }, { connectionName: 'numbers', codec, index: skewedIndex });
      expect(page.edges.map((e) => e.node)).toEqual(skewed.all.slice(offset, offset + 20));
      expect(skewed.reads.length).toBe(2);
    }
  });

  it('where ranks are random, reads a cursor\'s lists in one read, and with them those the shape of the index last read here puts the position under: a page is then that read beside the edges up to the cursor, and the page', async () => {
    // 40,000 random keys below 2^53: 32 level-0 buckets of about 1,250, a level-1 bucket 5.
    const source = new ArraySource(randomKeys(83, 40_000));
    const middle = source.all[20_000]!;
    const wants: RankListName[][] = [];
    const severalOver = (keys: readonly number[], cache: RankCache) => {
      const stats = { reads: 0 };
      const index = rankedIndex({
        order: { ...numberOrder, random: true },
        async buckets(level, parent) {
          stats.reads++;
          return bucketsOf(keys, level, parent);
        },
        async top(limit) {
          stats.reads++;
          return { lists: topOf(keys, limit), settlement: 'one' };
        },
        async several(wanted) {
          stats.reads++;
          wants.push([...wanted]);
          return { lists: wanted.map((w) => ({ ...w, buckets: bucketsOf(keys, w.level, w.parent) })), whole: 0, settlement: 'one' };
        },
        cached: { cache, id: 'numbers', inTop: true, settlement: async () => 'one' },
      });
      return { index, stats };
    };
    for (const backward of [false, true]) {
      for (const [offset, cursor] of [[3_000, middle], [1_000, middle], [20_000, undefined], [25_001, undefined]] as const) {
        // A process that keeps no list, but knows the index's shape from its last read of it (here, the page before).
        const cache = new RankCache(0);
        for (const visit of ['first', 'shaped'] as const) {
          const { index, stats } = severalOver(source.all, cache);
          source.reads.length = 0;
          wants.length = 0;
          const after = cursor === undefined ? undefined : codec.encodeCursor(source.id, [cursor]);
          const page = await pageFromSource(source, backward ? { last: 20, before: after, offset } : { first: 20, after, offset }, { connectionName: 'numbers', codec, index });
          expect({ nodes: page.edges.map((e) => e.node), hasPreviousPage: page.pageInfo.hasPreviousPage, hasNextPage: page.pageInfo.hasNextPage }).toEqual(
            modelOffsetPage(source.all, byNumber, backward ? 'backward' : 'forward', 20, offset, cursor),
          );
          if (visit === 'first') {
            // Nothing known: from a cursor, level 0's list and the cursor's level-1 list in
            // one read beside its bucket's edges, then the position's list beside a guess
            // (unless it is the cursor's); from an end, the top, then the list beside a guess.
            const position = backward ? page.edges.at(-1)!.node : page.edges[0]!.node;
            const level0 = (k: number) => Math.floor(k / 2 ** 48);
            expect(stats.reads).toBe(cursor !== undefined && level0(position) === level0(cursor) ? 1 : 2);
            if (cursor !== undefined) expect(wants[0]!.map((w) => w.level)).toEqual([0, 1]);
            continue;
          }
          // Known: one read of the index, holding the position's list, and the page read
          // from the position found (its level-1 bucket's edge: a few rows past the page).
          expect(stats.reads).toBe(1);
          expect(wants[0]!.length).toBeLessThanOrEqual(1 + (cursor === undefined ? 0 : 1) + 3);
          const pageRead = source.reads.at(-1)!;
          expect(pageRead.limit).toBeLessThanOrEqual(20 + 2 + SMALL_BUCKET);
          expect(source.reads.length).toBe(cursor === undefined ? 1 : 2);
        }
      }
    }
  });

  it('gives the model\'s slice where ranks are random and the first read brings the lists a shape known here names, whatever that shape, stale or of another index', async () => {
    // Up to 700 keys over 4 level-0 buckets: more than SMALL_BUCKET a bucket, so shapes name lists.
    const many = fc.uniqueArray(fc.integer({ min: 0, max: 2 ** 50 - 1 }), { minLength: 1, maxLength: 700, size: 'max' });
    // Runs whose first read named lists from the shape (beyond level 0's and the cursor's).
    let shaped = 0;
    await fc.assert(
      fc.asyncProperty(many, fc.option(many), fc.boolean(), fc.integer({ min: 1, max: 30 }), fc.nat(800), fc.option(fc.nat()), async (keys, earlier, backward, size, offset, cursorAt) => {
        const cache = new RankCache(0);
        let cursorPrefix: bigint | undefined;
        const indexOf = (held: readonly number[]) =>
          rankedIndex({
            order: { ...numberOrder, random: true },
            buckets: async (level, parent) => bucketsOf(held, level, parent),
            top: async (limit) => ({ lists: topOf(held, limit), settlement: String(held.length) }),
            several: async (wanted) => {
              if (wanted.length > (wanted.some((w) => w.level === 1 && w.parent === cursorPrefix) ? 2 : 1)) shaped++;
              return { lists: wanted.map((w) => ({ ...w, buckets: bucketsOf(held, w.level, w.parent) })), whole: 0, settlement: String(held.length) };
            },
            cached: { cache, id: 'numbers', inTop: true, settlement: async () => String(held.length) },
          });
        // The shape this process knows: from an earlier state of the index (another set of keys), or from this one.
        const known = new ArraySource(earlier ?? keys);
        await pageFromSource(known, { first: 1, offset: 1 }, { connectionName: 'numbers', codec, index: indexOf(known.all) });
        const source = new ArraySource(keys);
        const cursor = cursorAt === null ? undefined : source.all[cursorAt % source.all.length]!;
        cursorPrefix = cursor === undefined ? undefined : BigInt(Math.floor(cursor / 2 ** 48));
        const encoded = cursor === undefined ? undefined : codec.encodeCursor(source.id, [cursor]);
        const page = await pageFromSource(source, backward ? { last: size, before: encoded, offset } : { first: size, after: encoded, offset }, { connectionName: 'numbers', codec, index: indexOf(source.all) });
        expect({ nodes: page.edges.map((e) => e.node), hasPreviousPage: page.pageInfo.hasPreviousPage, hasNextPage: page.pageInfo.hasNextPage }).toEqual(
          modelOffsetPage(source.all, byNumber, backward ? 'backward' : 'forward', size, offset, cursor),
        );
      }),
      { numRuns: 150 },
    );
    // The shape path must run, not merely may: about 40 of the 150 runs take it (29 to 57 over
    // 15 seeds, a standard deviation near 7), so more than 10 fails only when it is not taken.
    expect(shaped).toBeGreaterThan(10);
  });

  it('ranks a cursor at its `cursorLevel` with the lists above it from the top, and reads the page from a cursor in 2 waves at a steady rate', async () => {
    // 40,000 keys 2^15 apart: level 3's buckets hold 512, level 4's 2; the top holds levels 0 to 3.
    const source = new ArraySource(Array.from({ length: 40_000 }, (_, i) => i * 2 ** 15 + (i % 3)));
    const middle = source.all[20_000]!;
    for (const backward of [false, true]) {
      for (const offset of [3_000, 9_000]) {
        const stats = { reads: 0, sourceReadsByLastList: 0 };
        const index = rankedIndex({
          order: { ...numberOrder, cursorLevel: 4 },
          async buckets(level, parent) {
            stats.reads++;
            await null;
            stats.sourceReadsByLastList = source.reads.length;
            return bucketsOf(source.all, level, parent);
          },
          async top(limit) {
            stats.reads++;
            return { lists: topOf(source.all, limit) };
          },
        });
        source.reads.length = 0;
        const after = codec.encodeCursor(source.id, [middle]);
        const page = await pageFromSource(source, backward ? { last: 20, before: after, offset } : { first: 20, after, offset }, { connectionName: 'numbers', codec, index });
        expect({ nodes: page.edges.map((e) => e.node), hasPreviousPage: page.pageInfo.hasPreviousPage, hasNextPage: page.pageInfo.hasNextPage }).toEqual(
          modelOffsetPage(source.all, byNumber, backward ? 'backward' : 'forward', 20, offset, middle),
        );
        // The top, the cursor's level-4 list and its level-4 bucket's edges up to it; then
        // the position's level-4 list beside the guessed page: no list of levels 1 to 3 read.
        expect(stats.reads).toBe(3);
        expect(source.reads.length).toBe(2);
        expect(stats.sourceReadsByLastList).toBe(2);
      }
    }
  });

  it('from a cursor, in a process that knows nothing of the index, reads its lists and the next bucket\'s below level 1 in one read, beside the edges up to the cursor, then the page', async () => {
    // 40,000 keys 2^15 apart: level 3's buckets hold 512, level 4's 2; the position lies
    // in the cursor's level-3 bucket or the next (the cursor is its 33rd of 512).
    const source = new ArraySource(Array.from({ length: 40_000 }, (_, i) => i * 2 ** 15 + (i % 3)));
    const middle = source.all[20_000]!;
    for (const backward of [false, true]) {
      for (const offset of [100, 500]) {
        const stats = { several: [] as RankListName[][], buckets: 0, top: 0 };
        const cache = new RankCache(0);
        const index = rankedIndex({
          order: { ...numberOrder, cursorLevel: 4 },
          several: async (wanted) => {
            stats.several.push([...wanted]);
            return { lists: wanted.map((w) => ({ ...w, buckets: bucketsOf(source.all, w.level, w.parent) })), whole: 0, settlement: 's' };
          },
          buckets: async (level, parent) => {
            stats.buckets++;
            return bucketsOf(source.all, level, parent);
          },
          top: async (limit) => {
            stats.top++;
            return { lists: topOf(source.all, limit), settlement: 's' };
          },
          cached: { cache, id: 'numbers', inTop: true, settlement: async () => 's' },
        });
        source.reads.length = 0;
        const cursor = codec.encodeCursor(source.id, [middle]);
        const page = await pageFromSource(source, backward ? { last: 20, before: cursor, offset } : { first: 20, after: cursor, offset }, { connectionName: 'numbers', codec, index });
        expect({ nodes: page.edges.map((e) => e.node), hasPreviousPage: page.pageInfo.hasPreviousPage, hasNextPage: page.pageInfo.hasNextPage }).toEqual(
          modelOffsetPage(source.all, byNumber, backward ? 'backward' : 'forward', 20, offset, middle),
        );
        // Level 0's list, the cursor's lists of levels 1 to 4, and the next bucket's of
        // levels 2 to 4, in one read; the edges of the cursor's level-4 bucket up to it;
        // the page. No top, no list read on its own, and no shape learned from them.
        const prefixes = rankPrefixes(BigInt(middle));
        const step = backward ? -1n : 1n;
        expect(stats).toEqual({
          several: [
            [
              { level: 0, parent: undefined },
              ...[1, 2, 3, 4].map((level) => ({ level, parent: prefixes[level - 1] })),
              // (None before bucket 0.)
              ...[2, 3, 4].map((level) => ({ level, parent: prefixes[level - 1]! + step })).filter((l) => l.parent >= 0n),
            ],
          ],
          buckets: 0,
          top: 0,
        });
        expect(source.reads.length).toBe(2);
        expect(cache.shape('numbers')).toBeUndefined();
      }
    }
  });

  it('where edges last, places a cursor by its lists alone where one of its buckets from level 1 holds it alone, reading its bucket\'s edges only where none does, and gives the model\'s slice', async () => {
    // Keys near one another (sharing every bucket down to a leaf or two) and far apart
    // (each alone in its level-1 bucket of 2^40 ranks): both ways of placing a cursor.
    const spread = fc.oneof(key, fc.integer({ min: 0, max: 2 ** 53 - 1 }));
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(spread, { minLength: 1, maxLength: 80 }),
        fc.nat(),
        fc.boolean(),
        fc.integer({ min: 0, max: 9 }),
        fc.integer({ min: 0, max: 90 }),
        fc.boolean(),
        async (keys, at, backward, size, offset, shaped) => {
          const source = new UntilSource(keys);
          const cursor = source.all[at % source.all.length]!;
          // Nothing kept across pages; with `shaped`, the index's shape known from a page before.
          const cache = new RankCache(0);
          const index = () =>
            rankedIndex({
              order: { ...numberOrder, random: true },
              lasting: true,
              buckets: async (level, parent) => bucketsOf(source.all, level, parent),
              top: async (limit) => ({ lists: topOf(source.all, limit), settlement: 'one' }),
              several: async (wanted) => ({ lists: wanted.map((w) => ({ ...w, buckets: bucketsOf(source.all, w.level, w.parent) })), whole: 0, settlement: 'one' }),
              cached: { cache, id: 'numbers', inTop: true, settlement: async () => 'one' },
            });
          if (shaped) await pageFromSource(source, { first: 1, offset: 1 }, { connectionName: 'numbers', codec, index: index() });
          source.untils = 0;
          const encoded = codec.encodeCursor(source.id, [cursor]);
          const page = await pageFromSource(source, backward ? { last: size, before: encoded, offset } : { first: size, after: encoded, offset }, { connectionName: 'numbers', codec, index: index() });
          expect({ nodes: page.edges.map((e) => e.node), hasPreviousPage: page.pageInfo.hasPreviousPage, hasNextPage: page.pageInfo.hasNextPage }).toEqual(
            modelOffsetPage(source.all, byNumber, backward ? 'backward' : 'forward', size, offset, cursor),
          );
          // Alone in its bucket at level 1, or at level 2 where no shape is known (the lists a
          // first read names then; with a shape, as deep as it makes a bucket likely to hold
          // one edge): no edge read up to it. (Without an offset, a page is read from its
          // cursor and no index is asked.)
          const prefixes = rankPrefixes(BigInt(cursor));
          const aloneAt = (level: number) => source.all.filter((k) => rankPrefixes(BigInt(k))[level] === prefixes[level]).length === 1;
          if (aloneAt(1) || (!shaped && aloneAt(2)) || offset === 0) expect(source.untils).toBe(0);
          // Sharing its leaf, it is placed among its bucket's edges.
          else if (!aloneAt(RANK_LEVEL_SHIFTS.length - 1)) expect(source.untils).toBeGreaterThan(0);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('ranks a cursor whose level-1 bucket holds more than SMALL_BUCKET edges before it through the levels below, where ranks are random', async () => {
    // 300 keys in one level-1 bucket (2^40 ranks), 4 a leaf, and a few in the next.
    const source = new ArraySource([...Array.from({ length: 300 }, (_, i) => i * 64), ...Array.from({ length: 30 }, (_, i) => 2 ** 40 + i)]);
    for (const at of [10, 200, 299, 305]) {
      for (const backward of [false, true]) {
        const { index } = indexOver(source, true, true);
        source.reads.length = 0;
        const cursor = source.all[at]!;
        const encoded = codec.encodeCursor(source.id, [cursor]);
        const page = await pageFromSource(source, backward ? { last: 5, before: encoded, offset: 7 } : { first: 5, after: encoded, offset: 7 }, { connectionName: 'numbers', codec, index });
        expect({ nodes: page.edges.map((e) => e.node), hasPreviousPage: page.pageInfo.hasPreviousPage, hasNextPage: page.pageInfo.hasNextPage }).toEqual(
          modelOffsetPage(source.all, byNumber, backward ? 'backward' : 'forward', 5, 7, cursor),
        );
        // Past SMALL_BUCKET edges before the cursor in its level-1 bucket (at 200 forward, at
        // 10 backward), its edges from that bucket's edge were read as far as 65 and no further.
        const fromBucketEdge = source.reads.filter((r) => r.from?.[0] === (cursor < 2 ** 40 ? (backward ? 2 ** 40 - 1 : 0) : backward ? 2 ** 41 - 1 : 2 ** 40));
        expect(fromBucketEdge.map((r) => r.limit).reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(16 + 50);
      }
    }
  });

  it('gives the model\'s slice after every settlement with bucket lists kept across pages', async () => {
    const change = fc.oneof(fc.record({ insert: key }), fc.record({ remove: fc.nat() }));
    const page = fc.record({ backward: fc.boolean(), size: fc.integer({ min: 1, max: 9 }), offset: fc.integer({ min: 1, max: 50 }), cursorAt: fc.option(fc.nat()), wait: fc.boolean() });
    // Rounds of changes, each settled, then read: the first pages of a round meet lists kept
    // under the settlement before. A settlement `within` a page lands between that page's
    // first reads and its read of the settlement: only the pages after it must be exact.
    const round = fc.record({ changes: fc.array(change, { minLength: 1, maxLength: 6 }), within: fc.boolean(), pages: fc.array(page, { minLength: 1, maxLength: 4 }) });
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(key, { minLength: 1, maxLength: 60 }), fc.array(round, { minLength: 1, maxLength: 6 }), fc.boolean(), fc.integer({ min: 1, max: 400 }), fc.nat(4), fc.boolean(), fc.boolean(), fc.boolean(), async (keys, rounds, slow, rows, lag, inTop, random, several) => {
        const source = new ArraySource(keys);
        const settled = new SettledIndex(source, new RankCache(rows), slow, lag, inTop, random, several);
        for (const r of [{ changes: [], within: false, pages: rounds[0]!.pages }, ...rounds]) {
          for (const c of r.changes) {
            if ('insert' in c) source.insert(c.insert);
            else if (source.all.length > 0) source.remove(source.all[c.remove % source.all.length]!);
          }
          const pages = [...r.pages];
          if (r.within) {
            settled.settleWithin = true;
            pages.unshift({ ...pages[0]!, wait: false });
          } else settled.settle();
          for (const [i, q] of pages.entries()) {
            // Let settlement reads still out land first (or not).
            if (q.wait) await new Promise((resolve) => setTimeout(resolve, 0));
            const cursor = q.cursorAt === null || source.all.length === 0 ? undefined : source.all[q.cursorAt % source.all.length]!;
            const encoded = cursor === undefined ? undefined : codec.encodeCursor(source.id, [cursor]);
            const got = await pageFromSource(
              source,
              q.backward ? { last: q.size, before: encoded, offset: q.offset } : { first: q.size, after: encoded, offset: q.offset },
              { connectionName: 'numbers', codec, index: settled.page() },
            );
            if (r.within && i === 0) continue;
            expect({ nodes: got.edges.map((e) => e.node), hasPreviousPage: got.pageInfo.hasPreviousPage, hasNextPage: got.pageInfo.hasNextPage }).toEqual(
              modelOffsetPage(source.all, byNumber, q.backward ? 'backward' : 'forward', q.size, q.offset, cursor),
            );
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('reads only the settlement and the page once every bucket list it needs is kept, and reads them again once it moves', async () => {
    for (const slow of [false, true]) {
      const source = new ArraySource(Array.from({ length: 20_000 }, (_, i) => i * 97));
      const settled = new SettledIndex(source, new RankCache(), slow);
      const read = async (offset: number) => {
        // A late settlement read lands before the next page.
        await new Promise((resolve) => setTimeout(resolve, 1));
        settled.stats.buckets = 0;
        source.reads.length = 0;
        const page = await pageFromSource(source, { first: 20, offset }, { connectionName: 'numbers', codec, index: settled.page() });
        return { nodes: page.edges.map((e) => e.node), buckets: settled.stats.buckets, pageReads: source.reads.length };
      };
      // The index's top (levels 0 to 4 whole: 20,000 keys of ranks below 2^21, and the
      // first 7 of the 30 leaf lists), then the leaves' list under the position: two
      // reads. A page keeps the lists it reads once the settlement is known here: those
      // read after its own read of it, and those read alongside, once that read confirms
      // the one known. Answered at once, the settlement is known after the top's read;
      // answered late, only after the first page, and the second keeps what it reads
      // alongside.
      for (const expected of slow ? [2, 2] : [2, 1]) {
        const page = await read(15_000);
        expect(page).toEqual({ nodes: source.all.slice(15_000, 15_020), buckets: expected, pageReads: 1 });
      }
      expect(await read(15_000)).toEqual({ nodes: source.all.slice(15_000, 15_020), buckets: 0, pageReads: 1 });
      // A settlement that moved the buckets: found again from them, not from the lists kept.
      source.remove(source.all[10]!);
      source.insert(1);
      source.insert(3);
      settled.settle();
      const again = await read(15_000);
      expect(again.nodes).toEqual(source.all.slice(15_000, 15_020));
      expect(again.buckets).toBe(2);
      expect(await read(15_000)).toMatchObject({ nodes: source.all.slice(15_000, 15_020) });
      expect(await read(15_000)).toMatchObject({ nodes: source.all.slice(15_000, 15_020), buckets: 0 });
    }
  });

  it('reads the settlement with the top where the top brings it, and only the settlement and the page once every list is kept', async () => {
    const source = new ArraySource(Array.from({ length: 20_000 }, (_, i) => i * 97));
    const settled = new SettledIndex(source, new RankCache(), false, 0, true);
    const read = async (offset: number) => {
      settled.stats.buckets = 0;
      settled.stats.settlements = 0;
      source.reads.length = 0;
      const page = await pageFromSource(source, { first: 20, offset }, { connectionName: 'numbers', codec, index: settled.page() });
      return { nodes: page.edges.map((e) => e.node), buckets: settled.stats.buckets, settlements: settled.stats.settlements, pageReads: source.reads.length };
    };
    // A first visit: the top (and the settlement in it), then the list under the position; both kept.
    expect(await read(15_000)).toEqual({ nodes: source.all.slice(15_000, 15_020), buckets: 2, settlements: 0, pageReads: 1 });
    expect(await read(15_000)).toEqual({ nodes: source.all.slice(15_000, 15_020), buckets: 0, settlements: 1, pageReads: 1 });
    // A settlement that moved the lists: found again from the store (the top and the list), then kept again.
    source.remove(source.all[10]!);
    source.insert(1);
    settled.settle();
    expect(await read(15_000)).toMatchObject({ nodes: source.all.slice(15_000, 15_020), buckets: 2 });
    expect(await read(15_000)).toMatchObject({ nodes: source.all.slice(15_000, 15_020), buckets: 0, settlements: 1 });
  });

  it('fails a page on a failed read of the settlement only when it used kept lists, and never leaves the failure unhandled', async () => {
    const source = new ArraySource(Array.from({ length: 500 }, (_, i) => i * 97));
    const cache = new RankCache();
    let fail = false;
    const index = () =>
      rankedIndex({
        order: numberOrder,
        buckets: async (level, parent) => bucketsOf(source.all, level, parent),
        cached: { cache, id: 'numbers', settlement: async () => (fail ? Promise.reject(new Error('head unreachable')) : '1') },
      });
    const page = () => pageFromSource(source, { first: 5, offset: 300 }, { connectionName: 'numbers', codec, index: index() });
    // Nothing kept: the page does not need the settlement.
    fail = true;
    expect((await page()).edges.map((e) => e.node)).toEqual(source.all.slice(300, 305));
    fail = false;
    await page();
    await page();
    // Kept lists, unconfirmed: the page fails with the read.
    fail = true;
    await expect(page()).rejects.toThrow('head unreachable');
  });

  it('keeps no list heavier than the whole cache, and pushes none out for it', () => {
    const cache = new RankCache(10);
    const light = bucketList([{ prefix: 1n, count: 3 }]);
    const heavy = bucketList(Array.from({ length: 10 }, (_, i) => ({ prefix: BigInt(i), count: 1 })));
    cache.put('numbers', '1', 1, 0n, light);
    cache.put('numbers', '1', 1, 1n, heavy);
    expect([cache.get('numbers', '1', 1, 0n), cache.get('numbers', '1', 1, 1n)]).toEqual([light, undefined]);
    // A heavy list put where a lighter one was kept replaces it: the old one is gone too.
    cache.put('numbers', '2', 1, 0n, heavy);
    expect(cache.get('numbers', '1', 1, 0n)).toBeUndefined();
    // A cache of no rows holds nothing.
    const none = new RankCache(0);
    none.put('numbers', '1', 0, undefined, light);
    expect(none.get('numbers', '1', 0, undefined)).toBeUndefined();
  });

  it('refuses a negative offset, naming it, before reading anything', async () => {
    const source = new ArraySource([1, 2, 3]);
    await expect(pageFromSource(source, { first: 2, offset: -1 }, { connectionName: 'numbers', codec })).rejects.toMatchObject(
      new PagingArgumentError('offset', '`offset` must be 0 or more, got -1'),
    );
    expect(source.reads).toEqual([]);
  });
});
