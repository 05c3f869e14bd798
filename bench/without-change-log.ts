/**
 * Stores whose batches leave out the change log's rows, or write them in another shape
 * (and turn nothing else off): what a write costs without live connections, or with a
 * leaner change log, to price the change log on the write path (`npm run bench:live`,
 * `npm run bench:cassandra`). The shapes are bench-only switches, not product options.
 */
import { liveChangePointersTable, liveFeedChangesTable, liveTables } from '../src/live/change-log-tables.js';
import { StoreDecorator, type StoreCall } from '../src/store/store-decorator.js';
import type { Mutation, Store } from '../src/store/port.js';
import type { Row } from '../src/store/table.js';

/** What becomes of one of the change log's mutations: its replacement, or null to leave it out. */
export type ChangeLogRewrite = (m: Mutation) => Mutation | null;

/** The store given, its batches with each of the change log's mutations rewritten by `rewrite`. */
export class ChangeLogVariant extends StoreDecorator {
  private readonly log = new Set(liveTables.map((t) => t.name));
  constructor(
    inner: Store,
    private readonly rewrite: ChangeLogRewrite,
  ) {
    super(inner);
  }
  protected around<T>(_call: StoreCall, run: () => Promise<T>): Promise<T> {
    return run();
  }
  override batch(mutations: readonly Mutation[]): Promise<void> {
    const kept: Mutation[] = [];
    for (const m of mutations) {
      const out = this.log.has(m.table.name) ? this.rewrite(m) : m;
      if (out) kept.push(out);
    }
    return super.batch(kept);
  }
}

/** The store given, its batches without the change log's mutations. */
export class WithoutChangeLog extends ChangeLogVariant {
  constructor(inner: Store) {
    super(inner, () => null);
  }
}

/** An upsert of the feed's row (`live_feed_changes`), its row changed by `f`; any other mutation as it is. */
function feedRow(f: (row: Row) => Row): ChangeLogRewrite {
  return (m) => (m.kind === 'upsert' && m.table === liveFeedChangesTable ? { ...m, row: f({ ...m.row }) } : m);
}

/**
 * The change log's shapes `bench:cassandra` can set beside it (`BENCH_CHANGE_LOG_VARIANTS`),
 * each pricing one part of what it writes (the payload's text, the pointer, the TTLs):
 * - `ids-payload`: the feed row's payload keeps only the ids (a post's change without
 *   its content, which the post's own row in the same batch holds);
 * - `keys-only`: the feed row without kind, item or payload (its key and TTL alone);
 * - `no-pointer`: the feed row alone (for a post, what the product writes since its count's mark stands in for the pointer);
 * - `no-feed-row`: the pointer alone;
 * - `no-ttl`: both rows without their TTL.
 * None of them can be delivered as the product delivers changes: they price, they do not serve.
 */
export const CHANGE_LOG_VARIANTS: Readonly<Record<string, ChangeLogRewrite>> = {
  'ids-payload': feedRow((row) => {
    const payload = JSON.parse(row.payload as string) as Record<string, unknown>;
    return { ...row, payload: JSON.stringify(Object.fromEntries(Object.entries(payload).filter(([k]) => k.endsWith('Id')))) };
  }),
  'keys-only': feedRow(({ feed, change_id }) => ({ feed: feed!, change_id: change_id! })),
  'no-pointer': (m) => (m.table === liveChangePointersTable ? null : m),
  'no-feed-row': (m) => (m.table === liveFeedChangesTable ? null : m),
  'no-ttl': (m) => {
    if (m.kind !== 'upsert') return m;
    const { ttl: _ttl, ...options } = m.options ?? {};
    return { ...m, options };
  },
};

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
