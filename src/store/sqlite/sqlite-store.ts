/**
 * `SqliteStore`: the embedded adapter of the store port, on better-sqlite3. It keeps
 * Cassandra's semantics rather than SQL's: every regular cell carries its own write
 * timestamp and expiry, the higher timestamp wins whatever the arrival order, deletes
 * are tombstones that also hide older writes arriving later, and clustering order is
 * Cassandra's per-type order (see values.ts).
 */
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
import type { CqlType, CqlValue, Row, TableSpec } from '../table.js';
import { keyColumnsOf } from '../table.js';
import {
  checkCellColumns,
  checkDeclarations,
  checkNotCounter,
  conditionsOf,
  counterDeltasOf,
  limitOf,
  primaryKeyOf,
  regularValuesOf,
  ttlOf,
  writeTimestampOf,
} from '../validate.js';
import {
  byteRange,
  encodeClustering,
  encodePartition,
  rangeParams,
  rangeWhere,
  rowByteRange,
  type ByteRange,
} from './sqlite-keys.js';
import { activeTally, countStatements } from '../statements.js';
import { sameValue } from '../values.js';
import { createStatements, layoutOf, physicalColumns, type SqliteLayout } from './sqlite-schema.js';
import { fromSql, serializedSql, toSql } from './sqlite-values.js';

/** The slice of a better-sqlite3 statement this adapter uses. */
export interface SqliteStatementLike {
  run(...params: unknown[]): unknown;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

/** The slice of a better-sqlite3 database this adapter uses. */
export interface SqliteDatabaseLike {
  prepare(sql: string): SqliteStatementLike;
  exec(sql: string): unknown;
  transaction(fn: () => void): { (): void; immediate(): void };
  defaultSafeIntegers(toggle?: boolean): unknown;
  pragma(source: string): unknown;
  close(): unknown;
}

/** Options of `SqliteStore`. */
export interface SqliteStoreOptions {
  readonly database: SqliteDatabaseLike;
  /** Source of default write timestamps (µs): the client's clock, as the driver's timestamp generator. */
  readonly clock?: Clock;
  /**
   * The coordinator's clock, source of Paxos ballots: insert-if-not-exists and
   * conditional deletes stamp their cells with it, never with `clock`.
   */
  readonly coordinatorClock?: Clock;
  /** Wall clock in ms, for TTL expiry. */
  readonly now?: () => number;
  /** How long a write waits for another process's write to finish (default 10 s). */
  readonly busyTimeoutMs?: number;
}

type PhysicalRow = Record<string, unknown>;

/** The embedded store; construct with a better-sqlite3 database (file or `:memory:`). */
export class SqliteStore implements Store {
  private readonly db: SqliteDatabaseLike;
  private readonly clock: Clock;
  private readonly coordinatorClock: Clock;
  private readonly now: () => number;
  private readonly statements = new Map<string, SqliteStatementLike>();
  private readonly layouts = new Map<string, SqliteLayout>();
  private readonly ensured = new Set<string>();

