/**
 * `CassandraStore`: the production adapter of the store port, on the DataStax
 * `cassandra-driver`. Prepared statements throughout, LOCAL_QUORUM by default,
 * client-side timestamps from the same monotonic clock the embedded store uses,
 * idempotence flags on statements that are idempotent, per-key parallel reads instead
 * of multi-partition `IN` lists, and reads that follow `pageState` to their limit.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import cassandra from 'cassandra-driver';
import type {
  CellRead,
  ClusteringRange,
  ConditionalResult,
  DeleteOptions,
  Mutation,
  ScanPage,
  SliceQuery,
  Store,
  StoreWarning,
  WriteOptions,
} from '../port.js';
import { StoreOutcomeUnknownError, StoreRequestError, StoreStartupError, StoreUnavailableError } from '../port.js';
import type { Clock } from '../clock.js';
import { MonotonicClock } from '../clock.js';
import { activeTally, countStatements, noteLwtUnknown, noteTombstoneWarning, type StatementTally } from '../statements.js';
import type { CqlType, CqlValue, Row, TableSpec } from '../table.js';
import { checkIdentifier, isCounterTable, keyColumnsOf, regularColumnsOf } from '../table.js';
import {
  checkCellColumns,
  checkDeclarations,
  checkNotCounter,
  clusteringKeysOf,
  clusteringRangeOf,
  clusteringText,
  conditionsOf,
  counterDeltasOf,
  keyValueOf,
  limitOf,
  partitionKeyOf,
  primaryKeyOf,
  regularValuesOf,
  ttlOf,
  writeTimestampOf,
} from '../validate.js';
import { sameValue } from '../values.js';
import { ClientBatchlog, REPLAY_INTERVAL_MS, STORE_BATCHLOG_TABLES, TROUBLE_MS } from './cassandra-batchlog.js';
import { connectFailureOf, isBatchlogTimeout, oneLine, storeErrorFrom, type ConnectFailure } from './cassandra-errors.js';
import { cqlRestrictions, type SingleRange, type TupleRange } from './cassandra-ranges.js';
import { existingKeyOf, keyDifferences, schemaChanges, schemaDifferences, type ExistingSchema, type Replication } from './cassandra-schema.js';
import { boundUuid, fromDriver, knownValue, rowReader, toDriver } from './cassandra-values.js';
import { SendTurn } from './cassandra-send-turn.js';
import { RoutedReads } from './cassandra-routing.js';

const { types } = cassandra;

/** One row of a driver result, read by column name. */
export interface CassandraRowLike {
  get(column: string): unknown;
}

/** The part of a driver result set this adapter reads. */
export interface CassandraResultLike {
  readonly rows: CassandraRowLike[];
  /** Where the next page starts; null or absent on the last page. */
  readonly pageState?: string | null;
  /** Execution info; the driver sets `isSchemaInAgreement` after a schema change (not in its typings). */
  readonly info?: object;
  wasApplied(): boolean;
}

/** The slice of `cassandra.Client` this adapter uses (fault injection wraps it easily). */
export interface CassandraClientLike {
  connect(): Promise<void>;
  execute(query: string, params?: unknown[], options?: cassandra.QueryOptions): Promise<CassandraResultLike>;
  batch(
    queries: Array<{ query: string; params?: unknown[] }>,
    options?: cassandra.QueryOptions,
  ): Promise<CassandraResultLike>;
  /** The driver's metadata; its `checkSchemaAgreement()` exists at run time but not in its typings. */
  readonly metadata: object;
  /** The nodes the driver knows, up or down (the driver's own client has them; a fake may not). */
  readonly hosts?: { values(): ReadonlyArray<{ isUp(): boolean }> };
  shutdown(): Promise<void>;
}

/** What `ensureTables` does: create what is missing, or only check and refuse to start. */
export type SchemaMode = 'create' | 'check';

/** Options of `CassandraStore`; validated once and frozen. */
export interface CassandraStoreOptions {
  readonly client: CassandraClientLike;
  readonly keyspace: string;
  /**
   * The replication a keyspace is created with: SimpleStrategy with one replica when
   * absent; null: none was chosen, so `ensureTables` refuses to create the keyspace.
   */
  readonly replication?: Replication | null;
  /** Consistency of reads and writes; LOCAL_QUORUM by default. */
  readonly consistency?: cassandra.types.consistencies;
  /** Consistency of the Paxos phase of lightweight transactions; LOCAL_SERIAL by default. */
  readonly serialConsistency?: cassandra.types.consistencies;
  readonly clock?: Clock;
  /** Parallel reads per `getMany` call. */
  readonly readConcurrency?: number;
  /** Rows per page of a read (the driver's default is 5,000). */
  readonly fetchSize?: number;
  /** `create` (default): `ensureTables` creates what is missing; `check`: it refuses to start instead. */
  readonly schema?: SchemaMode;
  /** How long `ensureTables` keeps retrying an unreachable cluster; 0 (default): one attempt. */
  readonly connectTimeoutMs?: number;
  /** What a failed connection attempt means, and whether to try again (default: `connectFailureOf`). */
  readonly connectFailure?: (err: unknown) => ConnectFailure;
  /** One line per connection attempt and per schema change. */
  readonly log?: (message: string) => void;
  /** The server's warnings on a statement (tombstones, batch sizes); `log`, without key values, when absent. */
  readonly warn?: (warning: StoreWarning) => void;
  /**
   * How long the driver waits for a write's answer, in ms (the configuration's
   * `STORE_WRITE_TIMEOUT_MS`): past it the write's outcome is unknown, and it is never
   * sent again. Also the budget within which a batch the batchlog refused is re-sent.
   * Absent: the driver's own request timeout, and the default budget.
   */
  readonly writeTimeoutMs?: number;
}

/** The command the one-line refusal names when the schema is missing. */
const SCHEMA_HINT = 'create it with `npm run schema` (`node dist/scripts/schema.js` in the image), or set CASSANDRA_AUTO_SCHEMA=true';

/** Serial reads tried to learn the outcome of a lightweight transaction that failed. */
const SERIAL_READ_ATTEMPTS = 3;

/** The budget for re-sending a batch the batchlog refused, without `writeTimeoutMs`: Cassandra's default write timeout. */
const DEFAULT_BATCHLOG_BUDGET_MS = 2_000;

/**
 * Partitions whose keyed reads' options (with their token) are kept, in each of two
 * generations (`RoutedReads`): by estimate at most about 4 MB of options, tokens and key strings.
 */
const ROUTED_PARTITIONS = 8_192;

/** A statement and its bound values. */
/** One CQL statement and its bound values. */
export interface Statement {
  readonly query: string;
  readonly params: unknown[];
}

/**
 * What the adapter derives once per table rather than per call: its qualified name,
 * column lists, the statement text of a read by key, and the text of every other
 * statement shape met so far (a slice with these bounds, an upsert of these columns),
 * so a call binds values to a string it already has.
 */
