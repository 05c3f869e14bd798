/**
 * `CassandraStore`: the production adapter of the store port, on the DataStax
 * `cassandra-driver`. Prepared statements throughout, LOCAL_QUORUM by default,
 * client-side timestamps from the same monotonic clock the embedded store uses,
 * idempotence flags on statements that are idempotent, and per-key parallel reads
 * instead of multi-partition `IN` lists.
 */
import cassandra from 'cassandra-driver';
import type {
  CellRead,
  ClusteringRange,
  ConditionalResult,
  DeleteOptions,
  Mutation,
  SliceQuery,
  Store,
  WriteOptions,
} from '../port.js';
import { StoreRequestError } from '../port.js';
import type { Clock } from '../clock.js';
import { MonotonicClock } from '../clock.js';
import type { CqlValue, Row, TableSpec } from '../table.js';
import { checkIdentifier, keyColumnsOf, regularColumnsOf } from '../table.js';
import {
  checkCellColumns,
  clusteringRangeOf,
  counterDeltasOf,
  limitOf,
  partitionKeyOf,
  primaryKeyOf,
  regularValuesOf,
  ttlOf,
  writeTimestampOf,
} from '../validate.js';
import { addColumnCql, createKeyspaceCql, createTableCql, type Replication } from './cassandra-schema.js';
import { fromDriver, toDriver } from './cassandra-values.js';
import { splitClusteringRange, type SingleRange } from './cassandra-ranges.js';

const { types } = cassandra;

/** One row of a driver result, read by column name. */
export interface CassandraRowLike {
  get(column: string): unknown;
}

/** The part of a driver result set this adapter reads. */
export interface CassandraResultLike {
  readonly rows: CassandraRowLike[];
  wasApplied(): boolean;
}

/** The slice of `cassandra.Client` this adapter uses (fault injection wraps it easily). */
export interface CassandraClientLike {
  execute(query: string, params?: unknown[], options?: cassandra.QueryOptions): Promise<CassandraResultLike>;
  batch(
    queries: Array<{ query: string; params?: unknown[] }>,
    options?: cassandra.QueryOptions,
  ): Promise<CassandraResultLike>;
  shutdown(): Promise<void>;
}

/** Options of `CassandraStore`; validated once and frozen. */
export interface CassandraStoreOptions {
  readonly client: CassandraClientLike;
  readonly keyspace: string;
  readonly replication?: Replication;
  /** Consistency of reads and writes; LOCAL_QUORUM by default. */
  readonly consistency?: cassandra.types.consistencies;
  readonly clock?: Clock;
  /** Parallel reads per `getMany` call. */
  readonly readConcurrency?: number;
}

/** The Cassandra adapter. */
export class CassandraStore implements Store {
  private readonly client: CassandraClientLike;
  private readonly keyspace: string;
  private readonly replication: Replication;
  private readonly consistency: cassandra.types.consistencies;
  private readonly clock: Clock;
  private readonly readConcurrency: number;

  constructor(options: CassandraStoreOptions) {
    checkIdentifier('keyspace', options.keyspace);
    this.client = options.client;
    this.keyspace = options.keyspace;
    this.replication = Object.freeze(options.replication ?? { class: 'SimpleStrategy', replication_factor: 1 });
    this.consistency = options.consistency ?? types.consistencies.localQuorum;
    this.clock = options.clock ?? new MonotonicClock();
    this.readConcurrency = options.readConcurrency ?? 32;
    if (!Number.isInteger(this.readConcurrency) || this.readConcurrency < 1) {
      throw new Error(`readConcurrency must be a positive integer, got ${this.readConcurrency}`);
    }
  }

  async ensureTables(tables: readonly TableSpec[]): Promise<void> {
    await this.client.execute(createKeyspaceCql(this.keyspace, this.replication), [], {
      consistency: this.consistency,
    });
    for (const table of tables) {
      await this.client.execute(createTableCql(this.keyspace, table), [], { consistency: this.consistency });
      const existing = await this.client.execute(
        'SELECT column_name FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?',
        [this.keyspace, table.name],
        { prepare: true },
      );
      const names = new Set(existing.rows.map((r) => String(r.get('column_name'))));
      for (const cql of addColumnCql(this.keyspace, table, names)) {
        await this.client.execute(cql, [], { consistency: this.consistency });
      }
    }
  }

  async get(table: TableSpec, key: Row): Promise<Row | null> {
    const pk = primaryKeyOf(table, key);
    const { where, params } = this.keyWhere(table, pk);
    const result = await this.run(`SELECT ${this.selectList(table)} FROM ${this.name(table)} WHERE ${where}`, params, true);
    return this.liveRow(table, result.rows[0]);
  }

