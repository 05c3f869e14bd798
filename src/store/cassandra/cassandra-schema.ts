/**
 * CQL DDL derived from a table declaration, and the value conversions between the
 * port's plain values and the driver's types.
 */
import cassandra from 'cassandra-driver';
import type { CqlType, CqlValue, TableSpec } from '../table.js';
import { regularColumnsOf } from '../table.js';

const { types } = cassandra;

/** Keyspace replication, as CQL's replication map. */
export type Replication =
  | { readonly class: 'SimpleStrategy'; readonly replication_factor: number }
  | { readonly class: 'NetworkTopologyStrategy'; readonly [dataCenter: string]: number | string };

const IDENT = /^[a-z][a-z0-9_]{0,47}$/;

/** `CREATE KEYSPACE IF NOT EXISTS` with the configured replication. */
export function createKeyspaceCql(keyspace: string, replication: Replication): string {
  if (!IDENT.test(keyspace)) throw new Error(`keyspace must match ${IDENT}, got "${keyspace}"`);
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

/** A port value as the driver binds it. */
export function toDriver(type: CqlType, value: CqlValue): unknown {
  if (value === null) return null;
  switch (type) {
    case 'uuid':
      return types.Uuid.fromString(value as string);
    case 'timeuuid':
      return types.TimeUuid.fromString(value as string);
    default:
      return value;
  }
}

/** A driver value as the port returns it. */
export function fromDriver(type: CqlType, raw: unknown): CqlValue {
  if (raw === null || raw === undefined) return null;
  switch (type) {
    case 'uuid':
    case 'timeuuid':
      return String(raw).toLowerCase();
    case 'bigint':
    case 'counter':
      return BigInt(raw as bigint);
    case 'int':
      return Number(raw);
    default:
      return raw as CqlValue;
  }
}
