/**
 * Reading a whole partition without one unbounded read: slices of a small limit, each
 * starting just after the last row of the one before (a bound on the full clustering
 * tuple, in clustering order). Whatever the partition holds is read, in clustering
 * order; nothing is cut off at a limit, and no single read is large.
 */
import type { ClusteringBound, Store } from '../store/port.js';
import type { Row, TableSpec } from '../store/table.js';

/** Rows per slice unless a caller says otherwise. */
export const CHUNK_ROWS = 500;

/** The rows of one partition (from `lower` on, up to `upper`), in clustering order, a slice at a time. */
export async function* partitionChunks(
  store: Store,
  table: TableSpec,
  partition: Row,
  options: { lower?: ClusteringBound; upper?: ClusteringBound; chunk?: number } = {},
): AsyncGenerator<Row[]> {
  const chunk = options.chunk ?? CHUNK_ROWS;
  const { upper } = options;
  let lower = options.lower;
  for (;;) {
    const rows = await store.slice(table, { partition, limit: chunk, ...(lower ? { lower } : {}), ...(upper ? { upper } : {}) });
    if (rows.length > 0) yield rows;
    if (rows.length < chunk) return;
    const last = rows[rows.length - 1]!;
    lower = { values: table.clustering.map((c) => last[c.column]!), inclusive: false };
  }
}

/** Every row of one partition (from `lower` on, up to `upper`), read a slice at a time. */
export async function allRowsOf(
  store: Store,
  table: TableSpec,
  partition: Row,
  options: { lower?: ClusteringBound; upper?: ClusteringBound; chunk?: number } = {},
): Promise<Row[]> {
  const out: Row[] = [];
  for await (const rows of partitionChunks(store, table, partition, options)) out.push(...rows);
  return out;
}
