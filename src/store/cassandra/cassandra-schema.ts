/**
 * CQL DDL derived from a table declaration (the SQLite adapter's counterpart is
 * `sqlite-schema.ts`).
 */
import type { TableKey, TableSpec } from '../table.js';
import { checkIdentifier, gcGraceSecondsOf, keyDifferencesOf, regularColumnsOf } from '../table.js';

/** Keyspace replication, as CQL's replication map. */
export type Replication =
  | { readonly class: 'SimpleStrategy'; readonly replication_factor: number }
  | { readonly class: 'NetworkTopologyStrategy'; readonly [dataCenter: string]: number | string };

/** `CREATE KEYSPACE IF NOT EXISTS` with the configured replication. */
export function createKeyspaceCql(keyspace: string, replication: Replication): string {
  checkIdentifier(`keyspace "${keyspace}"`, keyspace);
  const entries = Object.entries(replication).map(([k, v]) => `'${k}': ${typeof v === 'number' ? v : `'${v}'`}`);
  return `CREATE KEYSPACE IF NOT EXISTS ${keyspace} WITH replication = {${entries.join(', ')}}`;
}

/** `CREATE TABLE IF NOT EXISTS` for a declaration. */
export function createTableCql(keyspace: string, table: TableSpec): string {
  const cols = Object.entries(table.columns).map(([name, type]) => `${name} ${type}`);
  const partition = `(${table.partitionKey.join(', ')})`;
  const key = [partition, ...table.clustering.map((c) => c.column)].join(', ');
  const options = [`gc_grace_seconds = ${gcGraceSecondsOf(table)}`];
  const compaction = compactionOf(table);
  if (compaction) options.push(`compaction = ${compactionMapCql(compaction)}`);
  if (table.clustering.length > 0) {
    options.unshift(`CLUSTERING ORDER BY (${table.clustering.map((c) => `${c.column} ${c.order}`).join(', ')})`);
  }
  return `CREATE TABLE IF NOT EXISTS ${keyspace}.${table.name} (${cols.join(', ')}, PRIMARY KEY (${key})) WITH ${options.join(' AND ')}`;
}

/** `ALTER TABLE … WITH gc_grace_seconds` when an existing table's grace period differs from its declaration. */
export function gcGraceCql(keyspace: string, table: TableSpec, existing: number | undefined): string[] {
  const declared = gcGraceSecondsOf(table);
  return existing === undefined || existing === declared
    ? []
    : [`ALTER TABLE ${keyspace}.${table.name} WITH gc_grace_seconds = ${declared}`];
}

/** A compaction strategy a table declares: its class (short name) and options, as `system_schema.tables.compaction` holds them. */
export interface DeclaredCompaction {
  readonly class: string;
  readonly options: Readonly<Record<string, string>>;
}

/** The compaction strategy `table` declares; undefined for Cassandra's default (size-tiered), which is left as the cluster has it. */
export function compactionOf(table: TableSpec): DeclaredCompaction | undefined {
  if (table.timeWindowMinutes !== undefined) {
    return { class: 'TimeWindowCompactionStrategy', options: { compaction_window_unit: 'MINUTES', compaction_window_size: String(table.timeWindowMinutes) } };
  }
  return table.leveledCompaction ? { class: 'LeveledCompactionStrategy', options: {} } : undefined;
}

/** A declared strategy as CQL's compaction map: `{'class': 'LeveledCompactionStrategy'}`. */
function compactionMapCql({ class: name, options }: DeclaredCompaction): string {
  const entries = Object.entries(options).map(([k, v]) => `'${k}': ${/^\d+$/.test(v) ? v : `'${v}'`}`);
  return `{${[`'class': '${name}'`, ...entries].join(', ')}}`;
}

/**
 * `ALTER TABLE … WITH compaction` when an existing table's strategy (its
 * `system_schema.tables.compaction` map, `existing`) is not the one it declares: another
 * class, or other values of the declared options. Options the declaration leaves out (an
 * operator's `sstable_size_in_mb`, say) are not compared. Nothing for a table that
 * declares none. Cassandra recompacts the table in the background after the change.
 */
