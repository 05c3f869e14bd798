/**
 * The simplest ordered source: one partition of one table, in clustering order. The
 * cursor key is the row's clustering tuple, so a page is one slice from the cursor.
 */
import type { ClusteringRange, Store } from '../store/port.js';
import type { CqlType, CqlValue, Row, TableSpec } from '../store/table.js';
import { encodeSortable, validateValue } from '../store/values.js';
import type { CursorKey, CursorKeyPart, Direction, OrderedSource } from './types.js';

/** A CQL value as it travels inside a cursor (bigints as text, dates as ms). */
export function keyPartFromValue(value: CqlValue): CursorKeyPart {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return value.getTime();
  return value;
}

/** The CQL value inside a cursor part; throws when the part does not fit the type. */
export function valueFromKeyPart(type: CqlType, part: CursorKeyPart, column: string): CqlValue {
  let value: CqlValue = part;
  if ((type === 'bigint' || type === 'counter') && typeof part === 'string' && /^-?\d{1,19}$/.test(part)) {
    value = BigInt(part);
  } else if (type === 'timestamp' && typeof part === 'number') {
    value = new Date(part);
  }
  return validateValue(type, value, column);
}

/** Decode a whole clustering tuple from a cursor key, or null when it does not fit. */
export function clusteringFromKey(table: TableSpec, key: CursorKey): CqlValue[] | null {
  if (key.length !== table.clustering.length) return null;
  try {
    return table.clustering.map((c, i) => {
      const v = valueFromKeyPart(table.columns[c.column]!, key[i]!, c.column);
      if (v === null) throw new Error('null clustering value');
      return v;
    });
  } catch {
    return null;
  }
}

/** The cursor key of a row: its clustering values. */
export function keyFromRow(table: TableSpec, row: Row): CursorKey {
  const { clustering } = table;
  const key = new Array<CursorKeyPart>(clustering.length);
  for (let i = 0; i < key.length; i++) key[i] = keyPartFromValue(row[clustering[i]!.column] ?? null);
  return key;
}

/**
 * A comparison of `table`'s clustering keys in clustering order that decodes a key
 * it is given again and again (a cursor compared with each row read up to it) once: the
 * last key's sortable bytes are kept while the same key object comes back.
 */
export function clusteringComparator(table: TableSpec): (a: CursorKey, b: CursorKey) => number {
  let lastKey: CursorKey | undefined;
  let lastBytes: Buffer[] = [];
  const bytesOf = (key: CursorKey): Buffer[] => {
    const values = clusteringFromKey(table, key);
    if (!values) throw new Error(`not a clustering key of ${table.name}`);
    return values.map((v, i) => encodeSortable(table.columns[table.clustering[i]!.column]!, v));
  };
  const remembered = (key: CursorKey): Buffer[] => {
    if (key !== lastKey) {
      lastBytes = bytesOf(key);
      lastKey = key;
    }
    return lastBytes;
  };
  return (a, b) => {
    // The key met last is most often the second (a cursor, or a read's start).
    const bb = remembered(b);
    const ab = a === b ? bb : bytesOf(a);
    for (let i = 0; i < ab.length; i++) {
      const c = Buffer.compare(ab[i]!, bb[i]!);
      if (c !== 0) return table.clustering[i]!.order === 'DESC' ? -c : c;
    }
    return 0;
  };
}

/** Options of `sliceSource`. */
export interface SliceSourceOptions<N> {
  readonly id: string;
  readonly store: Store;
  readonly table: TableSpec;
  readonly partition: Row;
  /** A fixed clustering range the connection is limited to (a prefix search, say). */
  readonly range?: ClusteringRange;
  /** Turn a row into the node the connection shows. */
  readonly toNode: (row: Row) => N;
  /** The row a node came from (its clustering values). */
  readonly rowOf: (node: N) => Row;
}

/** A connection over one partition, in clustering order. */
export function sliceSource<N>(options: SliceSourceOptions<N>): OrderedSource<N> {
  const { store, table, partition, toNode, rowOf } = options;
  return {
    id: options.id,
    async read(from: CursorKey | undefined, direction: Direction, limit: number, until?: CursorKey): Promise<N[]> {
      const values = from ? clusteringFromKey(table, from) : null;
      const cursor = values ? { values, inclusive: true } : undefined;
      // A read wanted only up to `until` ends there (where the connection has no range of
      // its own): a cursor's rank reads the few rows before it, not LEAF_FIRST.
      const end = until && !options.range ? clusteringFromKey(table, until) : null;
      const range = options.range ?? (end ? { [direction === 'forward' ? 'upper' : 'lower']: { values: end, inclusive: true } } : {});
      // The cursor replaces the range's bound on the side the read starts from.
      const rows = await store.slice(table, {
        partition,
        limit,
        reverse: direction === 'backward',
        lower: direction === 'forward' ? (cursor ?? range.lower) : range.lower,
        upper: direction === 'forward' ? range.upper : (cursor ?? range.upper),
      });
      return rows.map(toNode);
    },
    keyOf: (node: N) => keyFromRow(table, rowOf(node)),
    compare: clusteringComparator(table),
    isKey: (key: CursorKey) => clusteringFromKey(table, key) !== null,
  };
}
