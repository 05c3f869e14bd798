/**
 * A store whose batches leave out the change log's rows (and turns nothing else off):
 * what a write costs without live connections, to price the change log on the write
 * path (`npm run bench:live`, `npm run bench:cassandra`).
 */
import { liveTables } from '../src/live/change-log-tables.js';
import type { Mutation } from '../src/store/port.js';
import { StoreDecorator, type StoreCall } from '../src/store/store-decorator.js';

/** The store given, its batches without the change log's mutations. */
export class WithoutChangeLog extends StoreDecorator {
  private readonly log = new Set(liveTables.map((t) => t.name));
  protected around<T>(_call: StoreCall, run: () => Promise<T>): Promise<T> {
    return run();
  }
  override batch(mutations: readonly Mutation[]): Promise<void> {
    return super.batch(mutations.filter((m) => !this.log.has(m.table.name)));
  }
}

/**
 * The partition key value a mutation writes, as Cassandra groups a logged batch's
 * mutations (one per keyspace and serialized key, whatever the table: what a batch
 * costs grows with their number): the key columns' types and values, not their names.
 */
export function partitionKeyValue(m: Mutation): string {
  const row = m.kind === 'upsert' ? m.row : m.kind === 'delete' ? m.key : m.partition;
  return JSON.stringify(m.table.partitionKey.map((c) => [m.table.columns[c], String(row[c])]));
}

/** A store that keeps every batch it passes on: to count the partitions a write's batch touches. */
export class BatchRecorder extends StoreDecorator {
  readonly batches: Mutation[][] = [];
  protected around<T>(_call: StoreCall, run: () => Promise<T>): Promise<T> {
    return run();
  }
  override batch(mutations: readonly Mutation[]): Promise<void> {
    this.batches.push([...mutations]);
    return super.batch(mutations);
  }
}