interface TablePlan {
  readonly name: string;
  readonly selectList: string;
  /** Every column, in declaration order, and its type at the same index (a row's conversion). */
  readonly columnNames: readonly string[];
  readonly columnTypes: readonly CqlType[];
  /** A driver row of every column as a port row, in one object of the table's shape (`rowReader`). */
  readonly readRow: RowReading;
  /**
   * A row of `selectByKey`: the regular columns from the driver, the key columns from the
   * key read (`rowReader`'s `given`); every column from the driver when the table has no
   * regular column.
   */
  readonly readKeyed: RowReading;
  /** What a slice selects: every column but the partition key's, which `readSliced` takes from the partition read. */
  readonly sliceList: string;
  readonly readSliced: RowReading;
  readonly keyColumns: readonly string[];
  readonly keyTypes: readonly CqlType[];
  /** `k1 = ? AND k2 = ?` over the primary key. */
  readonly keyWhere: string;
  /** Every column of the row at a key (a lightweight transaction's serial read). */
  readonly selectRow: string;
  /** A keyed read (`get`, `getMany`): the regular columns of the row at a key. */
  readonly selectByKey: string;
  readonly counter: boolean;
  /** The partition key's one column when it is a uuid (keyed reads then carry their partition's token: cassandra-routing.ts), else null. */
  readonly routedBy: string | null;
  readonly regular: readonly string[];
  readonly statements: Map<string, string>;
}

/**
 * How a statement's rows are read: its reader (`rowReader`), and the columns it did not
 * select, which the reader takes from the key or partition the statement named.
 */
interface RowReading {
  readonly read: (raw: CassandraRowLike, known: Row) => Row;
  readonly known: readonly string[];
}

/** A reading of the table's `columns`, those named in `known` taken from the key or partition read. */
function rowReading(columns: ReadonlyArray<readonly [string, CqlType]>, known: readonly string[]): RowReading {
  return { read: rowReader(columns, new Set(known)), known };
}

/** No known values: the statement selected every column. */
const NONE: Row = Object.freeze({});

/** How a statement is sent: idempotent or not, and the rare exceptions (paging state, page size, consistency, unprepared DDL). */
interface RunOptions {
  readonly idempotent: boolean;
  /** A write: sent with the write timeout, and its errors say whether it may have been applied. */
  readonly write?: boolean;
  readonly pageState?: string;
  readonly fetchSize?: number;
  readonly consistency?: cassandra.types.consistencies;
  readonly prepare?: boolean;
}


/** The Cassandra adapter. */
export class CassandraStore implements Store {
  private readonly client: CassandraClientLike;
  private readonly keyspace: string;
  private readonly replication: Replication | null;
  private readonly consistency: cassandra.types.consistencies;
  private readonly serialConsistency: cassandra.types.consistencies;
  private readonly clock: Clock;
  private readonly readConcurrency: number;
  private readonly fetchSize: number;
  private readonly schema: SchemaMode;
  private readonly connectTimeoutMs: number;
  private readonly connectFailure: (err: unknown) => ConnectFailure;
  private readonly log: (message: string) => void;
  private readonly warn: (warning: StoreWarning) => void;
  private readonly plans = new WeakMap<TableSpec, TablePlan>();
  /** The driver options of the two common cases, built once (the driver only reads them). */
  private readonly idempotentOptions: cassandra.QueryOptions;
  private readonly nonIdempotentOptions: cassandra.QueryOptions;
  private readonly idempotentWriteOptions: cassandra.QueryOptions;
  private readonly nonIdempotentWriteOptions: cassandra.QueryOptions;
  private readonly writeTimeoutMs: number | undefined;
  /** The adapter's own batchlog, used while Cassandra's cannot be written (cassandra-batchlog.ts). */
  private readonly batchlog: ClientBatchlog;
  /** Until when logged batches go through the adapter's batchlog after a `BATCH_LOG` timeout. */
  private batchlogTroubleUntil = 0;
  /** Whether the last logged batch went through the adapter's batchlog (a change is logged). */
  private usingOwnBatchlog = false;
  private replayTimer: NodeJS.Timeout | null = null;
  private readonly sendTurn = new SendTurn();
  /** Keyed reads' options with their partition's token, for tables keyed by one uuid (cassandra-routing.ts). */
  private readonly routedReads: RoutedReads;

  constructor(options: CassandraStoreOptions) {
    checkIdentifier(`keyspace "${options.keyspace}"`, options.keyspace);
    this.client = options.client;
    this.keyspace = options.keyspace;
    this.replication = options.replication === null ? null : Object.freeze(options.replication ?? { class: 'SimpleStrategy', replication_factor: 1 });
    this.consistency = options.consistency ?? types.consistencies.localQuorum;
    this.serialConsistency = options.serialConsistency ?? types.consistencies.localSerial;
    if (this.serialConsistency !== types.consistencies.serial && this.serialConsistency !== types.consistencies.localSerial) {
      throw new Error(`serialConsistency must be SERIAL or LOCAL_SERIAL, got ${this.serialConsistency}`);
    }
    this.clock = options.clock ?? new MonotonicClock();
    this.readConcurrency = positiveInteger('readConcurrency', options.readConcurrency ?? 32);
    this.fetchSize = positiveInteger('fetchSize', options.fetchSize ?? 5_000);
    this.schema = options.schema ?? 'create';
    this.connectTimeoutMs = options.connectTimeoutMs ?? 0;
    this.connectFailure = options.connectFailure ?? connectFailureOf;
    this.log = options.log ?? (() => undefined);
    this.warn = options.warn ?? ((warning) => this.log(warning.message));
    this.writeTimeoutMs = options.writeTimeoutMs === undefined ? undefined : positiveInteger('writeTimeoutMs', options.writeTimeoutMs);
    this.idempotentOptions = this.queryOptions({ idempotent: true });
    this.nonIdempotentOptions = this.queryOptions({ idempotent: false });
    this.idempotentWriteOptions = this.queryOptions({ idempotent: true, write: true });
    this.nonIdempotentWriteOptions = this.queryOptions({ idempotent: false, write: true });
    this.routedReads = new RoutedReads(this.client.metadata, this.idempotentOptions, ROUTED_PARTITIONS);
    this.batchlog = new ClientBatchlog({
      store: this,
      unlogged: (statements, timeoutMs, tally) => this.runUnlogged(tally, [...statements], timeoutMs ?? this.writeTimeoutMs),
      // Cassandra replays its batchlog after twice the write timeout; a little more here.
      replayAfterMs: Math.max(10_000, 4 * (this.writeTimeoutMs ?? DEFAULT_BATCHLOG_BUDGET_MS)),
      log: this.log,
    });
  }