  async getMany(table: TableSpec, keys: readonly Row[]): Promise<Array<Row | null>> {
    const checked = keys.map((k) => primaryKeyOf(table, k));
    const out: Array<Row | null> = new Array(checked.length).fill(null);
    // One statement per key, a bounded number in flight: each goes to its own replicas.
    let next = 0;
    const worker = async () => {
      while (next < checked.length) {
        const i = next++;
        const { where, params } = this.keyWhere(table, checked[i]!);
        const result = await this.run(`SELECT ${this.selectList(table)} FROM ${this.name(table)} WHERE ${where}`, params, true);
        out[i] = this.liveRow(table, result.rows[0]);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.readConcurrency, checked.length) }, worker));
    return out;
  }

  async slice(table: TableSpec, query: SliceQuery): Promise<Row[]> {
    const limit = limitOf(query.limit);
    const partition = partitionKeyOf(table, query.partition);
    const range = clusteringRangeOf(table, query);
    if (limit === 0) return [];
    const ranges = this.ranges(table, range);
    if (query.reverse) ranges.reverse();
    const order = table.clustering.length
      ? ` ORDER BY ${table.clustering
          .map((c) => `${c.column} ${(c.order === 'ASC') !== Boolean(query.reverse) ? 'ASC' : 'DESC'}`)
          .join(', ')}`
      : '';
    const rows: Row[] = [];
    // Ranges come in clustering order: read them in turn until the limit is met.
    for (const range of ranges) {
      const { where, params } = this.rangeWhere(table, partition, range);
      const result = await this.run(
        `SELECT ${this.selectList(table)} FROM ${this.name(table)} WHERE ${where}${order} LIMIT ?`,
        [...params, limit - rows.length],
        true,
      );
      for (const r of result.rows) {
        const row = this.liveRow(table, r);
        if (row) rows.push(row);
      }
      if (rows.length >= limit) break;
    }
    return rows.slice(0, limit);
  }

  async readCells(table: TableSpec, key: Row, columns: readonly string[]): Promise<CellRead> {
    checkCellColumns(table, columns);
    const pk = primaryKeyOf(table, key);
    const { where, params } = this.keyWhere(table, pk);
    const meta = columns.flatMap((c) => [`WRITETIME(${c}) AS w_${c}`, `TTL(${c}) AS x_${c}`]);
    const result = await this.run(
      `SELECT ${[this.selectList(table), ...meta].join(', ')} FROM ${this.name(table)} WHERE ${where}`,
      params,
      true,
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
    const s = this.upsertStatement(table, row, options);
    await this.run(s.query, s.params, true);
  }

  async delete(table: TableSpec, key: Row, options?: DeleteOptions): Promise<void> {
    const s = this.deleteStatement(table, key, options);
    await this.run(s.query, s.params, true);
  }

  async deleteRange(table: TableSpec, partition: Row, range: ClusteringRange, options?: DeleteOptions): Promise<void> {
    const statements = this.rangeDeleteStatements(table, partition, range, options);
    if (statements.length === 0) return;
    if (statements.length === 1) {
      await this.run(statements[0]!.query, statements[0]!.params, true);
      return;
    }
    // A mixed-order range is several statements on one partition: one atomic batch.
    await this.client.batch(statements, { prepare: true, logged: true, consistency: this.consistency, isIdempotent: true });
  }

  async increment(table: TableSpec, key: Row, deltas: Readonly<Record<string, bigint | number>>): Promise<void> {
    const d = counterDeltasOf(table, deltas);
    const pk = primaryKeyOf(table, key);
    const { where, params } = this.keyWhere(table, pk);
    const cols = Object.keys(d);
    // Not idempotent: the driver must never retry it on its own.
    await this.run(
      `UPDATE ${this.name(table)} SET ${cols.map((c) => `${c} = ${c} + ?`).join(', ')} WHERE ${where}`,
      [...cols.map((c) => d[c]), ...params],
      false,
    );
  }

  async insertIfNotExists(table: TableSpec, row: Row, options?: { ttl?: number }): Promise<ConditionalResult> {
    const values = regularValuesOf(table, row);
    const pk = primaryKeyOf(table, row);
    const ttl = ttlOf(options?.ttl);
    const cols = [...keyColumnsOf(table), ...Object.keys(values)];
    const all: Row = { ...values, ...pk };
    const result = await this.client.execute(
      `INSERT INTO ${this.name(table)} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')}) IF NOT EXISTS USING TTL ?`,
      [...cols.map((c) => toDriver(table.columns[c]!, all[c]!)), ttl],
      {
        prepare: true,
        consistency: this.consistency,
        serialConsistency: types.consistencies.localSerial,
        isIdempotent: false,
      },
    );
    if (result.wasApplied()) return { applied: true, existing: null };
    return { applied: false, existing: this.liveRow(table, result.rows[0], true) };
  }

  async batch(mutations: readonly Mutation[]): Promise<void> {
    // Build (and so validate) every statement before sending any.
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
    await this.client.batch(statements, { prepare: true, logged: true, consistency: this.consistency, isIdempotent: true });
  }

  async ping(): Promise<void> {
    await this.client.execute('SELECT release_version FROM system.local', [], { prepare: true });
  }

  async close(): Promise<void> {
    await this.client.shutdown();
  }

  // ---- internals -------------------------------------------------------------

  private name(table: TableSpec): string {
    return `${this.keyspace}.${table.name}`;
  }

  private selectList(table: TableSpec): string {
    return Object.keys(table.columns).join(', ');
  }

  private async run(query: string, params: unknown[], idempotent: boolean): Promise<CassandraResultLike> {
    try {
      return await this.client.execute(query, params, {
        prepare: true,
        consistency: this.consistency,
        isIdempotent: idempotent,
      });
    } catch (err) {
      // The server's "invalid request" (0x2200) is the caller's mistake, as in SQLite.
      const code = (err as { code?: number }).code;
      if (code === 0x2200) throw new StoreRequestError((err as Error).message);
      throw err;
    }
  }

  private keyWhere(table: TableSpec, key: Row): { where: string; params: unknown[] } {
    const cols = keyColumnsOf(table);
    return {
      where: cols.map((c) => `${c} = ?`).join(' AND '),
      params: cols.map((c) => toDriver(table.columns[c]!, key[c]!)),
    };
  }

  /** Single-range restrictions for a validated range (see cassandra-ranges.ts). */
  private ranges(table: TableSpec, range: ClusteringRange): SingleRange[] {
    const columns = table.clustering.map((c) => ({ column: c.column, type: table.columns[c.column]!, order: c.order }));
    return splitClusteringRange(columns, range);
  }

  private rangeWhere(table: TableSpec, partition: Row, range: SingleRange): { where: string; params: unknown[] } {
    const parts: string[] = [];
    const params: unknown[] = [];
    for (const k of table.partitionKey) {
      parts.push(`${k} = ?`);
      params.push(toDriver(table.columns[k]!, partition[k]!));
    }
    range.equal.forEach((v, i) => {
      const { column } = table.clustering[i]!;
      parts.push(`${column} = ?`);
      params.push(toDriver(table.columns[column]!, v));
    });
    const next = table.clustering[range.equal.length];
    for (const b of range.bounds) {
      parts.push(`${next!.column} ${b.op} ?`);
      params.push(toDriver(table.columns[next!.column]!, b.value));
    }
    return { where: parts.join(' AND '), params };
  }

  private upsertStatement(table: TableSpec, row: Row, options?: WriteOptions): { query: string; params: unknown[] } {
    const values = regularValuesOf(table, row);
    const pk = primaryKeyOf(table, row);
    const ts = writeTimestampOf(options?.timestamp, () => this.clock.nowMicros());
    const ttl = ttlOf(options?.ttl);
    const cols = [...keyColumnsOf(table), ...Object.keys(values)];
    const all: Row = { ...values, ...pk };
    return {
      query: `INSERT INTO ${this.name(table)} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')}) USING TIMESTAMP ? AND TTL ?`,
      params: [...cols.map((c) => toDriver(table.columns[c]!, all[c]!)), ts, ttl],
    };
  }

  private deleteStatement(table: TableSpec, key: Row, options?: DeleteOptions): { query: string; params: unknown[] } {
    const pk = primaryKeyOf(table, key);
    const ts = writeTimestampOf(options?.timestamp, () => this.clock.nowMicros());
    const { where, params } = this.keyWhere(table, pk);
    return { query: `DELETE FROM ${this.name(table)} USING TIMESTAMP ? WHERE ${where}`, params: [ts, ...params] };
  }

  private rangeDeleteStatements(
    table: TableSpec,
    partition: Row,
    range: ClusteringRange,
    options?: DeleteOptions,
  ): Array<{ query: string; params: unknown[] }> {
    const pk = partitionKeyOf(table, partition);
    const checked = clusteringRangeOf(table, range);
    const ts = writeTimestampOf(options?.timestamp, () => this.clock.nowMicros());
    return this.ranges(table, checked).map((r) => {
      const { where, params } = this.rangeWhere(table, pk, r);
      return { query: `DELETE FROM ${this.name(table)} USING TIMESTAMP ? WHERE ${where}`, params: [ts, ...params] };
    });
  }

  /** A driver row as a port row, or null when Cassandra returned nothing live. */
  private liveRow(table: TableSpec, raw: CassandraRowLike | undefined, lenient = false): Row | null {
    if (!raw) return null;
    const out: Row = {};
    for (const [c, type] of Object.entries(table.columns)) {
      let v: unknown;
      try {
        v = raw.get(c);
      } catch {
        if (!lenient) throw new StoreRequestError(`column ${c} missing from a ${table.name} result`);
        v = null;
      }
      out[c] = fromDriver(type, v as CqlValue);
    }
    // A counter row whose counters are all null does not exist (CQL returns no row, but be safe).
    const regular = regularColumnsOf(table);
    if (regular.length > 0 && table.columns[regular[0]!] === 'counter' && regular.every((c) => out[c] === null)) {
      return null;
    }
    return out;
  }
}
