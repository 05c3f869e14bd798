/**
 * Tables are declared once, as data, in the vocabulary of CQL. Each adapter derives
 * its own DDL from these declarations, so a feature describes a table exactly once.
 */
import { isReservedCqlKeyword } from './cql-keywords.js';

/** The CQL types the product uses. */
export type CqlType =
  | 'uuid'
  | 'timeuuid'
  | 'text'
  | 'int'
  | 'bigint'
  | 'timestamp'
  | 'boolean'
  | 'counter';

/** Clustering direction of one clustering column. */
export type ClusteringOrder = 'ASC' | 'DESC';

/** One clustering column and its on-disk order. */
export interface ClusteringColumn {
  readonly column: string;
  readonly order: ClusteringOrder;
}

/** Declare a table with `defineTable`; both adapters read this shape. */
export interface TableSpec {
  readonly name: string;
  readonly columns: Readonly<Record<string, CqlType>>;
  readonly partitionKey: readonly string[];
  readonly clustering: readonly ClusteringColumn[];
  /**
   * How long a tombstone outlives its deletion, in seconds: Cassandra's
   * `gc_grace_seconds`. Until then it hides every write at or below its timestamp,
   * however late that write arrives; after it, compaction may purge it, and a late
   * older write would come back. `defineTable` always sets it; a declaration built
   * by hand without it gets DEFAULT_GC_GRACE_SECONDS (see `gcGraceSecondsOf`).
   */
  readonly gcGraceSeconds?: number;
  /**
   * Compact the table as a TTL'd time series: Cassandra's TimeWindowCompactionStrategy,
   * one SSTable per window of this many minutes, so whole windows drop once every row
   * in them has expired (a change log, say). Absent: Cassandra's default compaction.
   */
  readonly timeWindowMinutes?: number;
  /**
   * Compact the table with Cassandra's LeveledCompactionStrategy: for rows rewritten
   * over and over and read by latency-sensitive requests (a counted index's lists), a
   * partition then lies in at most one SSTable per level, where the default size-tiered
   * strategy leaves its versions in every SSTable a flush made until similar sizes meet.
   * Not with `timeWindowMinutes`. The embedded store has no SSTables and ignores it.
   */
  readonly leveledCompaction?: boolean;
}

/**
 * The default grace period: Cassandra's own (864,000 s, 10 days). The embedded store has
 * no repair to wait for, but a late write can arrive long after its timestamp was
 * chosen: a saga that a crashed server left open is rolled forward or back when the
 * server (or another) recovers it, possibly after a long outage, with the timestamps it
 * logged. Ten days covers an outage over a long weekend with room to spare, and now
 * that covering tombstones are found by an indexed lookup and dominated ones are
 * merged away, keeping them costs little. A table whose late writes are bounded more
 * tightly (a queue whose rows are only written by live requests) may declare less.
 */
export const DEFAULT_GC_GRACE_SECONDS = 864_000;

/** The largest grace period CQL accepts (a 32-bit signed number of seconds). */
const MAX_GC_GRACE_SECONDS = 2 ** 31 - 1;

/** A value as features see it: uuids are lower-case strings, bigint/counter are bigints. */
export type CqlValue = string | number | bigint | boolean | Date | null;

/** A row or a key, by column name. */
export type Row = Record<string, CqlValue>;

/**
 * The identifier rule, for keyspaces, tables and columns alike: an unquoted lower-case
 * CQL name of at most 48 characters (Cassandra's limit on keyspace and table names), so
 * both stores can use it as it is.
 */
const IDENTIFIER = /^[a-z][a-z0-9_]{0,47}$/;

/**
 * Refuse a keyspace, table or column name the identifier rule does not allow, or a
 * reserved CQL keyword (DESIGN.md, semantic point 9). `where` names what is being
 * named: `keyspace "x"`, `table "x"`, `column "x" of table t`.
 */
export function checkIdentifier(where: string, name: string): void {
  if (!IDENTIFIER.test(name)) throw new Error(`${where}: a name must match ${IDENTIFIER}, got "${name}"`);
  if (isReservedCqlKeyword(name)) {
    throw new Error(`${where}: "${name}" is a reserved CQL keyword (CQL reference, appendix A); choose another name`);
  }
}

/**
 * Declare a table once; the declaration is validated here and frozen, so every
 * adapter can trust it.
 */
