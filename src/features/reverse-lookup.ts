/**
 * Connections over a reverse lookup (a user's lists, a user's meetings): one partition
 * of an index table whose rows name their targets. Index rows are written before (or
 * together with) their targets, so a write that fails or crashes half-way can leave an
 * index row whose target is missing, but never a target without its index row. Such
 * rows are filtered on read, checking every row of a read in one batch through the
 * request's loaders, so a page of n edges costs a fixed number of round trips and the
 * edges' nodes are then served from the same loaders.
 */
import type { CursorCodec } from '../paging/cursor.js';
import { pageFromSource } from '../paging/engine.js';
import { filteredSource } from '../paging/filtered-source.js';
import { sliceSource } from '../paging/slice-source.js';
import type { Page, PageArgs } from '../paging/types.js';
import type { Store } from '../store/port.js';
import type { Row, TableSpec } from '../store/table.js';

/** What `reverseLookupPage` reads: one index partition, and how to tell a row whose target is visible. */
export interface ReverseLookup<N> {
  /** The connection's identity, bound into its cursors (`User.lists:<userId>`). */
  readonly id: string;
  /** The field's name, for messages (`lists`). */
  readonly connectionName: string;
  readonly store: Store;
  readonly codec: CursorCodec;
  /** The request's signal (`PagingOptions.signal`). */
  readonly signal?: AbortSignal;
  readonly table: TableSpec;
  readonly partition: Row;
  readonly toNode: (row: Row) => N;
  /** The row a node came from (its clustering values). */
  readonly rowOf: (node: N) => Row;
  /** For a batch of rows, whether each one's target exists and is visible (one batched read). */
  readonly visible: (nodes: N[]) => Promise<boolean[]>;
}

/** One page of a reverse lookup, skipping rows whose target is missing. */
export function reverseLookupPage<N>(lookup: ReverseLookup<N>, args: PageArgs): Promise<Page<N>> {
  const { id, store, table, partition, toNode, rowOf, codec, connectionName } = lookup;
  const source = filteredSource(sliceSource<N>({ id, store, table, partition, toNode, rowOf }), lookup.visible);
  return pageFromSource(source, args, { connectionName, codec, signal: lookup.signal });
}
