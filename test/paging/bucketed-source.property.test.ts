/**
 * The bucketed source reads in waves (paging/bucketed-source.ts): its rows must be
 * exactly those of a walk over the buckets one by one, from any cursor (even one whose
 * bucket has been pruned since), in both directions, with empty buckets left in the
 * registry; and it must need at most three waves of reads when no registered bucket is
 * empty, whatever the number of buckets.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucketedSource } from '../../src/paging/bucketed-source.js';
import type { CursorKey, Direction } from '../../src/paging/types.js';
import { ArraySource } from '../support/array-source.js';

type Node = { readonly bucket: string; readonly key: number };

const bucketName = (i: number) => `b${String(i).padStart(3, '0')}`;

/** Counts waves of overlapping calls, as the benchmarks count round trips. */
function waveCounter() {
  let inFlight = 0;
  const counter = {
    waves: 0,
    calls: 0,
    async track<T>(work: () => Promise<T>): Promise<T> {
      if (inFlight === 0) counter.waves++;
      counter.calls++;
      inFlight++;
      try {
        // A real store answers later: the calls of one wave overlap.
        await new Promise((resolve) => setImmediate(resolve));
        return await work();
      } finally {
        inFlight--;
      }
    },
  };
  return counter;
}

function sourceOver(contents: ReadonlyMap<string, readonly number[]>, registered: readonly string[]) {
  const counter = waveCounter();
  const sorted = [...registered].sort();
  const source = bucketedSource<Node>({
    id: 'test:buckets',
    listBuckets: (from, direction, limit) =>
      counter.track(async () => {
        const ordered = direction === 'forward' ? sorted : [...sorted].reverse();
        return ordered.filter((b) => from === undefined || (direction === 'forward' ? b >= from : b <= from)).slice(0, limit);
      }),
    compareBuckets: (a, b) => (a < b ? -1 : a > b ? 1 : 0),
    bucketSource: (bucket) => {
      const inner = new ArraySource(contents.get(bucket) ?? []);
      return {
        read: (from, direction, limit) => counter.track(async () => (await inner.read(from, direction, limit)).map((key) => ({ bucket, key }))),
        keyOf: (n: Node) => [n.key],
        compare: (a, b) => inner.compare(a, b),
        isKey: (k) => inner.isKey(k),
      };
    },
    bucketOf: (n) => n.bucket,
  });
  return { source, counter };
}

/** What a walk over every bucket, one by one, gives. */
function walk(contents: ReadonlyMap<string, readonly number[]>, from: CursorKey | undefined, direction: Direction, limit: number): Node[] {
  const all = [...contents.keys()]
    .sort()
    .flatMap((bucket) => [...new Set(contents.get(bucket))].sort((a, b) => a - b).map((key) => ({ bucket, key })));
  const cmp = (n: Node) => (from === undefined ? 0 : n.bucket < (from[0] as string) ? -1 : n.bucket > (from[0] as string) ? 1 : n.key - (from[1] as number));
  const kept = all.filter((n) => (direction === 'forward' ? cmp(n) >= 0 : cmp(n) <= 0));
  return (direction === 'forward' ? kept : kept.reverse()).slice(0, limit);
}

const world = fc.array(fc.array(fc.integer({ min: 0, max: 9 }), { maxLength: 4 }), { minLength: 1, maxLength: 60 });

describe('a bucketed source read in waves', () => {
  it('gives exactly the rows of a bucket-by-bucket walk, with empty and pruned buckets', async () => {
    await fc.assert(
      fc.asyncProperty(
        world,
        fc.array(fc.boolean(), { maxLength: 60 }),
        fc.option(fc.tuple(fc.nat(59), fc.integer({ min: 0, max: 9 })), { nil: undefined }),
        fc.constantFrom<Direction>('forward', 'backward'),
        fc.integer({ min: 1, max: 40 }),
        async (buckets, keepEmpty, cursor, direction, limit) => {
          const contents = new Map(buckets.map((keys, i) => [bucketName(i), keys] as const));
          // Non-empty buckets are registered; an empty one maybe (not pruned yet), maybe not.
          const registered = [...contents.keys()].filter((b, i) => contents.get(b)!.length > 0 || keepEmpty[i]);
          const from: CursorKey | undefined = cursor && [bucketName(cursor[0]), cursor[1]];
          const { source } = sourceOver(contents, registered);
          expect(await source.read(from, direction, limit)).toEqual(walk(contents, from, direction, limit));
        },
      ),
      { seed: 15_2026, numRuns: 300 },
    );
  });

  it('reads a first page in at most three waves when no registered bucket is empty, whatever the number of buckets', async () => {
    for (const count of [1, 2, 50, 500]) {
      const contents = new Map(Array.from({ length: count }, (_, i) => [bucketName(i), [1]] as const));
      for (const limit of [1, 21, 101]) {
        const { source, counter } = sourceOver(contents, [...contents.keys()]);
        const rows = await source.read(undefined, 'forward', limit);
        expect(rows.length).toBe(Math.min(limit, count));
        expect(counter.waves, `${count} buckets, limit ${limit}`).toBeLessThanOrEqual(count === 1 ? 2 : 3);
      }
    }
  });

  it('reads a page after a cursor in at most two waves when no registered bucket is empty', async () => {
    const contents = new Map(Array.from({ length: 200 }, (_, i) => [bucketName(i), [1, 2]] as const));
    const { source, counter } = sourceOver(contents, [...contents.keys()]);
    const rows = await source.read([bucketName(100), 2], 'backward', 22);
    expect(rows).toEqual(walk(contents, [bucketName(100), 2], 'backward', 22));
    expect(counter.waves).toBe(2);
  });

  it("reads only the cursor's bucket, without the registry, for rows wanted up to a key in it (`until`), and those rows are the walk's", async () => {
    const contents = new Map(Array.from({ length: 20 }, (_, i) => [bucketName(i), [1, 2, 3]] as const));
    for (const direction of ['forward', 'backward'] as const) {
      const from: CursorKey = [bucketName(7), direction === 'forward' ? 1 : 3];
      const upToTwo = (n: Node) => n.bucket === bucketName(7) && (direction === 'forward' ? n.key <= 2 : n.key >= 2);
      const { source, counter } = sourceOver(contents, [...contents.keys()]);
      const rows = await source.read(from, direction, 16, [bucketName(7), 2]);
      expect(rows.filter(upToTwo)).toEqual(walk(contents, from, direction, 16).filter(upToTwo));
      expect(rows.filter((n) => !upToTwo(n)).every((n) => n.bucket === bucketName(7))).toBe(true);
      expect(counter.calls).toBe(1);
      // Up to a key of a later bucket: the registry too, as any read from a cursor.
      const further = sourceOver(contents, [...contents.keys()]);
      const until: CursorKey = [bucketName(direction === 'forward' ? 9 : 5), 2];
      expect(await further.source.read(from, direction, 16, until)).toEqual(walk(contents, from, direction, 16));
      expect(further.counter.calls).toBeGreaterThan(1);
    }
  });

  it('crosses a registry full of empty buckets in a number of waves that grows with its logarithm', async () => {
    const contents = new Map(Array.from({ length: 2_000 }, (_, i) => [bucketName(i), i === 1_999 ? [5] : []] as const));
    const { source, counter } = sourceOver(contents, [...contents.keys()]);
    expect(await source.read(undefined, 'forward', 21)).toEqual([{ bucket: bucketName(1_999), key: 5 }]);
    expect(counter.waves).toBeLessThanOrEqual(14);
  });
});
