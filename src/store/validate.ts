/**
 * Request validation shared by every adapter, so both refuse exactly what CQL refuses,
 * with the same `StoreRequestError`, before anything is written.
 */
import { MAX_PARTITION_KEYS, MAX_TIMESTAMP, StoreRequestError } from './port.js';
import type { ClusteringBound, ClusteringRange } from './port.js';
import type { CqlValue, Row, TableSpec } from './table.js';
import { checkTableSpec, isCounterTable, keyColumnsOf, regularColumnsOf } from './table.js';
import { encodeSortable, validateValue } from './values.js';

/** Cassandra's largest TTL: 20 years, in seconds. */
export const MAX_TTL_SECONDS = 630_720_000;

/** Check declarations handed to `ensureTables` (built by hand, say) as `defineTable` does. */
export function checkDeclarations(tables: readonly TableSpec[]): void {
  for (const table of tables) {
    try {
      checkTableSpec(table);
    } catch (err) {
      throw new StoreRequestError((err as Error).message);
    }
  }
}

/** The full primary key of `key`, validated and normalised. */
export function primaryKeyOf(table: TableSpec, key: Row): Row {
  return keyValuesOf(table, key, keyColumnsOf(table), 'primary key');
}

/** The partition key of `key`, validated and normalised. */
export function partitionKeyOf(table: TableSpec, key: Row): Row {
  return keyValuesOf(table, key, table.partitionKey, 'partition key');
}

function keyValuesOf(table: TableSpec, key: Row, columns: readonly string[], what: string): Row {
  const out: Row = {};
  for (const k of columns) out[k] = keyValueOf(table, key, k, what);
  return out;
}

/**
 * The value of key column `column` of `key`, validated and normalised, as
 * `primaryKeyOf` takes it: for an adapter that binds a key's values without the
 * validated copy of the key.
 */
export function keyValueOf(table: TableSpec, key: Row, column: string, what = 'primary key'): CqlValue {
  const v = key[column];
  if (v === undefined || v === null) throw new StoreRequestError(`${what} column "${column}" of ${table.name} is required`);
  return validateValue(table.columns[column]!, v, column);
}

function checkKnownColumns(table: TableSpec, columns: Iterable<string>): void {
  for (const c of columns) {
    if (!(c in table.columns)) throw new StoreRequestError(`unknown column "${c}" in ${table.name}`);
  }
}

/**
 * The clustering values of each of `keys`, validated and normalised, for a read of
 * several rows of one partition (`Store.getInPartition`): every clustering column is
 * required, at most MAX_PARTITION_KEYS keys, on a table with clustering columns.
 */
export function clusteringKeysOf(table: TableSpec, keys: readonly Row[]): CqlValue[][] {
  if (table.clustering.length === 0) {
    throw new StoreRequestError(`rows of one partition of ${table.name} are read by clustering key, but it has no clustering columns: read its row with get`);
  }
  if (keys.length > MAX_PARTITION_KEYS) {
    throw new StoreRequestError(`a read of one partition of ${table.name} takes at most ${MAX_PARTITION_KEYS} keys, got ${keys.length}`);
  }
  return keys.map((key) => table.clustering.map(({ column }) => keyValueOf(table, key, column, 'clustering key')));
}

/** Text that is the same for two clustering keys exactly when their values are (to match rows read back to the keys asked for). */
export function clusteringText(table: TableSpec, values: readonly CqlValue[]): string {
  return values.map((v, i) => encodeSortable(table.columns[table.clustering[i]!.column]!, v).toString('hex')).join(',');
}

/** The values of a bound on a prefix of the clustering columns, validated and normalised. */
export function clusteringPrefixOf(table: TableSpec, values: readonly CqlValue[]): CqlValue[] {
  if (values.length > table.clustering.length) {
    throw new StoreRequestError(
      `a bound on ${table.name} has ${values.length} values but the table has ${table.clustering.length} clustering columns`,
    );
  }
  return values.map((v, i) => {
    const { column } = table.clustering[i]!;
    if (v === null || v === undefined) {
      throw new StoreRequestError(`clustering column "${column}" of ${table.name} cannot be null`);
    }
    return validateValue(table.columns[column]!, v, column);
  });
}

/** A clustering range with both bounds validated and normalised. */
export function clusteringRangeOf(table: TableSpec, range: ClusteringRange): ClusteringRange {
  const bound = (b?: ClusteringBound): ClusteringBound | undefined =>
    b && { values: clusteringPrefixOf(table, b.values), inclusive: b.inclusive };
  return { lower: bound(range.lower), upper: bound(range.upper) };
}