  /**
   * Connect (retrying while `connectTimeoutMs` allows), then create what is missing, or
   * in `check` mode refuse with one line naming it (DESIGN.md: schema set up once, by
   * `npm run schema`, not raced by every server start).
   */
  async ensureTables(declared: readonly TableSpec[]): Promise<void> {
    const tables = withOwnTables(declared);
    checkDeclarations(tables);
    await this.connect();
    if (this.writeTimeoutMs !== undefined) await this.checkWriteTimeout(this.writeTimeoutMs);
    let existing = await this.existingSchema();
    if (this.schema === 'create') {
      if (!existing.keyspace && this.replication === null) {
        throw new StoreStartupError(
          `creating keyspace ${this.keyspace} needs its replication chosen: set CASSANDRA_REPLICATION, e.g. NetworkTopologyStrategy:<data centre>=3 (three replicas in each data centre)`,
        );
      }
      // One line per change, numbered and timed: on a ring each waits for every node to agree.
      const changes = schemaChanges(this.keyspace, this.replication!, existing, tables);
      const started = Date.now();
      for (const [i, cql] of changes.entries()) {
        const at = Date.now();
        await this.ddl(cql);
        this.log(`schema change ${i + 1} of ${changes.length} in ${seconds(Date.now() - at)} (${seconds(Date.now() - started)} in all): ${cql}`);
      }
      existing = await this.existingSchema();
    }
    const keyed = keyDifferences(this.keyspace, existing, tables);
    if (keyed.length > 0) {
      // Pages of such a table come out in another order, without an error: refuse it.
      throw new StoreStartupError(
        `the Cassandra schema keys tables otherwise than declared: ${keyed.join(', ')}; a primary key cannot be altered: copy the rows into a table created as declared (or drop it, when its rows may go, and run \`npm run schema\`)`,
      );
    }
    const differences = schemaDifferences(this.keyspace, existing, tables);
    if (differences.length > 0) {
      const verb = this.schema === 'create' ? 'differs from the declarations' : 'is missing';
      throw new StoreStartupError(`the Cassandra schema ${verb}: ${differences.join(', ')}; ${SCHEMA_HINT}`);
    }
    this.startReplays();
  }

  async get(table: TableSpec, key: Row): Promise<Row | null> {
    const tally = activeTally();
    const pk = primaryKeyOf(table, key);
    const plan = this.plan(table);
    const result = await this.run(tally, { query: plan.selectByKey, params: this.keyParams(plan, pk) }, { idempotent: true });
    return this.liveRow(table, result.rows[0], false, plan.readKeyed, pk);
  }

  async getMany(table: TableSpec, keys: readonly Row[]): Promise<Array<Row | null>> {
    const tally = activeTally();
    if (keys.length === 0) return [];
    const plan = this.plan(table);
    // Every key is checked before any read is sent, and bound at once, without a validated copy of it.
    // A key's bound values go once it is sent (the driver holds them while the read is in
    // flight): the page's later reads do not keep the first ones' alive (issue 39, round four).
    const bound: Array<unknown[] | undefined> = keys.map((k) => this.boundKey(table, plan, k));
    const routed = plan.routedBy;
    // One wait for the send turn for the first reads, not one per key.
    await this.sendTurn.next();
    // One statement per key, each to its own replicas, at most `readConcurrency` in flight:
    // the first ones at once, the later ones as answers arrive, at the next send turn as
    // any read. A page's keyed reads are most of its statements (101 of a 50-edge
    // suspendedUsers page's 103), so each is one `then` on the driver's promise with one
    // closure, for its answer: no async function, statement object or failure handler of
    // its own, and the reads that answers free wait for their turn together, in one
    // `then` a turn rather than one each. What a page keeps alive while its reads are in
    // flight is what the young generation's scavenges copy (docs/benchmarks-history.md,
    // issue 39: the keyed reads).
    return new Promise((resolve, reject) => {
      const out = new Array<Row | null>(bound.length).fill(null);
      let sent = 0;
      let answered = 0;
      /** Reads an answer freed, to be sent at the next send turn. */
      let due = 0;
      let failed = false;
      const fail = (err: unknown): void => {
        if (failed) return;
        failed = true;
        reject(storeErrorFrom(err));
      };
      const send = (): void => {
        const i = sent++;
        countStatements(tally);
        const params = bound[i]!;
        bound[i] = undefined;
        // A table keyed by one uuid: the partition's token goes with the read, not worked out again by the driver.
        const partition = routed ? params[0] : undefined;
        const options = partition instanceof types.Uuid ? this.routedReads.optionsOf(keys[i]![routed!] as string, partition.getBuffer()) : this.idempotentOptions;
        let answer: Promise<CassandraResultLike>;
        try {
          answer = this.client.execute(plan.selectByKey, params, options);
        } catch (err) {
          answer = Promise.reject(err);
        }
        answer.then((result) => {
          if (failed) return;
          try {
            if (hasWarnings(result)) this.reportWarnings(tally, result, [{ query: plan.selectByKey, params }]);
            out[i] = this.liveRow(table, result.rows[0], false, plan.readKeyed, keys[i]);
          } catch (err) {
            failed = true;
            reject(err);
            return;
          }
          if (++answered === bound.length) resolve(out);
          else if (sent + due < bound.length && due++ === 0) void this.sendTurn.next().then(sendDue);
        }, fail);
      };
      const sendDue = (): void => {
        for (; due > 0; due--) if (!failed) send();
      };
      for (let n = Math.min(this.readConcurrency, bound.length); n > 0; n--) send();
    });
  }

  async getInPartition(table: TableSpec, partition: Row, keys: readonly Row[]): Promise<Array<Row | null>> {
    const tally = activeTally();
    const pk = partitionKeyOf(table, partition);
    const clusterings = clusteringKeysOf(table, keys);
    if (clusterings.length === 0) return [];
    const plan = this.plan(table);
    let text = plan.statements.get('in');
    if (text === undefined) {
      // One IN over the clustering tuple, bound as one list of tuples: one prepared
      // statement whatever the number of keys. Cassandra answers in clustering order,
      // each row once however often it was asked for.
      const where = table.partitionKey.map((k) => `${k} = ?`).join(' AND ');
      text = `SELECT ${plan.selectList} FROM ${plan.name} WHERE ${where} AND (${table.clustering.map((c) => c.column).join(', ')}) IN ?`;
      plan.statements.set('in', text);
    }
    const clusteringTypes = table.clustering.map(({ column }) => table.columns[column]!);
    const params: unknown[] = table.partitionKey.map((k) => toDriver(table.columns[k]!, pk[k]!));
    params.push(clusterings.map((values) => new types.Tuple(...values.map((v, i) => toDriver(clusteringTypes[i]!, v)))));
    const statement = { query: text, params };
    const byKey = new Map<string, Row>();
    let pageState: string | undefined;
    do {
      const result = await this.run(tally, statement, { idempotent: true, pageState });
      for (const r of result.rows) {
        const row = this.liveRow(table, r);
        if (row) byKey.set(clusteringText(table, table.clustering.map(({ column }) => row[column]!)), row);
      }
      pageState = result.pageState ?? undefined;
    } while (pageState);
    return clusterings.map((values) => byKey.get(clusteringText(table, values)) ?? null);
  }