export function compactionCql(keyspace: string, table: TableSpec, existing: Readonly<Record<string, string>> | undefined): string[] {
  const declared = compactionOf(table);
  if (!declared || existing === undefined) return [];
  const sameClass = existing.class === declared.class || existing.class?.endsWith(`.${declared.class}`);
  const sameOptions = Object.entries(declared.options).every(([k, v]) => existing[k] === v);
  return sameClass && sameOptions ? [] : [`ALTER TABLE ${keyspace}.${table.name} WITH compaction = ${compactionMapCql(declared)}`];
}

/** `ALTER TABLE … ADD` for the regular columns a declaration has and an existing table lacks. */
export function addColumnCql(keyspace: string, table: TableSpec, existing: ReadonlySet<string>): string[] {
  return regularColumnsOf(table)
    .filter((c) => !existing.has(c))
    .map((c) => `ALTER TABLE ${keyspace}.${table.name} ADD ${c} ${table.columns[c]}`);
}

/** What `system_schema` holds for one keyspace: each table's columns and their CQL types. */
export interface ExistingSchema {
  readonly keyspace: boolean;
  readonly tables: ReadonlyMap<string, ReadonlyMap<string, string>>;
  /** Each existing table's `gc_grace_seconds` (absent: not read, nothing to bring up to date). */
  readonly gcGraceSeconds?: ReadonlyMap<string, number>;
  /** Each existing table's compaction map (absent: not read, nothing to bring up to date). */
  readonly compaction?: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /** Each existing table's key (absent: not read, not compared). */
  readonly keys?: ReadonlyMap<string, TableKey>;
}

/**
 * An existing table's key from its `system_schema.columns` rows (`kind`, `position`,
 * `clustering_order`): partition key and clustering columns each in position order.
 */
export function existingKeyOf(
  columns: ReadonlyArray<{ readonly column: string; readonly kind: string; readonly position: number; readonly clusteringOrder: string }>,
): TableKey {
  const ofKind = (kind: string) => columns.filter((c) => c.kind === kind).sort((a, b) => a.position - b.position);
  return {
    partitionKey: ofKind('partition_key').map((c) => c.column),
    clustering: ofKind('clustering').map((c) => ({ column: c.column, order: c.clusteringOrder.toLowerCase() === 'desc' ? 'DESC' : 'ASC' })),
  };
}

/**
 * The tables whose existing key differs from their declaration (partition key columns,
 * clustering columns, their order, each one's clustering order), one phrase per
 * difference naming the table and both keys. No DDL fixes these: Cassandra cannot alter
 * a primary key.
 */
export function keyDifferences(keyspace: string, existing: ExistingSchema, tables: readonly TableSpec[]): string[] {
  return tables.flatMap((table) => {
    const found = existing.keys?.get(table.name);
    return found && existing.tables.has(table.name) ? keyDifferencesOf(`${keyspace}.${table.name}`, found, table) : [];
  });
}

/** The DDL that brings `existing` up to the declarations, in order; empty when nothing is missing. */
export function schemaChanges(
  keyspace: string,
  replication: Replication,
  existing: ExistingSchema,
  tables: readonly TableSpec[],
): string[] {
  const out: string[] = existing.keyspace ? [] : [createKeyspaceCql(keyspace, replication)];
  for (const table of tables) {
    const columns = existing.tables.get(table.name);
    if (!columns) out.push(createTableCql(keyspace, table));
    else {
      out.push(...addColumnCql(keyspace, table, new Set(columns.keys())));
      out.push(...gcGraceCql(keyspace, table, existing.gcGraceSeconds?.get(table.name)));
      out.push(...compactionCql(keyspace, table, existing.compaction?.get(table.name)));
    }
  }
  return out;
}

/**
 * What the declarations need and `existing` lacks or declares otherwise, as short
 * phrases ("table users", "column meeting_users.write_token", a table keyed otherwise,
 * …); empty when it all fits.
 */
export function schemaDifferences(keyspace: string, existing: ExistingSchema, tables: readonly TableSpec[]): string[] {
  if (!existing.keyspace) return [`keyspace ${keyspace}`];
  const out: string[] = [];
  for (const table of tables) {
    const columns = existing.tables.get(table.name);
    if (!columns) {
      out.push(`table ${keyspace}.${table.name}`);
      continue;
    }
    for (const [column, type] of Object.entries(table.columns)) {
      const found = columns.get(column);
      if (found === undefined) out.push(`column ${table.name}.${column}`);
      else if (found !== type) out.push(`column ${table.name}.${column} of type ${type} (found ${found})`);
    }
  }
  return [...out, ...keyDifferences(keyspace, existing, tables)];
}
