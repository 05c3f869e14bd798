/**
 * An ordered source over a sequence of partitions (time buckets, seed 000): the
 * buckets come from a registry in connection order, and each bucket is read like a
 * single partition. The cursor key is the bucket followed by the row's key inside it,
 * so paging is seamless across bucket boundaries.
 */
import type { CursorKey, Direction, OrderedSource } from './types.js';

/** Options of `bucketedSource`. */
export interface BucketedSourceOptions<N> {
  readonly id: string;
  /**
   * The buckets from `from` (inclusive; all when undefined) in `direction`, in
   * connection order (or its reverse for `backward`). One round trip.
   */
  listBuckets(from: string | undefined, direction: Direction): Promise<string[]>;
  /** Order of two buckets in the connection. */
  compareBuckets(a: string, b: string): number;
  /** The source reading one bucket (its `id` is unused). */
  bucketSource(bucket: string): Omit<OrderedSource<N>, 'id'>;
  /** The bucket a node was read from. */
  bucketOf(node: N): string;
}

/** A connection over registered buckets, each one partition. */
export function bucketedSource<N>(options: BucketedSourceOptions<N>): OrderedSource<N> {
  // Comparing and validating keys needs a bucket's source only for its key rules, which
  // are the same in every bucket.
  const anyBucket = () => options.bucketSource('');
  return {
    id: options.id,
    async read(from: CursorKey | undefined, direction: Direction, limit: number): Promise<N[]> {
      const fromBucket = from ? (from[0] as string) : undefined;
      const buckets = await options.listBuckets(fromBucket, direction);
      const out: N[] = [];
      for (const bucket of buckets) {
        if (out.length >= limit) break;
        // Only the cursor's own bucket starts at the cursor; later ones start at their edge.
        const inner = from && bucket === fromBucket ? from.slice(1) : undefined;
        out.push(...(await options.bucketSource(bucket).read(inner, direction, limit - out.length)));
      }
      return out;
    },
    keyOf: (node: N) => [options.bucketOf(node), ...options.bucketSource(options.bucketOf(node)).keyOf(node)],
    compare(a: CursorKey, b: CursorKey): number {
      const byBucket = options.compareBuckets(a[0] as string, b[0] as string);
      return byBucket !== 0 ? byBucket : anyBucket().compare(a.slice(1), b.slice(1));
    },
    isKey: (key: CursorKey) => typeof key[0] === 'string' && key[0].length <= 64 && anyBucket().isKey(key.slice(1)),
  };
}