  async slice(table: TableSpec, query: SliceQuery): Promise<Row[]> {
    const tally = activeTally();
    const limit = limitOf(query.limit);
    const partition = partitionKeyOf(table, query.partition);
    const restrictions = this.restrictions(table, clusteringRangeOf(table, query));
    if (limit === 0) return [];
    if (query.reverse) restrictions.reverse();
    const plan = this.plan(table);
    const rows: Row[] = [];
    // Restrictions come in clustering order: read each to its end (every page of it),
    // then the next, until the limit is met.
    for (const restriction of restrictions) {
      const params = this.rangeParams(table, partition, restriction);
      params.push(limit - rows.length);
      const shape = `slice${query.reverse ? '<' : '>'}${rangeShape(restriction)}`;
      let text = plan.statements.get(shape);
      if (text === undefined) {
        const order = table.clustering.length
          ? ` ORDER BY ${table.clustering.map((c) => `${c.column} ${(c.order === 'ASC') !== Boolean(query.reverse) ? 'ASC' : 'DESC'}`).join(', ')}`
          : '';
        text = `SELECT ${plan.sliceList} FROM ${plan.name} WHERE ${this.rangeWhere(table, restriction)}${order} LIMIT ?`;
        plan.statements.set(shape, text);
      }
      const statement = { query: text, params };
      let pageState: string | undefined;
      do {
        const result = await this.run(tally, statement, { idempotent: true, pageState });
        for (const r of result.rows) {
          const row = this.liveRow(table, r, false, plan.readSliced, partition);
          if (row) rows.push(row);
        }
        pageState = result.pageState ?? undefined;
      } while (pageState && rows.length < limit);
      if (rows.length >= limit) break;
    }
    return rows.length > limit ? rows.slice(0, limit) : rows;
  }

  async scan(table: TableSpec, options: { readonly limit: number; readonly after?: string | null }): Promise<ScanPage> {
    const tally = activeTally();
    const limit = limitOf(options.limit);
    if (limit === 0) return { rows: [], next: options.after ?? null };
    // One driver page: `fetchSize` rows from the paging state the page before returned.
    const result = await this.run(
      tally,
      { query: `SELECT ${this.selectList(table)} FROM ${this.name(table)}`, params: [] },
      { idempotent: true, fetchSize: limit, ...(options.after ? { pageState: options.after } : {}) },
    );
    const rows: Row[] = [];
    for (const r of result.rows) {
      const row = this.liveRow(table, r);
      if (row) rows.push(row);
    }
    return { rows, next: result.pageState ?? null };
  }

  async readCells(table: TableSpec, key: Row, columns: readonly string[]): Promise<CellRead> {
    const tally = activeTally();
    checkCellColumns(table, columns);
    const pk = primaryKeyOf(table, key);
    const { where, params } = this.keyWhere(table, pk);
    const meta = columns.flatMap((c) => [`WRITETIME(${c}) AS w_${c}`, `TTL(${c}) AS x_${c}`]);
    const result = await this.run(
      tally,
      { query: `SELECT ${[this.selectList(table), ...meta].join(', ')} FROM ${this.name(table)} WHERE ${where}`, params },
      { idempotent: true },
    );
    const raw = result.rows[0];
    const row = this.liveRow(table, raw);
    const writetime: Record<string, bigint | null> = {};
    const ttl: Record<string, number | null> = {};
    for (const c of columns) {
      const w = raw?.get(`w_${c}`);
      const x = raw?.get(`x_${c}`);
      writetime[c] = w === null || w === undefined ? null : BigInt(w as bigint);
      ttl[c] = x === null || x === undefined ? null : Number(x);
    }
    return { row, writetime, ttl };
  }

  async upsert(table: TableSpec, row: Row, options?: WriteOptions): Promise<void> {
    const tally = activeTally();
    await this.run(tally, this.upsertStatement(table, row, options), { idempotent: true, write: true });
  }

  async delete(table: TableSpec, key: Row, options?: DeleteOptions): Promise<void> {
    const tally = activeTally();
    await this.run(tally, this.deleteStatement(table, key, options), { idempotent: true, write: true });
  }

  async deleteRange(table: TableSpec, partition: Row, range: ClusteringRange, options?: DeleteOptions): Promise<void> {
    const tally = activeTally();
    const statements = this.rangeDeleteStatements(table, partition, range, options);
    if (statements.length === 0) return;
    // A mixed-order range is several statements on one partition: one atomic batch.
    if (statements.length === 1) await this.run(tally, statements[0]!, { idempotent: true, write: true });
    else await this.runBatch(tally, statements);
  }

  async increment(table: TableSpec, key: Row, deltas: Readonly<Record<string, bigint | number>>): Promise<void> {
    const tally = activeTally();
    const d = counterDeltasOf(table, deltas);
    const pk = primaryKeyOf(table, key);
    const { where, params } = this.keyWhere(table, pk);
    const cols = Object.keys(d);
    // Not idempotent: the driver must never retry it on its own.
    await this.run(
      tally,
      {
        query: `UPDATE ${this.name(table)} SET ${cols.map((c) => `${c} = ${c} + ?`).join(', ')} WHERE ${where}`,
        params: [...cols.map((c) => d[c]), ...params],
      },
      { idempotent: false, write: true },
    );
  }

  async insertIfNotExists(table: TableSpec, row: Row, options?: { ttl?: number }): Promise<ConditionalResult> {
    const tally = activeTally();
    const values = regularValuesOf(table, row);
    const pk = primaryKeyOf(table, row);
    const ttl = ttlOf(options?.ttl, Date.now());
    const mine: Row = { ...values, ...pk };
    const cols = Object.keys(mine);
    const statement = {
      query: `INSERT INTO ${this.name(table)} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')}) IF NOT EXISTS USING TTL ?`,
      params: [...cols.map((c) => toDriver(table.columns[c]!, mine[c]!)), ttl],
    };
    const result = await this.runConditional(tally, table, pk, statement, (current) => {
      // The outcome of a transaction that timed out: applied if the row now is ours.
      if (current === null) return null;
      const ours = cols.every((c) => sameCell(table, c, current[c] ?? null, mine[c] ?? null));
      return ours ? { applied: true, existing: null } : { applied: false, existing: current };
    });
    if ('applied' in result) return result;
    if (result.wasApplied()) return { applied: true, existing: null };
    return { applied: false, existing: this.liveRow(table, result.rows[0], true) };
  }

  async deleteIf(table: TableSpec, key: Row, expected?: Row): Promise<boolean> {
    const tally = activeTally();
    const conditions = conditionsOf(table, expected);
    const pk = primaryKeyOf(table, key);
    const { where, params } = this.keyWhere(table, pk);
    const names = Object.keys(conditions);
    const statement = {
      query: `DELETE FROM ${this.name(table)} WHERE ${where} IF ${names.length ? names.map((c) => `${c} = ?`).join(' AND ') : 'EXISTS'}`,
      params: [...params, ...names.map((c) => toDriver(table.columns[c]!, conditions[c]!))],
    };
    const result = await this.runConditional(tally, table, pk, statement, (current) => {
      // The outcome of a transaction that timed out: gone means deleted; still there and
      // still matching means it did not apply, and cannot be answered either way.
      if (current === null) return true;
      const matches = names.every((c) => sameCell(table, c, current[c] ?? null, conditions[c]!));
      return matches ? null : false;
    });
    return typeof result === 'boolean' ? result : result.wasApplied();
  }

  async batch(mutations: readonly Mutation[]): Promise<void> {
    const tally = activeTally();
    // Build (and so validate) every statement before sending any.
    for (const m of mutations) checkNotCounter(m.table, 'logged batches');
    const statements = mutations.flatMap((m) => {
      switch (m.kind) {
        case 'upsert':
          return [this.upsertStatement(m.table, m.row, m.options)];
        case 'delete':
          return [this.deleteStatement(m.table, m.key, m.options)];
        case 'deleteRange':
          return this.rangeDeleteStatements(m.table, m.partition, m, m.options);
      }
    });
    if (statements.length === 0) return;
    await this.runBatch(tally, statements);
  }

