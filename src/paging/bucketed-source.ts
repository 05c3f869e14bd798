/**
 * An ordered source over a sequence of partitions (time buckets, seed 000): the
 * buckets come from a registry in connection order, and each bucket is read like a
 * single partition. The cursor key is the bucket followed by the row's key inside it,
 * so paging is seamless across bucket boundaries.
 *
 * A read takes what the page needs, in a bounded number of waves of concurrent store
 * calls whatever the number of buckets (each wave costs one round trip of latency):
 * 1. the registry from the cursor's bucket on, with a limit of one bucket per row asked
 *    for (each non-empty bucket gives at least one row), and, with a cursor, the
 *    cursor's own bucket from the cursor, side by side;
 * 2. without a cursor, the first bucket, with the full limit (a big bucket ends it here);
 * 3. if still short, the next buckets at once, one per missing row, each with the
 *    missing count as its limit, and the registry's next slice beside them if the first
 *    one may have been cut short. A wave that comes back short (emptied buckets not yet
 *    pruned) is followed by one twice as wide, so even a registry full of empty buckets
 *    costs a logarithmic number of waves.
 * Rows are taken in bucket order and cut at the limit, so the result is exactly what a
 * bucket-by-bucket walk would give.
 */
import type { CursorKey, CursorKeyPart, Direction, OrderedSource } from './types.js';

/** Options of `bucketedSource`. */
export interface BucketedSourceOptions<N> {
  readonly id: string;
  /**
   * Up to `limit` buckets from `from` (inclusive; from the start when undefined), in
   * connection order, or its reverse for `backward`. One round trip.
   */
  listBuckets(from: string | undefined, direction: Direction, limit: number): Promise<string[]>;
  /** Order of two buckets in the connection. */
  compareBuckets(a: string, b: string): number;
  /** The source reading one bucket (its `id` is unused). */
  bucketSource(bucket: string): Omit<OrderedSource<N>, 'id'>;
  /** The bucket a node was read from. */
  bucketOf(node: N): string;
}

/** Widest wave of bucket reads (a wave doubles while buckets come back empty). */
const MAX_WAVE = 256;

/** A connection over registered buckets, each one partition. */
export function bucketedSource<N>(options: BucketedSourceOptions<N>): OrderedSource<N> {
  // Comparing and validating keys needs a bucket's source only for its key rules, which
  // are the same in every bucket: one source, made on first use, serves every edge's
  // cursor (a 50-edge page made one source per edge for its key).
  let keyRules: Omit<OrderedSource<N>, 'id'> | undefined;
  const anyBucket = () => (keyRules ??= options.bucketSource(''));
  const readBucket = (bucket: string, from: CursorKey | undefined, direction: Direction, limit: number, until?: CursorKey) =>
    options.bucketSource(bucket).read(from, direction, limit, until);

  return {
    id: options.id,
    async read(from: CursorKey | undefined, direction: Direction, limit: number, until?: CursorKey): Promise<N[]> {
      if (limit <= 0) return [];
      const fromBucket = from ? (from[0] as string) : undefined;
      // Rows wanted only up to a key of the cursor's own bucket: that bucket alone, up to
      // it, without the registry.
      if (fromBucket !== undefined && until?.[0] === fromBucket) return readBucket(fromBucket, from!.slice(1), direction, limit, until.slice(1));
      // The registry is read in slices, each twice the last (one bucket per row asked
      // for, at first); `listedAll` once a slice came back short.
      let listLimit = Math.min(limit + 1, MAX_WAVE);
      const listAfter = async (bucket: string | undefined): Promise<string[]> => {
        const asked = listLimit + (bucket === undefined ? 0 : 1);
        listLimit = Math.min(MAX_WAVE, listLimit * 2);
        const listed = await options.listBuckets(bucket, direction, asked);
        listedAll = listed.length < asked;
        return bucket === undefined ? listed : listed.filter((b) => b !== bucket);
      };
      let listedAll = false;
      const out: N[] = [];
      let queue: string[];
      if (from) {
        // Wave 1: the cursor's own bucket (it may have been pruned since: still read it)
        // beside the registry from there on.
        const [own, listed] = await Promise.all([readBucket(fromBucket!, from.slice(1), direction, limit), listAfter(fromBucket)]);
        out.push(...own);
        queue = listed;
      } else {
        // Wave 1: the registry; wave 2: the first bucket, with the full limit.
        queue = await listAfter(undefined);
        const first = queue.shift();
        if (first === undefined) return out;
        out.push(...(await readBucket(first, undefined, direction, limit)));
      }
      let width = limit - out.length;
      while (out.length < limit && (queue.length > 0 || !listedAll)) {
        const missing = limit - out.length;
        const wave = queue.splice(0, Math.min(width, MAX_WAVE));
        const last = wave[wave.length - 1];
        // The registry's next slice travels with the wave when the queue runs dry.
        const more = queue.length === 0 && !listedAll && last !== undefined ? listAfter(last) : Promise.resolve(null);
        const [rows, next] = await Promise.all([Promise.all(wave.map((b) => readBucket(b, undefined, direction, missing))), more]);
        for (const r of rows) out.push(...r);
        if (next) queue.push(...next);
        else if (wave.length === 0) break;
        width = Math.min(MAX_WAVE, width * 2);
      }
      return out.slice(0, limit);
    },
    // The bucket in front of the row's key, in one array of its length (a spread made an
    // iterator and grew the array: 50 times a page, for its cursors).
    keyOf(node: N): CursorKey {
      const inner = anyBucket().keyOf(node);
      const key = new Array<CursorKeyPart>(inner.length + 1);
      key[0] = options.bucketOf(node);
      for (let i = 0; i < inner.length; i++) key[i + 1] = inner[i]!;
      return key;
    },
    compare(a: CursorKey, b: CursorKey): number {
      const byBucket = options.compareBuckets(a[0] as string, b[0] as string);
      return byBucket !== 0 ? byBucket : anyBucket().compare(a.slice(1), b.slice(1));
    },
    isKey: (key: CursorKey) => typeof key[0] === 'string' && key[0].length <= 64 && anyBucket().isKey(key.slice(1)),
  };
}
