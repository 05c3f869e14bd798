/**
 * The store port: a small interface shaped like Cassandra, not like SQL. Features and
 * sagas talk only to this; `SqliteStore` and `CassandraStore` implement it, and the
 * contract suite (test/contract) proves both show the same semantics.
 */
import type { CqlValue, Row, TableSpec } from './table.js';

/**
 * A bound on the clustering tuple, in clustering order. `values` is a prefix of the
 * clustering columns; a bound on a prefix covers every row sharing that prefix.
 */
export interface ClusteringBound {
  readonly values: readonly CqlValue[];
  readonly inclusive: boolean;
}

/** A clustering range: the rows between two optional bounds, in clustering order. */
export interface ClusteringRange {
  /** Lowest clustering position covered, in clustering order. */
  readonly lower?: ClusteringBound;
  /** Highest clustering position covered, in clustering order. */
  readonly upper?: ClusteringBound;
}

/** One partition, read in clustering order (or its exact reverse). */
export interface SliceQuery extends ClusteringRange {
  /** Every partition key column, by equality. */
  readonly partition: Row;
  /** Read from the end of clustering order towards its start. */
  readonly reverse?: boolean;
  readonly limit: number;
}

/** Options of a write: `USING TIMESTAMP` (microseconds) and `USING TTL` (seconds). */
export interface WriteOptions {
  readonly timestamp?: bigint;
  readonly ttl?: number;
}

/** Options of a delete: `USING TIMESTAMP` (microseconds). */
export interface DeleteOptions {
  readonly timestamp?: bigint;
}

/** What `readCells` returns for one row: values plus per-cell write time and TTL. */
export interface CellRead {
  readonly row: Row | null;
  readonly writetime: Readonly<Record<string, bigint | null>>;
  readonly ttl: Readonly<Record<string, number | null>>;
}

/** Outcome of an insert-if-not-exists (a lightweight transaction). */
export interface ConditionalResult {
  readonly applied: boolean;
  /** The row that prevented the insert, when not applied. */
  readonly existing: Row | null;
}

/** One page of a full-table scan (`Store.scan`). */
export interface ScanPage {
  /** Rows of this page: whole partitions in the store's own order, clustering order within one. */
  readonly rows: Row[];
  /** Where the next page starts (pass it as `after`); null when the table has been read to its end. */
  readonly next: string | null;
}

/** A mutation inside a logged batch. */
export type Mutation =
  | { readonly kind: 'upsert'; readonly table: TableSpec; readonly row: Row; readonly options?: WriteOptions }
  | { readonly kind: 'delete'; readonly table: TableSpec; readonly key: Row; readonly options?: DeleteOptions }
  | ({
      readonly kind: 'deleteRange';
      readonly table: TableSpec;
      readonly partition: Row;
      readonly options?: DeleteOptions;
    } & ClusteringRange);

/**
 * The operations every adapter provides. Each call is one round trip (and is
 * counted by `CountingStore`).
 */
export interface Store {
  /** Create the tables that do not exist yet (idempotent). */
  ensureTables(tables: readonly TableSpec[]): Promise<void>;
  /** Read one row by its full primary key. */
  get(table: TableSpec, key: Row): Promise<Row | null>;
  /** Read many rows by full primary key, results in key order, null for misses. */
  getMany(table: TableSpec, keys: readonly Row[]): Promise<Array<Row | null>>;
  /**
   * Read several rows of one partition by their clustering keys, in one statement
   * (`WHERE pk = ? AND (c1, …) IN ?`): results in the order of `keys` (each key holds
   * every clustering column), null for misses. For a few rows of one partition that one
   * read should bring together (a counted index's lists), not for keys of many
   * partitions (`getMany`). At most `MAX_PARTITION_KEYS` keys; a table without
   * clustering columns has one row a partition (`get`).
   */
  getInPartition(table: TableSpec, partition: Row, keys: readonly Row[]): Promise<Array<Row | null>>;
  /** Read one partition between optional clustering bounds, in order or reversed. */
  slice(table: TableSpec, query: SliceQuery): Promise<Row[]>;
  /**
   * Read a whole table, a page of up to `limit` rows at a time, from where the page
   * before stopped (`after`: its `next`). Partitions come in the store's own order (the
   * partitioner's token order on Cassandra), not by any column; a page may hold fewer
   * rows than `limit` before the end. For maintenance jobs that must visit every row
   * (recounts), never for a request: it reads the whole table.
   */
  scan(table: TableSpec, options: { readonly limit: number; readonly after?: string | null }): Promise<ScanPage>;
  /** Read one row with `WRITETIME` and `TTL` of the named regular columns. */
  readCells(table: TableSpec, key: Row, columns: readonly string[]): Promise<CellRead>;
  /** Insert or update (CQL INSERT: also writes the row marker). */
  upsert(table: TableSpec, row: Row, options?: WriteOptions): Promise<void>;
  /** Delete one row by full primary key. */
  delete(table: TableSpec, key: Row, options?: DeleteOptions): Promise<void>;
  /** Delete a clustering range (or, with no bounds, the whole partition). */
  deleteRange(table: TableSpec, partition: Row, range: ClusteringRange, options?: DeleteOptions): Promise<void>;
  /** Add to counter columns; not idempotent, takes no timestamp. */
  increment(table: TableSpec, key: Row, deltas: Readonly<Record<string, bigint | number>>): Promise<void>;
  /**
   * `INSERT … IF NOT EXISTS`: a Paxos round, so its cells carry the coordinator's
   * ballot timestamp, not the caller's clock. Remove such a row with `deleteIf`.
   */
  insertIfNotExists(table: TableSpec, row: Row, options?: { ttl?: number }): Promise<ConditionalResult>;
  /**
   * `DELETE … IF EXISTS`, or with `expected`, `DELETE … IF col = ? AND …` on regular
   * columns: a Paxos round like `insertIfNotExists`, the only safe way to remove a row
   * written by one. True when the row was deleted.
   */
  deleteIf(table: TableSpec, key: Row, expected?: Row): Promise<boolean>;
  /** A logged batch: all mutations apply, or none. */
  batch(mutations: readonly Mutation[]): Promise<void>;
  /** A cheap round trip proving the store answers. */
  ping(): Promise<void>;
  /**
   * What the store lacks of `tables` (each declared table with its columns), as short
   * phrases ("table users", "column users.name"); empty when the schema is complete.
   * Creates nothing. For /readyz: a store that answers but lost a table is not ready.
   */
  checkSchema(tables: readonly TableSpec[]): Promise<string[]>;
  /** Release connections and files. */
  close(): Promise<void>;
}