  async ping(): Promise<void> {
    await this.run(activeTally(), { query: 'SELECT release_version FROM system.local', params: [] }, { idempotent: true });
  }

  async checkSchema(tables: readonly TableSpec[]): Promise<string[]> {
    return schemaDifferences(this.keyspace, await this.existingSchema(activeTally()), withOwnTables(tables));
  }

  async close(): Promise<void> {
    if (this.replayTimer) clearInterval(this.replayTimer);
    this.replayTimer = null;
    await this.client.shutdown();
  }

  // ---- internals -------------------------------------------------------------

  /** The table's plan, made on first use. */
  private plan(table: TableSpec): TablePlan {
    let plan = this.plans.get(table);
    if (plan === undefined) {
      const name = `${this.keyspace}.${table.name}`;
      const selectList = Object.keys(table.columns).join(', ');
      const keyColumns = keyColumnsOf(table);
      const keyWhere = keyColumns.map((c) => `${c} = ?`).join(' AND ');
      const columns = Object.entries(table.columns);
      const regular = regularColumnsOf(table);
      // A statement selects what its key or partition does not already say (when there
      // is anything else to select): Cassandra sends, and the driver decodes, less.
      const sliced = Object.keys(table.columns).filter((c) => !table.partitionKey.includes(c));
      plan = {
        name,
        selectList,
        columnNames: Object.keys(table.columns),
        columnTypes: Object.values(table.columns),
        readRow: rowReading(columns, []),
        readKeyed: rowReading(columns, regular.length > 0 ? keyColumns : []),
        sliceList: sliced.length > 0 ? sliced.join(', ') : selectList,
        readSliced: rowReading(columns, sliced.length > 0 ? table.partitionKey : []),
        keyColumns,
        keyTypes: keyColumns.map((c) => table.columns[c]!),
        keyWhere,
        selectRow: `SELECT ${selectList} FROM ${name} WHERE ${keyWhere}`,
        selectByKey: `SELECT ${regular.length > 0 ? regular.join(', ') : selectList} FROM ${name} WHERE ${keyWhere}`,
        counter: isCounterTable(table),
        routedBy: table.partitionKey.length === 1 && /^(uuid|timeuuid)$/.test(table.columns[table.partitionKey[0]!]!) ? table.partitionKey[0]! : null,
        regular,
        statements: new Map(),
      };
      this.plans.set(table, plan);
    }
    return plan;
  }

  private name(table: TableSpec): string {
    return this.plan(table).name;
  }

  private selectList(table: TableSpec): string {
    return this.plan(table).selectList;
  }

  /** The driver's options for `options` (the two common cases are built once, in the constructor). */
  private queryOptions(options: RunOptions): cassandra.QueryOptions {
    return {
      prepare: options.prepare ?? true,
      consistency: options.consistency ?? this.consistency,
      serialConsistency: this.serialConsistency,
      isIdempotent: options.idempotent,
      ...(options.write && this.writeTimeoutMs !== undefined ? { readTimeout: this.writeTimeoutMs } : {}),
      fetchSize: options.fetchSize ?? this.fetchSize,
      ...(options.pageState ? { pageState: options.pageState } : {}),
    };
  }

  /** Every statement goes through here: counted, and its errors made store errors. */
  private async run(tally: StatementTally | undefined, statement: Statement, options: RunOptions): Promise<CassandraResultLike> {
    countStatements(tally);
    const common = options.pageState === undefined && options.fetchSize === undefined && options.consistency === undefined && options.prepare === undefined;
    const driverOptions = common ? this.commonOptions(options) : this.queryOptions(options);
    let result: CassandraResultLike;
    try {
      // Reads wait for the loop's check phase, so that the reads of requests that arrived together share a socket write.
      if (!options.write) await this.sendTurn.next();
      result = await this.client.execute(statement.query, statement.params, driverOptions);
    } catch (err) {
      throw storeErrorFrom(err, { write: options.write });
    }
    this.reportWarnings(tally, result, [statement]);
    return result;
  }

  /**
   * The server's warnings on a result (a read that passed over more than
   * tombstone_warn_threshold tombstones, say), each reported with the statement's table
   * and values apart and its text without them (`storeWarningOf`): the embedded store
   * reports the same warning for the same read. Tombstone warnings are also noted on
   * the call's tally, for the metrics.
   */
  private reportWarnings(tally: StatementTally | undefined, result: CassandraResultLike, statements: readonly Statement[]): void {
    if (!hasWarnings(result)) return;
    const warnings = (result.info as { warnings: readonly string[] }).warnings;
    for (const w of warnings) {
      const warning = storeWarningOf(w, statements);
      this.warn(warning);
      if (warning.kind === 'tombstones') noteTombstoneWarning(tally);
    }
  }

  /** The prebuilt driver options of a statement with no exceptions. */
  private commonOptions(options: RunOptions): cassandra.QueryOptions {
    if (options.write) return options.idempotent ? this.idempotentWriteOptions : this.nonIdempotentWriteOptions;
    return options.idempotent ? this.idempotentOptions : this.nonIdempotentOptions;
  }

  /**
   * A logged batch: one statement sent, applied all or nothing. A write timeout of type
   * `BATCH_LOG` means the coordinator could not write the batchlog, so nothing of the
   * batch was applied: it is sent again at once, while the write budget lasts, with what
   * is left of it as its timeout, so that the batch still lands within the window its
   * timestamps assume. Another coordinator would most often pick the same unreachable
   * node for its batchlog (on three nodes, every one does), so it goes through the
   * adapter's own batchlog instead, as every logged batch does while the driver sees a
   * node down (cassandra-batchlog.ts).
   */
  private async runBatch(tally: StatementTally | undefined, statements: Statement[]): Promise<void> {
    const budget = this.writeTimeoutMs ?? DEFAULT_BATCHLOG_BUDGET_MS;
    const started = Date.now();
    for (;;) {
      if (this.ownBatchlogNeeded()) return this.batchlog.apply(statements, started + budget, tally);
      const left = budget - (Date.now() - started);
      try {
        return await this.sendBatch(tally, statements, true, this.writeTimeoutMs !== undefined ? Math.max(1, left) : undefined);
      } catch (err) {
        if (isBatchlogTimeout(err)) this.batchlogTroubleUntil = Date.now() + TROUBLE_MS;
        if (isBatchlogTimeout(err) && budget - (Date.now() - started) > 0) {
          this.log(`batchlog write timed out, nothing applied; sending the batch again through the adapter's batchlog (${oneLine(err)})`);
          continue;
        }
        throw storeErrorFrom(err, { write: true });
      }
    }
  }

  /** One batch sent, logged or not, waiting `timeoutMs` for its answer (the driver's timeout when undefined); driver errors as they are. */
  private async sendBatch(tally: StatementTally | undefined, statements: Statement[], logged: boolean, timeoutMs: number | undefined): Promise<void> {
    countStatements(tally);
    const result = await this.client.batch(statements, {
      prepare: true,
      logged,
      consistency: this.consistency,
      isIdempotent: true,
      ...(timeoutMs !== undefined ? { readTimeout: timeoutMs } : {}),
    });
    this.reportWarnings(tally, result, statements);
  }

