/**
 * Recounting every connection (`npm run seed -- --recount`): for data written before
 * counts existed, and after every verifier was down for longer than the work list
 * lives (a day). Safe while servers run, and idempotent:
 *
 * 1. Every item each connection holds now, found by scanning its feature's tables
 *    (`Membership` sources), that its count's ledger never saw added is added now
 *    (`backfillItems`): an item a server adds meanwhile is added twice at most, and the
 *    ledger keeps one of the two; an item removed meanwhile is removed after its
 *    addition, and counts as removed.
 * 2. Every count, those just backfilled and every one the ledger knows, is then made
 *    right (`reconcileCount`): settled in full from its ledger through the closed
 *    windows (and its counted index rebuilt, for the counts `rankOf` names), its open
 *    windows' live cells corrected. A settlement is a pure function
 *    of its bound, so a verifier settling the same count meanwhile writes the same.
 *
 * Running it again finds nothing to add and settles to the same counts.
 */
import type { ClusterSettings } from '../config.js';
import type { Clock } from '../store/clock.js';
import type { Store } from '../store/port.js';
import type { Row, TableSpec } from '../store/table.js';
import { closedThrough } from '../background/windowed-job.js';
import { backfillItems, reconcileCount, type CountWriter } from './connection-counts.js';
import { isIndexKey, type RankOfItem } from './count-ranks.js';
import { countItemsTable } from './count-tables.js';

/** Items a counted connection holds (a part of them: a connection may come in several). */
export interface Membership {
  readonly key: string;
  readonly items: readonly string[];
}

/** Rows read per scan page. */
const SCAN_PAGE = 1_000;

/** Every row of a table, a scan page at a time. */
export async function* scanRows(store: Store, table: TableSpec): AsyncGenerator<Row[]> {
  let after: string | null = null;
  do {
    const page = await store.scan(table, { limit: SCAN_PAGE, after });
    if (page.rows.length > 0) yield page.rows;
    after = page.next;
  } while (after !== null);
}

/**
 * The memberships held in one table whose partitions are connections (an author's
 * timeline, a meeting's acceptors): a scan, each page's rows grouped by connection.
 */
export async function* membershipsOfTable(store: Store, table: TableSpec, keyOf: (row: Row) => string, itemOf: (row: Row) => string): AsyncGenerator<Membership> {
  for await (const rows of scanRows(store, table)) {
    const byKey = new Map<string, string[]>();
    for (const row of rows) {
      const key = keyOf(row);
      byKey.set(key, [...(byKey.get(key) ?? []), itemOf(row)]);
    }
    for (const [key, items] of byKey) yield { key, items };
  }
}

/** What a recount did. */
export interface RecountReport {
  /** Counts made right, the keys of index entries among them. */
  readonly counts: number;
  /** Items counted that no count had seen (written before counts existed, or lost); index entries added are not among them. */
  readonly backfilled: number;
}

/** Recount every connection the sources name, and every one the ledger knows (see the file comment). */
export async function recountConnections(
  store: Store,
  writer: CountWriter,
  sources: ReadonlyArray<AsyncIterable<Membership>>,
  options: { clock: Clock; cluster: ClusterSettings; rankOf?: RankOfItem; onProgress?: (done: number) => void },
): Promise<RecountReport> {
  const keys = new Set<string>();
  let backfilled = 0;
  for (const source of sources) {
    for await (const { key, items } of source) {
      const added = await backfillItems(store, writer, key, items);
      // Index entries (count-ranks.ts) are not items of a connection: they are not reported.
      if (!isIndexKey(key)) backfilled += added;
      keys.add(key);
    }
  }
  for await (const rows of scanRows(store, countItemsTable)) for (const row of rows) keys.add(row.count_key as string);
  let done = 0;
  for (const key of keys) {
    await reconcileCount(store, writer, key, closedThrough(options.clock, options.cluster), options.rankOf);
    options.onProgress?.(++done);
  }
  return { counts: keys.size, backfilled };
}