/** The regular cells of a row to write, validated (null means: delete the cell). */
export function regularValuesOf(table: TableSpec, row: Row): Record<string, CqlValue> {
  if (isCounterTable(table)) {
    throw new StoreRequestError(`cannot upsert into counter table ${table.name}; use increment`);
  }
  checkKnownColumns(table, Object.keys(row));
  const values: Record<string, CqlValue> = {};
  for (const c of regularColumnsOf(table)) {
    if (c in row) values[c] = validateValue(table.columns[c]!, row[c] ?? null, c);
  }
  return values;
}

/** A `USING TIMESTAMP` value, or the clock's when absent. */
export function writeTimestampOf(ts: bigint | undefined, now: () => bigint): bigint {
  if (ts === undefined) return now();
  if (typeof ts !== 'bigint' || ts < 0n || ts > MAX_TIMESTAMP) {
    throw new StoreRequestError(`USING TIMESTAMP must be between 0 and 2^63-1, got ${String(ts)}`);
  }
  return ts;
}

/**
 * Cassandra 4.x/5.0 refuse a TTL whose expiry lies after 2038-01-19T03:14:06Z (the
 * largest local deletion time, 2^31 - 2 seconds, under the default REJECT policy).
 */
export const MAX_EXPIRY_SECONDS = 2 ** 31 - 2;

/** A `USING TTL` value (0: none), checked against the 20-year limit and the 2038 expiry limit. */
export function ttlOf(ttl: number | undefined, nowMs: number): number {
  const t = ttl ?? 0;
  if (!Number.isInteger(t) || t < 0 || t > MAX_TTL_SECONDS) {
    throw new StoreRequestError(`TTL must be an integer between 0 and ${MAX_TTL_SECONDS} seconds, got ${t}`);
  }
  if (t > 0 && Math.floor(nowMs / 1000) + t > MAX_EXPIRY_SECONDS) {
    throw new StoreRequestError(
      `TTL must expire by ${new Date(MAX_EXPIRY_SECONDS * 1000).toISOString()} (Cassandra's largest expiration time), got ${t} seconds from now`,
    );
  }
  return t;
}

/** Counter tables take no deletes, range deletes or batches (DESIGN.md, semantic point 13). */
export function checkNotCounter(table: TableSpec, operation: string): void {
  if (isCounterTable(table)) throw new StoreRequestError(`counter table ${table.name} does not support ${operation}`);
}

/** The conditions of a conditional delete: regular, non-counter columns, each equal to a non-null value. */
export function conditionsOf(table: TableSpec, expected: Row | undefined): Row {
  checkNotCounter(table, 'conditional deletes');
  const out: Row = {};
  const regular = regularColumnsOf(table);
  checkKnownColumns(table, Object.keys(expected ?? {}));
  for (const [c, v] of Object.entries(expected ?? {})) {
    if (!regular.includes(c)) throw new StoreRequestError(`a condition must name a regular column of ${table.name}, got "${c}"`);
    if (v === null || v === undefined) throw new StoreRequestError(`the condition on "${c}" must be a value, got null`);
    out[c] = validateValue(table.columns[c]!, v, c);
  }
  return out;
}

/** Columns whose WRITETIME/TTL may be read: regular, non-counter columns only. */
export function checkCellColumns(table: TableSpec, columns: readonly string[]): void {
  const regular = regularColumnsOf(table);
  checkKnownColumns(table, columns);
  for (const c of columns) {
    if (!regular.includes(c)) {
      throw new StoreRequestError(`cannot use selection function writeTime/ttl on PRIMARY KEY part ${c}`);
    }
    if (table.columns[c] === 'counter') throw new StoreRequestError(`cannot use writeTime/ttl on counter column ${c}`);
  }
}

/** Counter deltas, validated against a counter table. */
export function counterDeltasOf(table: TableSpec, deltas: Readonly<Record<string, bigint | number>>): Record<string, bigint> {
  if (!isCounterTable(table)) throw new StoreRequestError(`${table.name} is not a counter table`);
  const cols = Object.keys(deltas);
  if (cols.length === 0) throw new StoreRequestError('increment needs at least one counter column');
  const out: Record<string, bigint> = {};
  const regular = regularColumnsOf(table);
  for (const c of cols) {
    if (!regular.includes(c)) throw new StoreRequestError(`"${c}" is not a counter column of ${table.name}`);
    const d = deltas[c]!;
    if (typeof d === 'number' ? !Number.isInteger(d) : typeof d !== 'bigint') {
      throw new StoreRequestError(`counter delta must be an integer, got ${String(d)}`);
    }
    out[c] = BigInt(d);
  }
  return out;
}

/** A slice limit. */
export function limitOf(limit: number): number {
  if (!Number.isInteger(limit) || limit < 0) {
    throw new StoreRequestError(`slice limit must be a non-negative integer, got ${limit}`);
  }
  return limit;
}
