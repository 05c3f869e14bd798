/**
 * CQL DDL derived from a table declaration (the SQLite adapter's counterpart is
 * `sqlite-schema.ts`).
 */
import type { TableSpec } from '../table.js';
import { checkIdentifier, regularColumnsOf } from '../table.js';

/** Keyspace replication, as CQL's replication map. */
export type Replication =
  | { readonly class: 'SimpleStrategy'; readonly replication_factor: number }
  | { readonly class: 'NetworkTopologyStrategy'; readonly [dataCenter: string]: number | string };

/** `CREATE KEYSPACE IF NOT EXISTS` with the configured replication. */
export function createKeyspaceCql(keyspace: string, replication: Replication): string {
  checkIdentifier('keyspace', keyspace);
  const entries = Object.entries(replication).map(([k, v]) => `'${k}': ${typeof v === 'number' ? v : `'${v}'`}`);
  return `CREATE KEYSPACE IF NOT EXISTS ${keyspace} WITH replication = {${entries.join(', ')}}`;
}

/** `CREATE TABLE IF NOT EXISTS` for a declaration. */
export function createTableCql(keyspace: string, table: TableSpec): string {
  const cols = Object.entries(table.columns).map(([name, type]) => `${name} ${type}`);
  const partition = `(${table.partitionKey.join(', ')})`;
  const key = [partition, ...table.clustering.map((c) => c.column)].join(', ');
  let cql = `CREATE TABLE IF NOT EXISTS ${keyspace}.${table.name} (${cols.join(', ')}, PRIMARY KEY (${key}))`;
  if (table.clustering.length > 0) {
    cql += ` WITH CLUSTERING ORDER BY (${table.clustering.map((c) => `${c.column} ${c.order}`).join(', ')})`;
  }
  return cql;
}

/** Regular columns a declaration has; used to add columns to an existing table. */
export function addColumnCql(keyspace: string, table: TableSpec, existing: ReadonlySet<string>): string[] {
  return regularColumnsOf(table)
    .filter((c) => !existing.has(c))
    .map((c) => `ALTER TABLE ${keyspace}.${table.name} ADD ${c} ${table.columns[c]}`);
}
