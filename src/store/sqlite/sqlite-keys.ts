/**
 * Keys and clustering ranges in SQLite: the partition key and the clustering key of a
 * row become order-preserving byte strings (`pk`, `ck`), so a clustering range is one
 * half-open interval of `ck` and one index range. The Cassandra adapter's counterpart
 * is `cassandra-ranges.ts`, which turns the same bounds into CQL restrictions.
 */
import type { ClusteringRange } from '../port.js';
import type { CqlValue, Row, TableSpec } from '../table.js';
import { clusteringPrefixOf, partitionKeyOf, primaryKeyOf } from '../validate.js';
import { encodeSortable, invertBytesIn, sortableWidth, writeSortable } from '../values.js';

/** Validate and encode the partition key of a row or key object. */
export function encodePartition(table: TableSpec, key: Row): Buffer {
  return encodeValidPartition(table, partitionKeyOf(table, key));
}

/** Encode the partition key of an already validated key. */
function encodeValidPartition(table: TableSpec, key: Row): Buffer {
  const { partitionKey } = table;
  // One column (the usual case): no concatenation.
  if (partitionKey.length === 1) return encodeSortable(table.columns[partitionKey[0]!]!, key[partitionKey[0]!]!);
  return Buffer.concat(partitionKey.map((col) => encodeSortable(table.columns[col]!, key[col]!)));
}

/** A primary key, validated once, with its encoded partition and clustering keys. */
export interface EncodedKey {
  readonly key: Row;
  readonly pk: Buffer;
  readonly ck: Buffer;
}

/** Validate a full primary key once and encode both of its parts (the hot path of every keyed read and write). */
export function encodeKey(table: TableSpec, key: Row): EncodedKey {
  const valid = primaryKeyOf(table, key);
  const ck = table.clustering.length === 0 ? NO_CLUSTERING : encodeValidClustering(table, valid);
  return { key: valid, pk: encodeValidPartition(table, valid), ck };
}

/** The clustering key of a table without clustering columns. */
const NO_CLUSTERING = Buffer.alloc(0);

function encodeValidClustering(table: TableSpec, key: Row): Buffer {
  const parts = table.clustering.map(({ column }) => key[column]!);
  return encodeValidClusteringPrefix(table, parts);
}

/** Encode a prefix of the clustering columns; DESC columns are byte-inverted. */
export function encodeClusteringPrefix(table: TableSpec, values: readonly CqlValue[]): Buffer {
  return encodeValidClusteringPrefix(table, clusteringPrefixOf(table, values));
}

/**
 * Encode clustering values already validated and normalised (`clusteringPrefixOf`,
 * `clusteringKeysOf`): a read of several keys validates each once, not twice. Values of
 * fixed widths (all but text) are written into one buffer, and a DESC column's bytes
 * are inverted where they lie: a counted index's list key (level, parent) was five
 * buffers, a timeline's bound two; one now.
 */
export function encodeValidClusteringPrefix(table: TableSpec, values: readonly CqlValue[]): Buffer {
  const { clustering, columns } = table;
  let width = 0;
  for (let i = 0; i < values.length && width >= 0; i++) width += sortableWidth(columns[clustering[i]!.column]!) ?? -Infinity;
  if (width < 0) return Buffer.concat(values.map((v, i) => encodeClusteringValue(table, i, v)));
  const out = Buffer.allocUnsafe(width);
  let at = 0;
  for (let i = 0; i < values.length; i++) {
    const { column, order } = clustering[i]!;
    const type = columns[column]!;
    writeSortable(type, values[i]!, out, at);
    const end = at + sortableWidth(type)!;
    if (order === 'DESC') invertBytesIn(out, at, end);
    at = end;
  }
  return out;
}

/** The encoding of clustering column i's value, inverted for a DESC column. */
function encodeClusteringValue(table: TableSpec, i: number, value: CqlValue): Buffer {
  const { column, order } = table.clustering[i]!;
  const bytes = encodeSortable(table.columns[column]!, value);
  if (order === 'DESC') invertBytesIn(bytes, 0, bytes.length);
  return bytes;
}

/** The full clustering key of a validated primary key. */
export function encodeClustering(table: TableSpec, key: Row): Buffer {
  return encodeClusteringPrefix(
    table,
    table.clustering.map(({ column }) => key[column] ?? null),
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

/** Turn a clustering-order range into one half-open byte range over `ck`. */
export function byteRange(table: TableSpec, { lower, upper }: ClusteringRange): ByteRange {
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

/** The byte range of one row, `[ck, ck]`; with no clustering columns, the whole partition. */
export function rowByteRange(table: TableSpec, ck: Buffer): ByteRange {
  return table.clustering.length === 0
    ? { lo: null, hi: null, empty: false }
    : { lo: ck, hi: Buffer.concat([ck, Buffer.from([0])]), empty: false };
}

/**
 * `pk = @pk` and only the bounds the range has: SQLite seeks on `(pk, ck)` only when
 * the bounds appear as plain comparisons (an `@lo IS NULL OR …` form makes every slice
 * scan the partition from its start, so deep pages would get slower and slower).
 */
export function rangeWhere(range: ByteRange): string {
  return `pk = @pk${range.lo ? ' AND ck >= @lo' : ''}${range.hi ? ' AND ck < @hi' : ''}`;
}

/** The parameters `rangeWhere` names. */
export function rangeParams(range: ByteRange): Record<string, Buffer> {
  return { ...(range.lo ? { lo: range.lo } : {}), ...(range.hi ? { hi: range.hi } : {}) };
}