  /**
   * Whether a logged batch goes through the adapter's batchlog now: while the driver
   * sees a node down (the coordinators may still count it live, and pick it for their
   * batchlog, until their failure detectors convict it), and for a while after a
   * `BATCH_LOG` timeout (cassandra-batchlog.ts).
   */
  private ownBatchlogNeeded(): boolean {
    const needed = Date.now() < this.batchlogTroubleUntil || (this.client.hosts?.values().some((h) => !h.isUp()) ?? false);
    if (needed !== this.usingOwnBatchlog) {
      this.usingOwnBatchlog = needed;
      this.log(
        needed
          ? "a node is down or Cassandra's batchlog timed out: logged batches go through the adapter's batchlog (store_batchlog) for now"
          : "every node is up: logged batches use Cassandra's batchlog again",
      );
    }
    return needed;
  }

  /** An unlogged batch: each statement applied on its own replicas, no batchlog (the adapter's own log covers it). */
  private async runUnlogged(tally: StatementTally | undefined, statements: Statement[], timeoutMs: number | undefined): Promise<void> {
    try {
      await this.sendBatch(tally, statements, false, timeoutMs);
    } catch (err) {
      throw storeErrorFrom(err, { write: true });
    }
  }

  /** Replay passes over the adapter's batchlog, now and every REPLAY_INTERVAL_MS, until `close`. */
  private startReplays(): void {
    if (this.replayTimer) return;
    const pass = () =>
      void this.batchlog.replay().catch((err) => this.log(`a replay pass over the adapter's batchlog failed (${oneLine(err)}); the next one tries again`));
    this.replayTimer = setInterval(pass, REPLAY_INTERVAL_MS);
    this.replayTimer.unref();
    pass();
  }

  /**
   * A lightweight transaction. One that fails other than by being invalid (a timeout,
   * say) has an unknown outcome (DESIGN.md, semantic point 11): read the row at SERIAL,
   * which also finishes any round left in progress, and let `resolve` answer as if the
   * transaction had returned; null means the outcome is still unknown: unavailable.
   */
  private async runConditional<T>(
    tally: StatementTally | undefined,
    table: TableSpec,
    key: Row,
    statement: Statement,
    resolve: (current: Row | null) => T | null,
  ): Promise<CassandraResultLike | T> {
    try {
      return await this.run(tally, statement, { idempotent: false, write: true });
    } catch (err) {
      if (err instanceof StoreRequestError) throw err;
      let answer: T | null = null;
      // Under contention the serial read can time out too: a few tries, a little apart.
      for (let attempt = 0; attempt < SERIAL_READ_ATTEMPTS && answer === null; attempt++) {
        if (attempt > 0) await sleep(50 * 2 ** attempt + Math.random() * 50);
        try {
          const read = await this.run(tally, this.selectRow(table, key), { idempotent: true, consistency: this.serialConsistency });
          answer = resolve(this.liveRow(table, read.rows[0]));
          break;
        } catch {
          // The serial read failed as well: the outcome is still unknown.
        }
      }
      if (answer === null) {
        noteLwtUnknown(tally, 'given-up');
        // Unknown only if the transaction may have been applied (a CAS timeout, say); one
        // refused before anything was written stays unavailable.
        const Failure = err instanceof StoreOutcomeUnknownError ? StoreOutcomeUnknownError : StoreUnavailableError;
        throw new Failure(`a lightweight transaction on ${table.name} failed and its outcome could not be learned: ${oneLine(err)}`, {
          cause: err,
          timedOut: err instanceof StoreUnavailableError && err.timedOut,
        });
      }
      noteLwtUnknown(tally, 'settled');
      return answer;
    }
  }

  /**
   * Connect, retrying an unreachable cluster with backoff until `connectTimeoutMs` has
   * passed (an attempt still pending then is given up), and refusing at once what
   * retrying cannot fix: a refused password, an untrusted certificate.
   */
  private async connect(): Promise<void> {
    const started = Date.now();
    let previous: ConnectFailure | null = null;
    for (let attempt = 1; ; attempt++) {
      let failure: ConnectFailure;
      let cause: unknown;
      try {
        if (await this.attemptConnect(started + this.connectTimeoutMs)) return;
        // The attempt cut short says nothing: the one before it says why.
        const before = previous ? `; the attempt before: ${previous.reason}` : '';
        failure = { reason: `no answer within the connect timeout (${seconds(this.connectTimeoutMs)})${before}`, retry: false };
      } catch (err) {
        cause = err;
        failure = this.connectFailure(err);
        if (!failure.retry) throw new StoreStartupError(`Cassandra refused the connection: ${failure.reason}`, { cause: err });
      }
      const elapsed = Date.now() - started;
      const left = this.connectTimeoutMs - elapsed;
      if (!failure.retry || left <= 0) {
        throw new StoreStartupError(`Cassandra unreachable after ${attempt} attempt(s) in ${Math.round(elapsed / 1000)} s: ${failure.reason}`, { cause });
      }
      previous = failure;
      // 0.5 s, 1 s, 2 s, … at most 10 s between attempts.
      const wait = Math.min(500 * 2 ** (attempt - 1), 10_000, left);
      this.log(`Cassandra not reachable (attempt ${attempt}: ${failure.reason}); retrying in ${(wait / 1000).toFixed(1)} s`);
      await sleep(wait);
    }
  }

  /**
   * One `connect` of the driver: true once connected, false when a timeout is set and
   * the attempt has not settled by `deadline` (a node that accepts the TCP connection
   * and never answers would otherwise hold start-up for the driver's read timeout).
   */
  private async attemptConnect(deadline: number): Promise<boolean> {
    if (this.connectTimeoutMs <= 0) {
      await this.client.connect();
      return true;
    }
    const abandon = new AbortController();
    const connecting = this.client.connect().then(() => true);
    try {
      return await Promise.race([
        connecting,
        sleep(Math.max(deadline - Date.now(), 0), false, { signal: abandon.signal }).catch(() => false), // aborted: the attempt settled first
      ]);
    } finally {
      abandon.abort();
      // The attempt given up may still fail later: that failure is nobody's.
      connecting.catch(() => undefined);
    }
  }

  /**
   * Refuse to start when the cluster's coordinators wait longer for a write
   * (`write_request_timeout` in cassandra.yaml, read from `system_views.settings`) than
   * this server's write timeout: the driver would give up on writes the coordinator is
   * still applying, so they would land later than the late-write window assumes, and no
   * `BATCH_LOG` answer would ever arrive in time to be retried. A cluster without the
   * settings view (before Cassandra 4.0) is not checked, and the log says so.
   */
  private async checkWriteTimeout(writeTimeoutMs: number): Promise<void> {
    let coordinatorMs: number | null = null;
    try {
      const result = await this.run(
        undefined,
        {
          query: "SELECT name, value FROM system_views.settings WHERE name IN ('write_request_timeout', 'write_request_timeout_in_ms')",
          params: [],
        },
        { idempotent: true, prepare: false },
      );
      for (const row of result.rows) {
        const ms = millisecondsOf(String(row.get('value')));
        if (ms !== null) coordinatorMs = Math.max(coordinatorMs ?? 0, ms);
      }
    } catch (err) {
      this.log(`the cluster's write_request_timeout could not be read (${oneLine(err)}); the write timeout is not checked against it`);
      return;
    }
    if (coordinatorMs !== null && coordinatorMs > writeTimeoutMs) {
      throw new StoreStartupError(
        `the cluster's write_request_timeout (cassandra.yaml) is ${coordinatorMs} ms, above this server's write timeout of ${writeTimeoutMs} ms ` +
          `(STORE_WRITE_TIMEOUT_MS): set STORE_WRITE_TIMEOUT_MS to at least ${coordinatorMs}, or lower write_request_timeout`,
      );
    }
  }

