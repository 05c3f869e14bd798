/**
 * Counts the reads a background pass makes (the trailing passes report theirs as
 * `relay_late_pass_reads_total`): one per read call, each a round trip; a paged read
 * counts a call per page, as the store does.
 */
import { StoreDecorator, type StoreCall } from '../store/store-decorator.js';

const READS = new Set<StoreCall['operation']>(['get', 'getMany', 'getInPartition', 'slice', 'scan', 'readCells']);

/** A store view that counts the read round trips made through it (`reads`). */
export class ReadCountingStore extends StoreDecorator {
  /** Read round trips made through this view so far. */
  reads = 0;

  protected around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    if (READS.has(call.operation)) this.reads++;
    return run();
  }
}