export function defineTable(spec: {
  name: string;
  columns: Record<string, CqlType>;
  partitionKey: string[];
  clustering?: Array<ClusteringColumn | string>;
  /** Cassandra's `gc_grace_seconds` for this table; DEFAULT_GC_GRACE_SECONDS when absent. */
  gcGraceSeconds?: number;
  /** Time-window compaction with windows of this many minutes (TTL'd time series). */
  timeWindowMinutes?: number;
  /** Leveled compaction (rows rewritten often, read for latency). */
  leveledCompaction?: boolean;
}): TableSpec {
  const clustering = (spec.clustering ?? []).map((c) =>
    typeof c === 'string' ? { column: c, order: 'ASC' as const } : { ...c },
  );
  const table: TableSpec = Object.freeze({
    name: spec.name,
    columns: Object.freeze({ ...spec.columns }),
    partitionKey: Object.freeze([...spec.partitionKey]),
    clustering: Object.freeze(clustering.map((c) => Object.freeze(c))),
    gcGraceSeconds: spec.gcGraceSeconds ?? DEFAULT_GC_GRACE_SECONDS,
    ...(spec.timeWindowMinutes !== undefined && { timeWindowMinutes: spec.timeWindowMinutes }),
    ...(spec.leveledCompaction && { leveledCompaction: true }),
  });
  checkTableSpec(table);
  return table;
}

/**
 * The rules of a declaration: identifiers (no reserved CQL keyword), a partition key,
 * declared non-counter key columns, and counters only beside counters. `defineTable`
 * applies them; adapters apply them again to whatever reaches `ensureTables`.
 */
export function checkTableSpec(spec: TableSpec): void {
  checkIdentifier(`table "${spec.name}"`, spec.name);
  for (const c of Object.keys(spec.columns)) checkIdentifier(`column "${c}" of table ${spec.name}`, c);
  if (spec.partitionKey.length === 0) throw new Error(`table ${spec.name} needs a partition key`);
  const keyColumns = keyColumnsOf(spec);
  for (const k of keyColumns) {
    const t = spec.columns[k];
    if (!t) throw new Error(`key column "${k}" of ${spec.name} is not declared`);
    if (t === 'counter') throw new Error(`key column "${k}" of ${spec.name} cannot be a counter`);
  }
  if (new Set(keyColumns).size !== keyColumns.length) {
    throw new Error(`table ${spec.name} repeats a key column`);
  }
  const grace = gcGraceSecondsOf(spec);
  if (!Number.isInteger(grace) || grace < 0 || grace > MAX_GC_GRACE_SECONDS) {
    throw new Error(`table ${spec.name}: gcGraceSeconds must be an integer between 0 and ${MAX_GC_GRACE_SECONDS}, got ${grace}`);
  }
  const window = spec.timeWindowMinutes;
  if (window !== undefined && (!Number.isInteger(window) || window < 1 || window > 525_600)) {
    throw new Error(`table ${spec.name}: timeWindowMinutes must be an integer between 1 and 525600, got ${window}`);
  }
  if (window !== undefined && spec.leveledCompaction) {
    throw new Error(`table ${spec.name}: one compaction strategy a table, got both timeWindowMinutes and leveledCompaction`);
  }
  const regular = regularColumnsOf(spec);
  const counters = regular.filter((c) => spec.columns[c] === 'counter');
  // CQL rule: a counter table holds only counters besides its primary key.
  if (counters.length > 0 && counters.length !== regular.length) {
    throw new Error(`table ${spec.name} mixes counter and non-counter columns`);
  }
}

/** A table's grace period in seconds (Cassandra's `gc_grace_seconds`). */
export function gcGraceSecondsOf(table: TableSpec): number {
  return table.gcGraceSeconds ?? DEFAULT_GC_GRACE_SECONDS;
}

/** Primary key columns in order: partition key, then clustering columns. */
export function keyColumnsOf(table: TableSpec): string[] {
  return [...table.partitionKey, ...table.clustering.map((c) => c.column)];
}

/** Columns that are not part of the primary key. */
export function regularColumnsOf(table: TableSpec): string[] {
  const keys = new Set(keyColumnsOf(table));
  return Object.keys(table.columns).filter((c) => !keys.has(c));
}

/** True for a table whose regular columns are counters. */
export function isCounterTable(table: TableSpec): boolean {
  const regular = regularColumnsOf(table);
  return regular.length > 0 && regular.every((c) => table.columns[c] === 'counter');
}

/** A table's key: its partition key columns and its clustering columns, in order, each with its clustering order. */
export interface TableKey {
  readonly partitionKey: readonly string[];
  readonly clustering: readonly ClusteringColumn[];
}

/**
 * How the key a store found for a table (`found`) differs from its declaration, one
 * phrase per difference naming the table (`name`) and both keys: "table relay.timeline
 * clustered by (post_id ASC), declared (post_id DESC)". Empty when they match. No
 * store can alter a key in place, so each adapter refuses to start on one.
 */
export function keyDifferencesOf(name: string, found: TableKey, table: TableSpec): string[] {
  const out: string[] = [];
  const partition = (key: TableKey) => key.partitionKey.join(', ');
  const clustering = (key: TableKey) => key.clustering.map((c) => `${c.column} ${c.order}`).join(', ');
  if (partition(found) !== partition(table)) out.push(`table ${name} partitioned by (${partition(found)}), declared (${partition(table)})`);
  if (clustering(found) !== clustering(table)) out.push(`table ${name} clustered by (${clustering(found)}), declared (${clustering(table)})`);
  return out;
}
