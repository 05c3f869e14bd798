/**
 * A registry of buckets that shrinks: the buckets of a bucketed connection (the
 * suspension months, the directory's last-name prefixes) are listed in one partition,
 * and a bucket that has emptied is dropped, so paging never walks a graveyard of empty
 * partitions.
 *
 * Many servers register and prune at once, their clocks up to CLOCK_SKEW_MS apart. A
 * plain delete stamped by one server could hide a plain registration stamped earlier by
 * another (a clock behind), and that bucket's rows would never be listed again. So every
 * write of an entry is a Paxos round: registration is `insertIfNotExists`, pruning is
 * `deleteIf`; Paxos orders them all in one sequence, whatever the clocks say.
 *
 * The protocol:
 * - a writer ensures the entry (w1), writes its row into the bucket (w2), then ensures
 *   the entry again (w3);
 * - a pruner checks the bucket is empty (p1), deletes the entry with `deleteIf` (p2),
 *   re-checks the bucket (p3) and, if a row is there, ensures the entry (p4).
 * "Ensure" reads the entry and registers it with `insertIfNotExists` only if it is
 * missing (a read is cheaper than a Paxos round, and a quorum read that starts after a
 * Paxos delete has returned sees it).
 *
 * Why a non-empty bucket always ends registered: take a row present at the end, written
 * by w2, and the last delete that applied, d (a p2). If w2 completed before the p3 that
 * follows d started, that p3 sees the row and its p4 registers after d. Otherwise w2
 * completed after that p3 started, so after d returned, and the writer's w3 starts
 * later still: it finds the entry (registered after d, since d is the last delete) or
 * registers it. Either way an entry written after the last delete exists. Each step
 * needs only that an operation which starts after another has completed sees its
 * effect (quorum reads and writes, Paxos rounds), never a clock.
 *
 * What must not happen is a delete without its re-check: a pruner that dies (or whose
 * store fails) between p2 and p3. So a prune runs where it is finished even then: as a
 * saga step, which recovery re-runs whole (a re-run registers if the bucket is not
 * empty, whether or not its own delete applied). A prune that fails only leaves an
 * extra entry, which costs paging one empty read.
 *
 * A writer that dies between its row (w2) and w3, while a prune of the same bucket ran
 * in between, leaves its row unregistered: a suspension saga's recovery undoes such a
 * row; a directory update that died there (never acknowledged) stays unlisted by
 * prefixes shorter than two letters until the next write into that bucket registers it.
 *
 * The argument needs what Cassandra's Paxos gives: a round that starts after another
 * on the same row has completed gets a higher ballot, so an insert after a delete is
 * never hidden by it, whatever the clocks of the servers.
 */
import type { Direction } from '../paging/types.js';
import type { ClusteringRange, Store } from '../store/port.js';
import type { Row, TableSpec } from '../store/table.js';

/** Where a registry lives, and how to tell that one of its buckets is empty. */
export interface BucketRegistry {
  /** The registry table: `partition`'s columns, then the bucket as the one clustering column. */
  readonly table: TableSpec;
  /** The registry's partition (one per connection family). */
  readonly partition: Row;
  /** The data partition a bucket names (read with limit 1 to learn whether it is empty). */
  readonly bucketTable: TableSpec;
  bucketPartition(bucket: string): Row;
}

function bucketColumn(registry: BucketRegistry): string {
  return registry.table.clustering[0]!.column;
}

function entryKey(registry: BucketRegistry, bucket: string): Row {
  return { ...registry.partition, [bucketColumn(registry)]: bucket };
}

/**
 * Up to `limit` registered buckets from `from` (inclusive) in `direction` (`forward`
 * is the registry's clustering order), within `range` (a fixed prefix, say). One read.
 */
export async function listRegistered(
  store: Store,
  registry: BucketRegistry,
  from: string | undefined,
  direction: Direction,
  limit: number,
  range: ClusteringRange = {},
): Promise<string[]> {
  const bound = from === undefined ? undefined : { values: [from], inclusive: true };
  const rows = await store.slice(registry.table, {
    partition: registry.partition,
    limit,
    reverse: direction === 'backward',
    lower: direction === 'forward' ? (bound ?? range.lower) : range.lower,
    upper: direction === 'forward' ? range.upper : (bound ?? range.upper),
  });
  return rows.map((r) => r[bucketColumn(registry)] as string);
}

/** Register `bucket` unless it is registered (steps w1, w3 and p4 above). */
export async function ensureRegistered(store: Store, registry: BucketRegistry, bucket: string): Promise<void> {
  const key = entryKey(registry, bucket);
  if ((await store.get(registry.table, key)) === null) await store.insertIfNotExists(registry.table, key);
}

async function bucketIsEmpty(store: Store, registry: BucketRegistry, bucket: string): Promise<boolean> {
  return (await store.slice(registry.bucketTable, { partition: registry.bucketPartition(bucket), limit: 1 })).length === 0;
}

/**
 * Drop `bucket` from the registry if it is empty, safely (p1-p4 above). Idempotent; run
 * it as a saga step so that recovery finishes it after a failure or a crash. Says
 * whether the entry was dropped (`pruned`) or the bucket held rows (`kept`).
 */
export async function pruneIfEmpty(store: Store, registry: BucketRegistry, bucket: string): Promise<'pruned' | 'kept'> {
  if (await bucketIsEmpty(store, registry, bucket)) {
    await store.deleteIf(registry.table, entryKey(registry, bucket));
    if (await bucketIsEmpty(store, registry, bucket)) return 'pruned';
  }
  // Not empty (now, or already at p1 on a re-run whose earlier delete may have applied).
  await ensureRegistered(store, registry, bucket);
  return 'kept';
}

/** A registry prune as a saga step's work: prune, then tell the environment how it went (metrics). */
export async function pruneStep(
  store: Store,
  registry: BucketRegistry,
  bucket: string,
  onPrune: ((registry: string, outcome: 'pruned' | 'kept') => void) | undefined,
): Promise<void> {
  const outcome = await pruneIfEmpty(store, registry, bucket);
  onPrune?.(registry.table.name, outcome);
}
