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