/** The error an adapter throws for a request the CQL rules refuse (bad column, key writetime, …). */
export class StoreRequestError extends Error {
  override readonly name = 'StoreRequestError';
}

/**
 * A warning the database gave about one statement (a read that passed over too many
 * tombstones, an oversized batch). Its message never holds the statement's values
 * (Cassandra's own text quotes the partition key: user ids, name prefixes); they come
 * apart, in `keyValues`, for a log to hash, never to print.
 */
export interface StoreWarning {
  /** The table the statement addressed (null when it is not known). */
  readonly table: string | null;
  readonly kind: 'tombstones' | 'other';
  /** For a tombstone warning, how many tombstones the read passed over. */
  readonly tombstones?: number;
  /** The warning's text without the statement's values. */
  readonly message: string;
  /** The statement's key values (and bounds): tell repeats of one key apart; never logged as they are. */
  readonly keyValues: readonly unknown[];
}

/**
 * The store could not answer now (replicas unavailable, a read timeout, no host
 * reachable, a write never sent). Nothing was written (`StoreOutcomeUnknownError`, a
 * subclass, says when a write may have been); the request may be retried.
 */
export class StoreUnavailableError extends Error {
  override readonly name: string = 'StoreUnavailableError';
  /** The store gave up waiting (a driver or replica timeout), rather than refusing at once. */
  readonly timedOut: boolean;

  constructor(message: string, options?: ErrorOptions & { readonly timedOut?: boolean }) {
    super(message, options);
    this.timedOut = options?.timedOut ?? false;
  }
}

/**
 * A write was sent and its outcome is unknown: the store may have applied it, may apply
 * it later, or may never (a write timeout of any write type but `BATCH_LOG`, a
 * lightweight transaction whose outcome could not be learned, the connection lost after
 * sending). Retrying it blindly may apply it twice; a mutation retried under the same
 * idempotency key takes effect once. A subclass of `StoreUnavailableError`, so what
 * treats every store failure alike (sagas compensate, jobs retry their pass) still does.
 */
export class StoreOutcomeUnknownError extends StoreUnavailableError {
  override readonly name = 'StoreOutcomeUnknownError';
}

/**
 * The store refused to finish a read because of what it found in the data: a slice that
 * passed over more tombstones than the failure threshold (Cassandra's
 * TombstoneOverwhelmingException, which reaches the driver as a ReadFailure). Retrying
 * the same read fails again; the data layout must change (a low-water mark, a
 * compaction past the grace period).
 */
export class StoreReadFailureError extends Error {
  override readonly name = 'StoreReadFailureError';
}

/**
 * The store cannot serve at all: unreachable at start-up, or its schema is missing.
 * The message is one line, fit to print as the reason a process exits.
 */
export class StoreStartupError extends Error {
  override readonly name = 'StoreStartupError';
}

/**
 * The most keys one `getInPartition` takes: one statement's IN list, kept short (each
 * key is a row the replica looks up; many keys belong to a slice or to `getMany`).
 */
export const MAX_PARTITION_KEYS = 100;

/** 2^63 - 1: the largest write timestamp CQL accepts. */
export const MAX_TIMESTAMP = (1n << 63n) - 1n;
