/**
 * How a declared table lives in SQLite (the DDL). One SQLite table per CQL table holds,
 * per row, the encoded partition key `pk`, the encoded clustering key `ck` (see
 * sqlite-keys.ts), the key values, and for each regular column its value, write
 * timestamp (µs) and expiry (epoch seconds). A second table holds the tombstones as
 * disjoint half-open `ck` ranges (see sqlite-tombstones.ts), each with its timestamp and
 * local deletion time, keyed by where it starts so the one covering a row is one seek.
 */
import type { TableSpec } from '../table.js';
import { isCounterTable, keyColumnsOf, regularColumnsOf } from '../table.js';
import { SQL_TYPE } from './sqlite-values.js';

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

/** The physical columns of a layout, with their SQLite types. */
export function physicalColumns(layout: SqliteLayout): Array<[string, string]> {
  const { table } = layout;
  const cols: Array<[string, string]> = [
    ['pk', 'BLOB NOT NULL'],
    ['ck', 'BLOB NOT NULL'],
  ];
  for (const k of keyColumnsOf(table)) {
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
    `CREATE TABLE IF NOT EXISTS "${layout.tombTable}" (pk BLOB NOT NULL, lo BLOB NOT NULL, hi BLOB, ts INTEGER NOT NULL, ldt INTEGER NOT NULL, PRIMARY KEY (pk, lo)) WITHOUT ROWID`,
    // Compaction purges by local deletion time without reading every tombstone.
    `CREATE INDEX IF NOT EXISTS "${layout.tombTable}_ldt" ON "${layout.tombTable}" (ldt)`,
  ];
}

/**
 * Files written before tombstones had a local deletion time hold them as overlapping
 * ranges (`lo`, `hi` nullable, no `ldt`): the statements that set that table aside
 * under `legacyTombTable`, so `ensureTables` can merge its rows into the new one.
 */
export function legacyTombstoneStatements(layout: SqliteLayout): string[] {
  return [
    `DROP INDEX IF EXISTS "${layout.tombTable}_pk"`,
    `ALTER TABLE "${layout.tombTable}" RENAME TO "${legacyTombTable(layout)}"`,
  ];
}

/** Where `legacyTombstoneStatements` puts an old tombstone table while it is merged. */
export function legacyTombTable(layout: SqliteLayout): string {
  return `${layout.tombTable}_v1`;
}