  /** The keyspace's tables and columns, from `system_schema`. */
  private async existingSchema(tally?: StatementTally): Promise<ExistingSchema> {
    const keyspaces = await this.run(
      tally,
      { query: 'SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?', params: [this.keyspace] },
      { idempotent: true },
    );
    const columns = await this.run(
      tally,
      {
        query: 'SELECT table_name, column_name, type, kind, position, clustering_order FROM system_schema.columns WHERE keyspace_name = ?',
        params: [this.keyspace],
      },
      { idempotent: true },
    );
    const options = await this.run(
      tally,
      { query: 'SELECT table_name, gc_grace_seconds, compaction FROM system_schema.tables WHERE keyspace_name = ?', params: [this.keyspace] },
      { idempotent: true },
    );
    const tables = new Map<string, Map<string, string>>();
    const keyColumns = new Map<string, Array<{ column: string; kind: string; position: number; clusteringOrder: string }>>();
    for (const r of columns.rows) {
      const table = String(r.get('table_name'));
      const column = String(r.get('column_name'));
      if (!tables.has(table)) tables.set(table, new Map());
      tables.get(table)!.set(column, String(r.get('type')));
      const kind = String(r.get('kind'));
      if (kind !== 'partition_key' && kind !== 'clustering') continue;
      if (!keyColumns.has(table)) keyColumns.set(table, []);
      keyColumns.get(table)!.push({ column, kind, position: Number(r.get('position')), clusteringOrder: String(r.get('clustering_order')) });
    }
    const keys = new Map([...tables.keys()].map((table) => [table, existingKeyOf(keyColumns.get(table) ?? [])]));
    const gcGraceSeconds = new Map(options.rows.map((r) => [String(r.get('table_name')), Number(r.get('gc_grace_seconds'))]));
    // (A map<text, text>; a fake cluster in a test may hold none: nothing to compare.)
    const compaction = new Map(options.rows.flatMap((r) => {
      const map = r.get('compaction') as Record<string, string> | null | undefined;
      return map ? [[String(r.get('table_name')), map] as const] : [];
    }));
    return { keyspace: keyspaces.rows.length > 0, tables, gcGraceSeconds, compaction, keys };
  }

  /** One schema change, then wait until every node agrees on the schema before the next. */
  private async ddl(cql: string): Promise<void> {
    const result = await this.run(undefined, { query: cql, params: [] }, { idempotent: true, prepare: false });
    if ((result.info as { isSchemaInAgreement?: boolean } | undefined)?.isSchemaInAgreement !== false) return;
    // The driver waits up to 10 s itself (protocolOptions.maxSchemaAgreementWaitSeconds)
    // before answering; the nodes still disagree, so wait here, saying so.
    const started = Date.now();
    const deadline = started + 60_000;
    this.log(`waiting for schema agreement (up to 60 s: the nodes still disagree) on: ${cql.slice(0, 80)}`);
    const metadata = this.client.metadata as { checkSchemaAgreement(): Promise<boolean> };
    while (!(await metadata.checkSchemaAgreement())) {
      if (Date.now() > deadline) throw new StoreUnavailableError(`no schema agreement 60 s after: ${cql}`);
      await sleep(500);
    }
    this.log(`schema agreement after ${seconds(Date.now() - started)} more`);
  }

  /** Every column of the row at a validated key. */
  private selectRow(table: TableSpec, key: Row): Statement {
    const plan = this.plan(table);
    return { query: plan.selectRow, params: this.keyParams(plan, key) };
  }

  private keyWhere(table: TableSpec, key: Row): { where: string; params: unknown[] } {
    const plan = this.plan(table);
    return { where: plan.keyWhere, params: this.keyParams(plan, key) };
  }

  /** A validated primary key's values, bound as the driver takes them. */
  private keyParams(plan: TablePlan, key: Row): unknown[] {
    const params = new Array<unknown>(plan.keyColumns.length);
    for (let i = 0; i < params.length; i++) params[i] = toDriver(plan.keyTypes[i]!, key[plan.keyColumns[i]!]!);
    return params;
  }

  /** A primary key's values, checked as `primaryKeyOf` checks them, and bound as the driver takes them. */
  private boundKey(table: TableSpec, plan: TablePlan, key: Row): unknown[] {
    const params = new Array<unknown>(plan.keyColumns.length);
    for (let i = 0; i < params.length; i++) {
      const type = plan.keyTypes[i]!;
      const column = plan.keyColumns[i]!;
      const value = key[column];
      // A uuid is checked by reading its bytes; anything else (and a bad uuid, to say why) as `primaryKeyOf` checks it.
      const uuid = (type === 'uuid' || type === 'timeuuid') && typeof value === 'string' ? boundUuid(type, value) : null;
      params[i] = uuid ?? toDriver(type, keyValueOf(table, key, column));
    }
    return params;
  }

  /** CQL restrictions for a validated range (see cassandra-ranges.ts). */
  private restrictions(table: TableSpec, range: ClusteringRange): Array<SingleRange | TupleRange> {
    const columns = table.clustering.map((c) => ({ column: c.column, type: table.columns[c.column]!, order: c.order }));
    return cqlRestrictions(columns, range);
  }

  /** The WHERE clause of a restriction on one partition (its text depends only on the restriction's shape). */
  private rangeWhere(table: TableSpec, restriction: SingleRange | TupleRange): string {
    const parts = table.partitionKey.map((k) => `${k} = ?`);
    if ('tuple' in restriction) {
      for (const b of restriction.tuple) {
        const columns = table.clustering.slice(0, b.values.length).map((c) => c.column);
        parts.push(`(${columns.join(', ')}) ${b.op} (${columns.map(() => '?').join(', ')})`);
      }
      return parts.join(' AND ');
    }
    restriction.equal.forEach((_, i) => parts.push(`${table.clustering[i]!.column} = ?`));
    const next = table.clustering[restriction.equal.length];
    for (const b of restriction.bounds) parts.push(`${next!.column} ${b.op} ?`);
    return parts.join(' AND ');
  }

  /** The values `rangeWhere`'s text binds, in its order. */
  private rangeParams(table: TableSpec, partition: Row, restriction: SingleRange | TupleRange): unknown[] {
    const params: unknown[] = [];
    const bind = (column: string, value: CqlValue) => params.push(toDriver(table.columns[column]!, value));
    for (const k of table.partitionKey) bind(k, partition[k]!);
    if ('tuple' in restriction) {
      for (const b of restriction.tuple) b.values.forEach((v, i) => bind(table.clustering[i]!.column, v));
      return params;
    }
    restriction.equal.forEach((v, i) => bind(table.clustering[i]!.column, v));
    const next = table.clustering[restriction.equal.length];
    for (const b of restriction.bounds) bind(next!.column, b.value);
    return params;
  }

