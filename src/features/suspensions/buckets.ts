/**
 * Time buckets (seed 000: "MM-YYYY or whatever fine-grained precision your data
 * suggests"). Written year first so text order is time order: within one
 * granularity, a later bucket always sorts after an earlier one.
 */

/** How wide a bucket is. Changing it on a store that already holds buckets mixes widths. */
export type BucketGranularity = 'year' | 'month' | 'day';

/** The bucket of an instant, in UTC. */
export function bucketOf(at: Date, granularity: BucketGranularity): string {
  const iso = at.toISOString();
  if (granularity === 'year') return iso.slice(0, 4);
  if (granularity === 'month') return iso.slice(0, 7);
  return iso.slice(0, 10);
}