  constructor(options: SqliteStoreOptions) {
    this.db = options.database;
    this.clock = options.clock ?? new MonotonicClock();
    this.coordinatorClock = options.coordinatorClock ?? new MonotonicClock();
    this.now = options.now ?? Date.now;
    // Write timestamps reach 2^63-1 (seed 001), beyond a double: read integers as bigint.
    this.db.defaultSafeIntegers(true);
    // WAL: readers never block the writer. Another process (`npm run seed` beside the
    // server) may hold the write lock: wait for it rather than fail at once.
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 10_000}`);
  }

  /**
   * Run a write as one IMMEDIATE transaction: it takes the write lock first (waiting up
   * to the busy timeout). A deferred transaction that reads, then writes, would fail at
   * once with SQLITE_BUSY when another process wrote in between.
   */
  private write(fn: () => void): void {
    this.db.transaction(fn).immediate();
  }

  async ensureTables(tables: readonly TableSpec[]): Promise<void> {
    checkDeclarations(tables);
    this.write(() => {
      for (const table of tables) {
        const layout = this.layout(table);
        for (const sql of createStatements(layout)) this.db.exec(sql);
        // A declaration that grew a column since the file was created: add it.
        const existing = new Set(
          (this.db.prepare(`PRAGMA table_info("${layout.dataTable}")`).all() as Array<{ name: string }>).map(
            (c) => c.name,
          ),
        );
        for (const [name, type] of physicalColumns(layout)) {
          if (!existing.has(name)) this.db.exec(`ALTER TABLE "${layout.dataTable}" ADD COLUMN "${name}" ${type}`);
        }
        this.ensured.add(table.name);
      }
    });
  }

  async get(table: TableSpec, key: Row): Promise<Row | null> {
    this.count();
    return this.getSync(table, key);
  }

  async getMany(table: TableSpec, keys: readonly Row[]): Promise<Array<Row | null>> {
    this.count(keys.length);
    return keys.map((k) => this.getSync(table, k));
  }

  async slice(table: TableSpec, query: SliceQuery): Promise<Row[]> {
    this.count();
    const layout = this.checked(table);
    limitOf(query.limit);
    const pk = encodePartition(table, query.partition);
    const range = byteRange(table, query);
    if (range.empty || query.limit === 0) return [];
    const nowSec = this.nowSeconds();
    const sql = `SELECT * FROM "${layout.dataTable}" WHERE ${rangeWhere(range)} AND ${liveCondition(layout)} ORDER BY ck ${query.reverse ? 'DESC' : 'ASC'} LIMIT @limit`;
    const rows = this.stmt(sql).all({ pk, ...rangeParams(range), now: nowSec, limit: query.limit });
    return (rows as PhysicalRow[]).map((r) => this.decode(layout, r, nowSec));
  }

  async readCells(table: TableSpec, key: Row, columns: readonly string[]): Promise<CellRead> {
    this.count();
    const layout = this.checked(table);
    checkCellColumns(table, columns);
    const nowSec = this.nowSeconds();
    const physical = this.readPhysical(layout, key);
    const row = physical && isLive(layout, physical, nowSec) ? this.decode(layout, physical, nowSec) : null;
    const writetime: Record<string, bigint | null> = {};
    const ttl: Record<string, number | null> = {};
    for (const c of columns) {
      const live = physical !== null && cellLive(physical, c, nowSec);
      writetime[c] = live ? BigInt(physical[`w_${c}`] as bigint) : null;
      const x = physical?.[`x_${c}`];
      ttl[c] = live && x !== null && x !== undefined ? Number(x) - nowSec : null;
    }
    return { row, writetime, ttl };
  }

  async upsert(table: TableSpec, row: Row, options?: WriteOptions): Promise<void> {
    this.count();
    const prepared = this.prepareUpsert(table, row, options);
    this.write(() => this.applyUpsert(prepared));
  }

  async delete(table: TableSpec, key: Row, options?: DeleteOptions): Promise<void> {
    this.count();
    const prepared = this.prepareDelete(table, key, options);
    this.write(() => this.applyTombstone(prepared));
  }

  async deleteRange(table: TableSpec, partition: Row, range: ClusteringRange, options?: DeleteOptions): Promise<void> {
    this.count();
    const prepared = this.prepareRangeDelete(table, partition, range, options);
    this.write(() => this.applyTombstone(prepared));
  }

  async increment(table: TableSpec, key: Row, deltas: Readonly<Record<string, bigint | number>>): Promise<void> {
    this.count();
    const layout = this.checked(table);
    const checkedDeltas = counterDeltasOf(table, deltas);
    const cols = Object.keys(checkedDeltas);
    const params: Record<string, unknown> = this.keyParams(layout, primaryKeyOf(table, key));
    for (const c of cols) params[`d_${c}`] = checkedDeltas[c];
    const keyCols = ['pk', 'ck', ...keyColumnsOf(table).map((k) => `k_${k}`)];
    const sql =
      `INSERT INTO "${layout.dataTable}" (${[...keyCols, ...cols.map((c) => `v_${c}`)].map((c) => `"${c}"`).join(', ')}) ` +
      `VALUES (${[...keyCols.map((c) => `@${c}`), ...cols.map((c) => `@d_${c}`)].join(', ')}) ` +
      `ON CONFLICT (pk, ck) DO UPDATE SET ${cols.map((c) => `"v_${c}" = COALESCE("v_${c}", 0) + @d_${c}`).join(', ')}`;
    this.stmt(sql).run(params);
  }

  async insertIfNotExists(table: TableSpec, row: Row, options?: { ttl?: number }): Promise<ConditionalResult> {
    this.count();
    // A Paxos round: the cells carry the ballot's timestamp, from the coordinator's clock.
    const prepared = this.prepareUpsert(table, row, { ttl: options?.ttl, timestamp: this.coordinatorClock.nowMicros() });
    let result: ConditionalResult = { applied: false, existing: null };
    this.write(() => {
      const existing = this.getSync(table, row);
      if (existing) {
        result = { applied: false, existing };
        return;
      }
      this.applyUpsert(prepared);
      result = { applied: true, existing: null };
    });
    return result;
  }

  async deleteIf(table: TableSpec, key: Row, expected?: Row): Promise<boolean> {
    this.count();
    const conditions = conditionsOf(table, expected);
    const prepared = this.prepareDelete(table, key, { timestamp: this.coordinatorClock.nowMicros() });
    let applied = false;
    this.write(() => {
      const current = this.getSync(table, key);
      applied =
        current !== null &&
        Object.entries(conditions).every(([c, v]) => current[c] !== null && sameValue(table.columns[c]!, current[c]!, v));
      if (applied) this.applyTombstone(prepared);
    });
    return applied;
  }

  async batch(mutations: readonly Mutation[]): Promise<void> {
    this.count();
    // Validate every statement before applying any, as Cassandra does with a batch.
    for (const m of mutations) checkNotCounter(m.table, 'logged batches');
    const prepared = mutations.map((m) => {
      switch (m.kind) {
        case 'upsert':
          return { kind: 'upsert' as const, p: this.prepareUpsert(m.table, m.row, m.options) };
        case 'delete':
          return { kind: 'tomb' as const, p: this.prepareDelete(m.table, m.key, m.options) };
        case 'deleteRange':
          return {
            kind: 'tomb' as const,
            p: this.prepareRangeDelete(m.table, m.partition, m, m.options),
          };
      }
    });
    // One SQLite transaction: a logged batch applies all or nothing.
    this.write(() => {
      for (const m of prepared) {
        if (m.kind === 'upsert') this.applyUpsert(m.p);
        else this.applyTombstone(m.p);
      }
    });
  }

  async ping(): Promise<void> {
    this.count();
    this.stmt('SELECT 1').get();
  }

  async close(): Promise<void> {
    this.statements.clear();
    this.db.close();
  }

  // ---- internals -------------------------------------------------------------

  /** Each call answers its statements in one go, synchronously: count them where the call starts. */
  private count(statements = 1): void {
    countStatements(activeTally(), statements);
  }

  private layout(table: TableSpec): SqliteLayout {
    let l = this.layouts.get(table.name);
    if (!l || l.table !== table) {
      l = layoutOf(table);
      this.layouts.set(table.name, l);
    }
    return l;
  }

  private checked(table: TableSpec): SqliteLayout {
    if (!this.ensured.has(table.name)) {
      throw new StoreRequestError(`table ${table.name} does not exist (call ensureTables first)`);
    }
    return this.layout(table);
  }

  private stmt(sql: string): SqliteStatementLike {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  private nowSeconds(): number {
    return Math.floor(this.now() / 1000);
  }

  private keyParams(layout: SqliteLayout, key: Row): Record<string, unknown> {
    const { table } = layout;
    const params: Record<string, unknown> = {
      pk: encodePartition(table, key),
      ck: encodeClustering(table, key),
    };
    for (const k of keyColumnsOf(table)) params[`k_${k}`] = toSql(table.columns[k]!, key[k]!);
    return params;
  }

  private readPhysical(layout: SqliteLayout, key: Row): PhysicalRow | null {
    const keyRow = primaryKeyOf(layout.table, key);
    const row = this.stmt(`SELECT * FROM "${layout.dataTable}" WHERE pk = @pk AND ck = @ck`).get({
      pk: encodePartition(layout.table, keyRow),
      ck: encodeClustering(layout.table, keyRow),
    });
    return (row as PhysicalRow | undefined) ?? null;
  }

  private getSync(table: TableSpec, key: Row): Row | null {
    const layout = this.checked(table);
    const physical = this.readPhysical(layout, key);
    const nowSec = this.nowSeconds();
    if (!physical || !isLive(layout, physical, nowSec)) return null;
    return this.decode(layout, physical, nowSec);
  }

  private decode(layout: SqliteLayout, r: PhysicalRow, nowSec: number): Row {
    const { table } = layout;
    const out: Row = {};
    for (const k of keyColumnsOf(table)) out[k] = fromSql(table.columns[k]!, r[`k_${k}`]);
    for (const c of layout.regular) {
      out[c] = layout.counter || cellLive(r, c, nowSec) ? fromSql(table.columns[c]!, r[`v_${c}`]) : null;
    }
    return out;
  }

  private writeTimestamp(ts: bigint | undefined): bigint {
    return writeTimestampOf(ts, () => this.clock.nowMicros());
  }

  private prepareUpsert(table: TableSpec, row: Row, options?: WriteOptions): PreparedUpsert {
    const layout = this.checked(table);
    const values = regularValuesOf(table, row);
    const key = primaryKeyOf(table, row);
    return { layout, key, values, ts: this.writeTimestamp(options?.timestamp), ttl: ttlOf(options?.ttl, this.now()) };
  }

  private applyUpsert({ layout, key, values, ts, ttl }: PreparedUpsert): void {
    const { table } = layout;
    const params = this.keyParams(layout, key);
    const nowSec = this.nowSeconds();
    // A tombstone at or above this timestamp hides the write, even if it arrived first.
    const shadow = this.coveringTombstone(layout, params.pk as Buffer, params.ck as Buffer);
    if (shadow !== null && ts <= shadow) return;
    const existing = this.stmt(`SELECT * FROM "${layout.dataTable}" WHERE pk = @pk AND ck = @ck`).get({
      pk: params.pk,
      ck: params.ck,
    }) as PhysicalRow | undefined;
    const expiry = ttl > 0 ? BigInt(nowSec + ttl) : null;
    const merged: PhysicalRow = { ...(existing ?? {}), ...params };
    // The row marker (CQL INSERT), so a row with only null cells still exists.
    const markerW = existing?.row_w as bigint | null | undefined;
    if (markerW === null || markerW === undefined || ts >= markerW) {
      merged.row_w = ts;
      merged.row_x = expiry;
    }
    for (const [c, value] of Object.entries(values)) {
      const type = table.columns[c]!;
      const incoming: Cell = { value: toSql(type, value), w: ts, x: value === null ? null : expiry };
      const current: Cell | null =
        existing && existing[`w_${c}`] !== null && existing[`w_${c}`] !== undefined
          ? { value: existing[`v_${c}`] ?? null, w: existing[`w_${c}`] as bigint, x: (existing[`x_${c}`] as bigint) ?? null }
          : null;
      const winner = current ? reconcile(type, current, incoming, nowSec) : incoming;
      merged[`v_${c}`] = winner.value;
      merged[`w_${c}`] = winner.w;
      merged[`x_${c}`] = winner.x;
    }
    const cols = physicalColumns(layout).map(([n]) => n);
    const sql = `INSERT OR REPLACE INTO "${layout.dataTable}" (${cols.map((c) => `"${c}"`).join(', ')}) VALUES (${cols
      .map((c) => `@${c}`)
      .join(', ')})`;
    const bound: Record<string, unknown> = {};
    for (const c of cols) bound[c] = merged[c] ?? null;
    this.stmt(sql).run(bound);
  }

  private coveringTombstone(layout: SqliteLayout, pk: Buffer, ck: Buffer): bigint | null {
    const r = this.stmt(
      `SELECT MAX(ts) AS ts FROM "${layout.tombTable}" WHERE pk = @pk AND (lo IS NULL OR lo <= @ck) AND (hi IS NULL OR hi > @ck)`,
    ).get({ pk, ck }) as { ts: bigint | null };
    return r.ts;
  }

  private prepareDelete(table: TableSpec, key: Row, options?: DeleteOptions): PreparedTombstone {
    const layout = this.checked(table);
    checkNotCounter(table, 'deletes');
    const keyRow = primaryKeyOf(table, key);
    const range = rowByteRange(table, encodeClustering(table, keyRow));
    return { layout, pk: encodePartition(table, keyRow), range, ts: this.writeTimestamp(options?.timestamp) };
  }

  private prepareRangeDelete(
    table: TableSpec,
    partition: Row,
    range: ClusteringRange,
    options?: DeleteOptions,
  ): PreparedTombstone {
    const layout = this.checked(table);
    checkNotCounter(table, 'range deletes');
    return {
      layout,
      pk: encodePartition(table, partition),
      range: byteRange(table, range),
      ts: this.writeTimestamp(options?.timestamp),
    };
  }

  private applyTombstone({ layout, pk, range, ts }: PreparedTombstone): void {
    if (range.empty) return;
    this.stmt(`INSERT INTO "${layout.tombTable}" (pk, lo, hi, ts) VALUES (@pk, @lo, @hi, @ts)`).run({
      pk,
      lo: range.lo,
      hi: range.hi,
      ts,
    });
    const where = rangeWhere(range);
    const params = { pk, ...rangeParams(range), ts };
    if (layout.counter) {
      this.stmt(`DELETE FROM "${layout.dataTable}" WHERE ${where}`).run({ pk, ...rangeParams(range) });
      return;
    }
    // Every cell written at or below the tombstone becomes a deletion at its timestamp.
    const sets = ['row_w = CASE WHEN row_w <= @ts THEN NULL ELSE row_w END', 'row_x = CASE WHEN row_w <= @ts THEN NULL ELSE row_x END'];
    for (const c of layout.regular) {
      const hidden = `("w_${c}" IS NULL OR "w_${c}" <= @ts)`;
      sets.push(
        `"v_${c}" = CASE WHEN ${hidden} THEN NULL ELSE "v_${c}" END`,
        `"x_${c}" = CASE WHEN ${hidden} THEN NULL ELSE "x_${c}" END`,
        `"w_${c}" = CASE WHEN ${hidden} THEN @ts ELSE "w_${c}" END`,
      );
    }
    this.stmt(`UPDATE "${layout.dataTable}" SET ${sets.join(', ')} WHERE ${where}`).run(params);
    // Rows holding nothing newer than the tombstone carry no information: drop them
    // (the tombstone row keeps hiding late writes), so deletes do not bloat slices.
    const stale = layout.regular.map((c) => `"w_${c}" <= @ts`);
    this.stmt(
      `DELETE FROM "${layout.dataTable}" WHERE ${where} AND row_w IS NULL${stale.length ? ` AND ${stale.join(' AND ')}` : ''}`,
    ).run(params);
  }
}

interface PreparedUpsert {
  readonly layout: SqliteLayout;
  readonly key: Row;
  readonly values: Record<string, CqlValue>;
  readonly ts: bigint;
  readonly ttl: number;
}

interface PreparedTombstone {
  readonly layout: SqliteLayout;
  readonly pk: Buffer;
  readonly range: ByteRange;
  readonly ts: bigint;
}

interface Cell {
  readonly value: unknown;
  readonly w: bigint;
  readonly x: bigint | null;
}

/**
 * Cassandra's cell reconciliation: the higher timestamp wins; on a tie a deletion (or
 * an expired cell) wins, otherwise the greater serialized value.
 */
function reconcile(type: CqlType, current: Cell, incoming: Cell, nowSec: number): Cell {
  if (incoming.w !== current.w) return incoming.w > current.w ? incoming : current;
  const dead = (c: Cell) => c.value === null || (c.x !== null && c.x <= BigInt(nowSec));
  if (dead(current)) return current;
  if (dead(incoming)) return incoming;
  const cmp = Buffer.compare(serializedSql(type, current.value), serializedSql(type, incoming.value));
  return cmp >= 0 ? current : incoming;
}

function cellLive(r: PhysicalRow, c: string, nowSec: number): boolean {
  const v = r[`v_${c}`];
  const x = r[`x_${c}`];
  return v !== null && v !== undefined && (x === null || x === undefined || Number(x) > nowSec);
}

function isLive(layout: SqliteLayout, r: PhysicalRow, nowSec: number): boolean {
  if (layout.counter) return layout.regular.some((c) => r[`v_${c}`] !== null && r[`v_${c}`] !== undefined);
  const marker = r.row_w !== null && r.row_w !== undefined && (r.row_x === null || r.row_x === undefined || Number(r.row_x) > nowSec);
  return marker || layout.regular.some((c) => cellLive(r, c, nowSec));
}

/** SQL form of `isLive`, so LIMIT counts live rows only. */
function liveCondition(layout: SqliteLayout): string {
  if (layout.counter) return `(${layout.regular.map((c) => `"v_${c}" IS NOT NULL`).join(' OR ')})`;
  const parts = ['(row_w IS NOT NULL AND (row_x IS NULL OR row_x > @now))'];
  for (const c of layout.regular) parts.push(`("v_${c}" IS NOT NULL AND ("x_${c}" IS NULL OR "x_${c}" > @now))`);
  return `(${parts.join(' OR ')})`;
}
