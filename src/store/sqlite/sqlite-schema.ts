/**
 * How a declared table lives in SQLite. One SQLite table per CQL table holds, per row,
 * the encoded partition key `pk`, the encoded clustering key `ck` (an order-preserving
 * byte string, so a clustering slice is one index range), the key values, and for each
 * regular column its value, write timestamp (µs) and expiry (epoch seconds). A second
 * table holds the tombstones as half-open `ck` ranges with their timestamps.
 */
import { StoreRequestError } from '../port.js';
import type { ClusteringBound } from '../port.js';
import type { CqlType, CqlValue, Row, TableSpec } from '../table.js';
import { isCounterTable, regularColumnsOf } from '../table.js';
import { encodeSortable, invertBytes, validateValue } from '../values.js';

/** Physical names of one declared table. */
export interface SqliteLayout {
  readonly table: TableSpec;
  readonly dataTable: string;
  readonly tombTable: string;
  readonly regular: readonly string[];
  readonly counter: boolean;
}

/** Derive the physical layout of a declared table. */
export function layoutOf(table: TableSpec): SqliteLayout {
  return {
    table,
    dataTable: `t_${table.name}`,
    tombTable: `d_${table.name}`,
    regular: regularColumnsOf(table),
    counter: isCounterTable(table),
  };
}

const SQL_TYPE: Record<CqlType, string> = {
  uuid: 'TEXT',
  timeuuid: 'TEXT',
  text: 'TEXT',
  int: 'INTEGER',
  bigint: 'INTEGER',
  timestamp: 'INTEGER',
  boolean: 'INTEGER',
  counter: 'INTEGER',
};

/** The physical columns of a layout, with their SQLite types. */
export function physicalColumns(layout: SqliteLayout): Array<[string, string]> {
  const { table } = layout;
  const cols: Array<[string, string]> = [
    ['pk', 'BLOB NOT NULL'],
    ['ck', 'BLOB NOT NULL'],
  ];
  for (const k of [...table.partitionKey, ...table.clustering.map((c) => c.column)]) {
    cols.push([`k_${k}`, SQL_TYPE[table.columns[k]!]]);
  }
  if (!layout.counter) {
    cols.push(['row_w', 'INTEGER'], ['row_x', 'INTEGER']);
  }
  for (const c of layout.regular) {
    cols.push([`v_${c}`, SQL_TYPE[table.columns[c]!]]);
    if (!layout.counter) cols.push([`w_${c}`, 'INTEGER'], [`x_${c}`, 'INTEGER']);
  }
  return cols;
}

/** DDL for a layout (idempotent). */
export function createStatements(layout: SqliteLayout): string[] {
  const cols = physicalColumns(layout).map(([n, t]) => `"${n}" ${t}`);
  return [
    `CREATE TABLE IF NOT EXISTS "${layout.dataTable}" (${cols.join(', ')}, PRIMARY KEY (pk, ck)) WITHOUT ROWID`,
    `CREATE TABLE IF NOT EXISTS "${layout.tombTable}" (pk BLOB NOT NULL, lo BLOB, hi BLOB, ts INTEGER NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS "${layout.tombTable}_pk" ON "${layout.tombTable}" (pk, lo)`,
  ];
}

/** A value as SQLite stores it. */
export function toSql(type: CqlType, value: CqlValue): unknown {
  if (value === null) return null;
  switch (type) {
    case 'timestamp':
      return BigInt((value as Date).getTime());
    case 'boolean':
      return value ? 1n : 0n;
    case 'int':
      return BigInt(value as number);
    default:
      return value;
  }
}

/** A value read back from SQLite (the database returns integers as bigint). */
export function fromSql(type: CqlType, raw: unknown): CqlValue {
  if (raw === null || raw === undefined) return null;
  switch (type) {
    case 'timestamp':
      return new Date(Number(raw));
    case 'boolean':
      return raw === 1n || raw === 1;
    case 'int':
      return Number(raw);
    case 'bigint':
    case 'counter':
      return BigInt(raw as bigint);
    default:
      return raw as string;
  }
}

/** Validate and encode the partition key of a row or key object. */
export function encodePartition(table: TableSpec, key: Row): Buffer {
  return Buffer.concat(
    table.partitionKey.map((col) => {
      const v = key[col];
      if (v === undefined || v === null) {
        throw new StoreRequestError(`partition key column "${col}" of ${table.name} is required`);
      }
      return encodeSortable(table.columns[col]!, validateValue(table.columns[col]!, v, col));
    }),
  );
}

/** Encode a prefix of the clustering columns; DESC columns are byte-inverted. */
export function encodeClusteringPrefix(table: TableSpec, values: readonly CqlValue[]): Buffer {
  if (values.length > table.clustering.length) {
    throw new StoreRequestError(
      `a bound on ${table.name} has ${values.length} values but the table has ${table.clustering.length} clustering columns`,
    );
  }
  return Buffer.concat(
    values.map((v, i) => {
      const { column, order } = table.clustering[i]!;
      if (v === null || v === undefined) {
        throw new StoreRequestError(`clustering column "${column}" of ${table.name} cannot be null`);
      }
      const bytes = encodeSortable(table.columns[column]!, validateValue(table.columns[column]!, v, column));
      return order === 'DESC' ? invertBytes(bytes) : bytes;
    }),
  );
}

/** The full clustering key of a row (every clustering column required). */
export function encodeClustering(table: TableSpec, key: Row): Buffer {
  return encodeClusteringPrefix(
    table,
    table.clustering.map(({ column }) => {
      const v = key[column];
      if (v === undefined || v === null) {
        throw new StoreRequestError(`clustering column "${column}" of ${table.name} is required`);
      }
      return v;
    }),
  );
}

/**
 * The smallest byte string greater than every string starting with `prefix`, or null
 * when none exists. Turns prefix bounds into half-open ranges.
 */
function prefixSuccessor(prefix: Buffer): Buffer | null {
  let end = prefix.length;
  while (end > 0 && prefix[end - 1] === 0xff) end--;
  if (end === 0) return null;
  const out = Buffer.from(prefix.subarray(0, end));
  out[end - 1]! += 1;
  return out;
}

/** A clustering range as `lo <= ck < hi` (null = unbounded); `empty` when nothing fits. */
export interface ByteRange {
  readonly lo: Buffer | null;
  readonly hi: Buffer | null;
  readonly empty: boolean;
}

/** Turn clustering-order bounds into one half-open byte range over `ck`. */
export function byteRange(table: TableSpec, lower?: ClusteringBound, upper?: ClusteringBound): ByteRange {
  let lo: Buffer | null = null;
  let hi: Buffer | null = null;
  let empty = false;
  if (lower && lower.values.length > 0) {
    const enc = encodeClusteringPrefix(table, lower.values);
    if (lower.inclusive) lo = enc;
    else {
      lo = prefixSuccessor(enc);
      if (lo === null) empty = true;
    }
  }
  if (upper && upper.values.length > 0) {
    const enc = encodeClusteringPrefix(table, upper.values);
    hi = upper.inclusive ? prefixSuccessor(enc) : enc;
  }
  if (lo && hi && Buffer.compare(lo, hi) >= 0) empty = true;
  return { lo, hi, empty };
}