  private upsertStatement(table: TableSpec, row: Row, options?: WriteOptions): Statement {
    const values = regularValuesOf(table, row);
    const pk = primaryKeyOf(table, row);
    const ts = writeTimestampOf(options?.timestamp, () => this.clock.nowMicros());
    const ttl = ttlOf(options?.ttl, Date.now());
    const plan = this.plan(table);
    const cols = [...plan.keyColumns, ...Object.keys(values)];
    const all: Row = { ...values, ...pk };
    const shape = `upsert:${cols.join(',')}`;
    let text = plan.statements.get(shape);
    if (text === undefined) {
      text = `INSERT INTO ${plan.name} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')}) USING TIMESTAMP ? AND TTL ?`;
      plan.statements.set(shape, text);
    }
    return { query: text, params: [...cols.map((c) => toDriver(table.columns[c]!, all[c]!)), ts, ttl] };
  }

  private deleteStatement(table: TableSpec, key: Row, options?: DeleteOptions): Statement {
    checkNotCounter(table, 'deletes');
    const pk = primaryKeyOf(table, key);
    const ts = writeTimestampOf(options?.timestamp, () => this.clock.nowMicros());
    const { where, params } = this.keyWhere(table, pk);
    return { query: `DELETE FROM ${this.name(table)} USING TIMESTAMP ? WHERE ${where}`, params: [ts, ...params] };
  }

  private rangeDeleteStatements(table: TableSpec, partition: Row, range: ClusteringRange, options?: DeleteOptions): Statement[] {
    checkNotCounter(table, 'range deletes');
    const pk = partitionKeyOf(table, partition);
    const checked = clusteringRangeOf(table, range);
    const ts = writeTimestampOf(options?.timestamp, () => this.clock.nowMicros());
    return this.restrictions(table, checked).map((r) => ({
      query: `DELETE FROM ${this.name(table)} USING TIMESTAMP ? WHERE ${this.rangeWhere(table, r)}`,
      params: [ts, ...this.rangeParams(table, pk, r)],
    }));
  }

  /**
   * A driver row as a port row, or null when Cassandra returned nothing live. `reading`
   * says which columns the statement selected (every one by default); the others come
   * from `known`, the key or partition it read (validated before it was sent).
   */
  private liveRow(table: TableSpec, raw: CassandraRowLike | undefined, lenient = false, reading?: RowReading, known: Row = NONE): Row | null {
    if (!raw) return null;
    const plan = this.plan(table);
    const how = reading ?? plan.readRow;
    let out: Row;
    try {
      out = how.read(raw, known);
    } catch {
      // A row that cannot give a column (a client other than the driver's): column by column, to say which.
      out = this.rowByColumn(plan, table, raw, lenient, how, known);
    }
    // A counter row whose counters are all null does not exist (CQL returns no row, but be safe).
    if (plan.counter && plan.regular.every((c) => out[c] === null)) return null;
    return out;
  }

  /** `liveRow`'s slow path: a missing column is an error, or null when `lenient`. */
  private rowByColumn(plan: TablePlan, table: TableSpec, raw: CassandraRowLike, lenient: boolean, reading: RowReading, known: Row): Row {
    const { columnNames, columnTypes } = plan;
    const out: Row = {};
    for (let i = 0; i < columnNames.length; i++) {
      const c = columnNames[i]!;
      if (reading.known.includes(c)) {
        out[c] = knownValue(columnTypes[i]!, known[c]!);
        continue;
      }
      let v: unknown;
      try {
        v = raw.get(c);
      } catch {
        if (!lenient) throw new StoreRequestError(`column ${c} missing from a ${table.name} result`);
        v = null;
      }
      out[c] = fromDriver(columnTypes[i]!, v as CqlValue);
    }
    return out;
  }

}

/** Whether the server sent warnings with a result (`reportWarnings`). */
function hasWarnings(result: CassandraResultLike): boolean {
  return Boolean((result.info as { warnings?: readonly string[] } | undefined)?.warnings);
}

/** The declared tables and the adapter's own (its batchlog), once each. */
function withOwnTables(tables: readonly TableSpec[]): TableSpec[] {
  return [...tables, ...STORE_BATCHLOG_TABLES.filter((t) => !tables.some((d) => d.name === t.name))];
}

/** What a restriction's WHERE text depends on (not its values): a key for the statement cache. */
function rangeShape(restriction: SingleRange | TupleRange): string {
  if ('tuple' in restriction) return `t${restriction.tuple.map((b) => `${b.op}${b.values.length}`).join('')}`;
  return `s${restriction.equal.length}${restriction.bounds.map((b) => b.op).join('')}`;
}

/** A duration in ms as seconds for a log line ("1.3 s"). */
function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got ${value}`);
  return value;
}

function sameCell(table: TableSpec, column: string, a: CqlValue, b: CqlValue): boolean {
  return sameValue(table.columns[column]!, a, b);
}

/** A replica's tombstone line, and the coordinator's summary of its replicas' (`read_thresholds_enabled`). */
const TOMBSTONE_WARNING = /Read (\d+) live rows and (\d+) tombstone cells|(\d+) nodes scanned up to (\d+) tombstones and issued tombstone warnings/;

/**
 * A warning of Cassandra's as the store reports it: the table of the (first) statement
 * it came for, its values apart, and its text without them. Cassandra's tombstone line
 * prints the query with its partition key ("… WHERE user_id = 3f2c… LIMIT 100; token
 * …"): it is rebuilt from the counts alone. Any other warning loses what follows a
 * WHERE, and its quoted literals.
 */
export function storeWarningOf(text: string, statements: readonly Statement[]): StoreWarning {
  const first = statements[0];
  const table = first ? (/\b(?:FROM|INTO|UPDATE)\s+(?:"?\w+"?\.)?"?(\w+)"?/i.exec(first.query)?.[1] ?? null) : null;
  const keyValues = statements.flatMap((s) => s.params);
  const m = TOMBSTONE_WARNING.exec(text);
  if (m) {
    const tombstones = Number(m[2] ?? m[4]);
    const message = m[1] !== undefined
      ? `Read ${m[1]} live rows and ${tombstones} tombstone cells for a query of ${table ?? 'a table'} (see tombstone_warn_threshold)`
      : `${m[3]} nodes scanned up to ${tombstones} tombstones and issued tombstone warnings for a query of ${table ?? 'a table'}`;
    return { table, kind: 'tombstones', tombstones, message, keyValues };
  }
  const cut = text.search(/\sWHERE\s/i);
  const message = (cut < 0 ? text : `${text.slice(0, cut)} WHERE …`).replace(/'(?:[^']|'')*'/g, "'…'");
  return { table, kind: 'other', message, keyValues };
}


/**
 * A duration as `system_views.settings` shows it, in ms: `2000ms`, `2s`, or a bare
 * number of ms (Cassandra 4.0's `write_request_timeout_in_ms`); null for anything else.
 */
export function millisecondsOf(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|us|µs)?\s*$/i.exec(text);
  if (!m) return null;
  const n = Number(m[1]);
  const unit = (m[2] ?? 'ms').toLowerCase();
  const factor: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, us: 0.001, 'µs': 0.001 };
  return n * factor[unit]!;
}
