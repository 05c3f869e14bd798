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
  ScanPage,
  SliceQuery,
  Store,
  StoreWarning,
  WriteOptions,
} from '../port.js';
import { StoreReadFailureError, StoreRequestError, StoreStartupError } from '../port.js';
import { startPeriodicTask, type PeriodicTask } from '../../background/periodic-task.js';
import type { Clock } from '../clock.js';
import { MonotonicClock } from '../clock.js';
import type { CqlType, CqlValue, Row, TableKey, TableSpec } from '../table.js';
import { gcGraceSecondsOf, keyColumnsOf, keyDifferencesOf } from '../table.js';
import {
  checkCellColumns,
  checkDeclarations,
  checkNotCounter,
  clusteringKeysOf,
  conditionsOf,
  counterDeltasOf,
  limitOf,
  regularValuesOf,
  ttlOf,
  writeTimestampOf,
} from '../validate.js';
import {
  byteRange,
  encodeClustering,
  encodeKey,
  encodePartition,
  encodeValidClusteringPrefix,
  rangeParams,
  rowByteRange,
  type ByteRange,
  type EncodedKey,
} from './sqlite-keys.js';
import { activeTally, countStatements, noteTombstoneWarning } from '../statements.js';
import { sameValue } from '../values.js';
import {
  createStatements,
  layoutOf,
  legacyTombstoneStatements,
  legacyTombTable,
  physicalColumns,
  type SqliteLayout,
} from './sqlite-schema.js';
import { GET_MANY_CHUNK, LayoutStatements, type SqliteStatementLike } from './sqlite-statements.js';
import { mergeTombstones, PARTITION_START, sameTombstones, type Tombstone } from './sqlite-tombstones.js';
import { fromSql, serializedSql, toSql } from './sqlite-values.js';

/** The slice of a better-sqlite3 database this adapter uses. */
export interface SqliteDatabaseLike {
  prepare(sql: string): SqliteStatementLike;
  exec(sql: string): unknown;
  transaction(fn: () => void): { (): void; immediate(): void };
  defaultSafeIntegers(toggle?: boolean): unknown;
  pragma(source: string): unknown;
  close(): unknown;
}

export type { SqliteStatementLike } from './sqlite-statements.js';

/** Cassandra's `tombstone_warn_threshold`: a read passing over more tombstones logs a warning. */
export const DEFAULT_TOMBSTONE_WARN_THRESHOLD = 1_000;
/** Cassandra's `tombstone_failure_threshold`: a read passing over more tombstones fails. */
export const DEFAULT_TOMBSTONE_FAILURE_THRESHOLD = 100_000;

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
  /** Wall clock in ms, for TTL expiry and tombstones' local deletion time. */
  readonly now?: () => number;
  /** How long a write waits for another process's write to finish (default 10 s). */
  readonly busyTimeoutMs?: number;
  /** Where notes go (a compaction's). */
  readonly log?: (message: string) => void;
  /** Where warnings go (a read passing over too many tombstones); `log`, without key values, when absent. */
  readonly warn?: (warning: StoreWarning) => void;
  /** A slice passing over more tombstones than this logs a warning (default 1,000, as Cassandra). */
  readonly tombstoneWarnThreshold?: number;
  /** A slice passing over more tombstones than this fails (default 100,000, as Cassandra). */
  readonly tombstoneFailureThreshold?: number;
  /** Run `compact()` this often (ms); 0 or absent: only when called. */
  readonly compactionIntervalMs?: number;
}

type PhysicalRow = Record<string, unknown>;

/** A stored tombstone row as the tombstone statements return it (integers exact). */
interface TombstoneRow {
  readonly lo: Buffer;
  readonly hi: Buffer | null;
  readonly ts: bigint;
  readonly ldt: bigint;
}

/** A scan's resume token: the last row's encoded keys, base64url. */
function scanTokenOf(pk: Buffer, ck: Buffer): string {
  return `${pk.toString('base64url')}.${ck.toString('base64url')}`;
}

/** The position a scan token names; a malformed token is refused. */
function scanPositionOf(token: string): { pk: Buffer; ck: Buffer } {
  const parts = token.split('.');
  if (parts.length !== 2 || !parts.every((p) => /^[A-Za-z0-9_-]*$/.test(p))) {
    throw new StoreRequestError(`not a scan position of this store: ${JSON.stringify(token.slice(0, 40))}`);
  }
  return { pk: Buffer.from(parts[0]!, 'base64url'), ck: Buffer.from(parts[1]!, 'base64url') };
}

/** The embedded store; construct with a better-sqlite3 database (file or `:memory:`). */
export class SqliteStore implements Store {
  private readonly db: SqliteDatabaseLike;
  private readonly clock: Clock;
  private readonly coordinatorClock: Clock;
  private readonly now: () => number;
  private readonly log: (message: string) => void;
  private readonly warn: (warning: StoreWarning) => void;
  private readonly warnThreshold: number;
  private readonly failureThreshold: number;
  /** The tombstones a gate skips (`LayoutStatements.tombstonesBeyond`): more than this many starting inside may warn. */
  private readonly gateSkip: number;
  private readonly compaction: PeriodicTask | null;
  private readonly prepared = new Map<string, LayoutStatements>();
  private readonly ensured = new Set<string>();
  private readonly pingStatement: SqliteStatementLike;

  constructor(options: SqliteStoreOptions) {
    this.db = options.database;
    this.clock = options.clock ?? new MonotonicClock();
    this.coordinatorClock = options.coordinatorClock ?? new MonotonicClock();
    this.now = options.now ?? Date.now;
    this.log = options.log ?? (() => undefined);
    this.warn = options.warn ?? ((warning) => this.log(warning.message));
    this.warnThreshold = threshold('tombstoneWarnThreshold', options.tombstoneWarnThreshold ?? DEFAULT_TOMBSTONE_WARN_THRESHOLD);
    this.failureThreshold = threshold('tombstoneFailureThreshold', options.tombstoneFailureThreshold ?? DEFAULT_TOMBSTONE_FAILURE_THRESHOLD);
    // At most warn - 1 starting inside, plus one that starts before: at most warn.
    this.gateSkip = Math.max(0, this.warnThreshold - 1);
    // Write timestamps reach 2^63-1 (seed 001), beyond a double: by default read integers
    // as bigint. The row path's statements read numbers instead (sqlite-statements.ts).
    this.db.defaultSafeIntegers(true);
    // Pages of 8 KiB in a new file (an existing one keeps its own): a row over about
    // 1 KiB spills into overflow pages at SQLite's default 4 KiB, and a counted index's
    // list of 256 buckets is 1.2 to 1.8 kB (count-ranks.ts), so each read of one
    // followed a chain (6 lists in one read: 18.5 to 13.8 µs). Must precede WAL.
    this.db.pragma('page_size = 8192');
    // WAL: readers never block the writer. Another process (`npm run seed` beside the
    // server) may hold the write lock: wait for it rather than fail at once.
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 10_000}`);
    this.pingStatement = this.db.prepare('SELECT 1');
    // Cassandra compacts on its own; so does the embedded store, when asked to.
    const interval = options.compactionIntervalMs ?? 0;
    this.compaction =
      interval > 0
        ? startPeriodicTask({
            intervalMs: interval,
            pass: async () => {
              const { purged } = this.compact();
              if (purged > 0) this.log(`compaction purged ${purged} tombstone(s) and expired row(s) past their tables' gc_grace_seconds`);
            },
            onError: (err) => this.log(`compaction failed: ${err instanceof Error ? err.message : String(err)}`),
          })
        : null;
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
    // Keys are stored encoded in their declared order: a file made under another key
    // would page in the wrong order, without an error (Cassandra's own check at start).
    const keyed = this.keyDifferences(tables);
    if (keyed.length > 0) {
      throw new StoreStartupError(
        `the embedded store keys tables otherwise than declared: ${keyed.join(', ')}; a key cannot be altered: move the file aside to start afresh`,
      );
    }
    this.write(() => {
      this.db.exec(
        `CREATE TABLE IF NOT EXISTS "${PAXOS_TABLE}" (tbl TEXT NOT NULL, pk BLOB NOT NULL, ballot INTEGER NOT NULL, PRIMARY KEY (tbl, pk)) WITHOUT ROWID`,
      );
      this.db.exec(`CREATE TABLE IF NOT EXISTS "${KEYS_TABLE}" (tbl TEXT NOT NULL PRIMARY KEY, key TEXT NOT NULL) WITHOUT ROWID`);
      const record = this.db.prepare(`INSERT OR IGNORE INTO "${KEYS_TABLE}" (tbl, key) VALUES (?, ?)`);
      for (const table of tables) {
        // A file from before keys were recorded: its tables are taken as declared now.
        record.run(table.name, JSON.stringify({ partitionKey: table.partitionKey, clustering: table.clustering } satisfies TableKey));
        const layout = this.layout(table);
        const legacy = this.columnsOf(layout.tombTable);
        const migrate = legacy.size > 0 && !legacy.has('ldt');
        if (migrate) for (const sql of legacyTombstoneStatements(layout)) this.db.exec(sql);
        for (const sql of createStatements(layout)) this.db.exec(sql);
        if (migrate) this.mergeLegacyTombstones(layout);
        // A declaration that grew a column since the file was created: add it.
        const existing = this.columnsOf(layout.dataTable);
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
    // Counted as Cassandra sends it, one statement per key, though SQLite runs one per chunk.
    this.count(keys.length);
    return this.readKeys(table, keys);
  }

  async getInPartition(table: TableSpec, partition: Row, keys: readonly Row[]): Promise<Array<Row | null>> {
    // The partition encoded once, each key's clustering values (validated) beside it.
    const pk = encodePartition(table, partition);
    const clusterings = clusteringKeysOf(table, keys);
    // One statement, as on Cassandra (an IN list on the clustering columns).
    this.count();
    return this.readEncoded(table, clusterings.map((values) => ({ pk, ck: encodeValidClusteringPrefix(table, values) })));
  }

  /** The rows of `keys` (full primary keys), in their order, null for misses: a statement per chunk of keys. */
  private readKeys(table: TableSpec, keys: readonly Row[]): Array<Row | null> {
    return this.readEncoded(table, keys.map((k) => encodeKey(table, k)));
  }

  /** The rows of encoded keys, in their order, null for misses. */
  private readEncoded(table: TableSpec, encoded: ReadonlyArray<{ readonly pk: Buffer; readonly ck: Buffer }>): Array<Row | null> {
    const s = this.statements(table);
    const out: Array<Row | null> = new Array<Row | null>(encoded.length).fill(null);
    const named = { now: this.nowSeconds() };
    for (let start = 0; start < encoded.length; start += GET_MANY_CHUNK) {
      const n = Math.min(GET_MANY_CHUNK, encoded.length - start);
      const keys = new Array<Buffer>(2 * n);
      for (let i = 0; i < n; i++) {
        const k = encoded[start + i]!;
        keys[2 * i] = k.pk;
        keys[2 * i + 1] = k.ck;
      }
      for (const r of s.getMany(n).all(named, ...keys) as unknown[][]) out[start + (r[0] as number)] = s.rowFrom(r, 1);
    }
    return out;
  }

  async slice(table: TableSpec, query: SliceQuery): Promise<Row[]> {
    this.count();
    const s = this.statements(table);
    limitOf(query.limit);
    const pk = encodePartition(table, query.partition);
    const range = byteRange(table, query);
    if (range.empty || query.limit === 0) return [];
    const reverse = query.reverse ?? false;
    const gated = query.limit <= GATED_SLICE_LIMIT;
    const bounds = rangeParams(range);
    const now = this.nowSeconds();
    const raw = s.slice(range, reverse, gated).all(gated ? { pk, ...bounds, now, limit: query.limit, skip: this.gateSkip } : { pk, ...bounds, now, limit: query.limit }) as unknown[][];
    const rows = raw.map((r) => s.rowFrom(r));
    // Fewer tombstones than the warning threshold start in the whole range, so fewer in
    // the part the read scanned: nothing to count. The gate came with the rows (the
    // statement's last column), or is asked apart, over the whole range: no row's key is
    // encoded for it. Otherwise the part scanned is counted exactly.
    if (this.warnThreshold > 0) {
      const few = raw.length > 0 && gated ? raw[0]![s.rowWidth] === null : !s.tombstonesBeyond(range.hi !== null).get({ pk, lo: range.lo ?? PARTITION_START, ...(range.hi ? { hi: range.hi } : {}), skip: this.gateSkip });
      if (few) return rows;
    }
    this.checkTombstonesPassed(s, pk, range, query, rows);
    return rows;
  }

  async scan(table: TableSpec, options: { readonly limit: number; readonly after?: string | null }): Promise<ScanPage> {
    this.count();
    const s = this.statements(table);
    const limit = limitOf(options.limit);
    const after = options.after ? scanPositionOf(options.after) : null;
    if (limit === 0) return { rows: [], next: options.after ?? null };
    const raw = s.scan(after !== null).all({ ...after, now: this.nowSeconds(), limit }) as unknown[][];
    const last = raw[raw.length - 1];
    const width = s.rowWidth;
    return {
      rows: raw.map((r) => s.rowFrom(r)),
      // A short page is the end: the statement's LIMIT counts live rows only.
      next: last && raw.length === limit ? scanTokenOf(last[width] as Buffer, last[width + 1] as Buffer) : null,
    };
  }

  async readCells(table: TableSpec, key: Row, columns: readonly string[]): Promise<CellRead> {
    this.count();
    const s = this.statements(table);
    checkCellColumns(table, columns);
    const nowSec = this.nowSeconds();
    const physical = this.readPhysical(s, key);
    const row = physical && isLive(s.layout, physical, nowSec) ? decode(s.layout, physical, nowSec) : null;
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
    const s = this.statements(table);
    const checkedDeltas = counterDeltasOf(table, deltas);
    const cols = Object.keys(checkedDeltas);
    const params: Record<string, unknown> = this.keyParams(s.layout, encodeKey(table, key));
    for (const c of cols) params[`d_${c}`] = checkedDeltas[c];
    s.increment(cols).run(params);
  }

  async insertIfNotExists(table: TableSpec, row: Row, options?: { ttl?: number }): Promise<ConditionalResult> {
    this.count();
    // A Paxos round: the cells carry the ballot's timestamp (see `ballot`).
    const prepared = this.prepareUpsert(table, row, { ttl: options?.ttl, timestamp: 0n });
    let result: ConditionalResult = { applied: false, existing: null };
    this.write(() => {
      const ts = this.ballot(table, prepared.key.pk);
      const existing = this.getSync(table, row);
      if (existing) {
        result = { applied: false, existing };
        return;
      }
      this.applyUpsert({ ...prepared, ts });
      result = { applied: true, existing: null };
    });
    return result;
  }

  async deleteIf(table: TableSpec, key: Row, expected?: Row): Promise<boolean> {
    this.count();
    const conditions = conditionsOf(table, expected);
    const prepared = this.prepareDelete(table, key, { timestamp: 0n });
    let applied = false;
    this.write(() => {
      const ts = this.ballot(table, prepared.pk);
      const current = this.getSync(table, key);
      applied =
        current !== null &&
        Object.entries(conditions).every(([c, v]) => current[c] !== null && sameValue(table.columns[c]!, current[c]!, v));
      if (applied) this.applyTombstone({ ...prepared, ts });
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
    this.pingStatement.get();
  }

  async checkSchema(tables: readonly TableSpec[]): Promise<string[]> {
    this.count();
    this.schemaStatement ??= this.db.prepare(
      "SELECT m.name AS t, p.name AS c FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS p WHERE m.type = 'table'",
    );
    const existing = new Map<string, Set<string>>();
    for (const { t, c } of this.schemaStatement.all() as Array<{ t: string; c: string }>) {
      if (!existing.has(t)) existing.set(t, new Set());
      existing.get(t)!.add(c);
    }
    const out: string[] = [];
    if (!existing.has(PAXOS_TABLE)) out.push(`table ${PAXOS_TABLE}`);
    const keyed = this.keyDifferences(tables);
    for (const table of tables) {
      const layout = layoutOf(table);
      const columns = existing.get(layout.dataTable);
      // Its rows and its tombstones are two SQLite tables: either missing is the table missing.
      if (!columns || !existing.has(layout.tombTable)) out.push(`table ${table.name}`);
      // Keyed otherwise, its physical columns differ too: the key is the difference to name.
      else if (!keyed.some((phrase) => phrase.startsWith(`table ${table.name} `))) {
        // A declared column is its value (`v_`) or key (`k_`) column, with its write time and TTL beside it.
        const lacking = Object.keys(table.columns).filter((c) => !columns.has(`v_${c}`) && !columns.has(`k_${c}`));
        for (const column of lacking) out.push(`column ${table.name}.${column}`);
        if (lacking.length === 0 && physicalColumns(layout).some(([name]) => !columns.has(name))) out.push(`table ${table.name} (incomplete)`);
      }
    }
    return [...out, ...keyed];
  }

  /** How the keys this file recorded differ from the declarations (tables it never held: nothing). */
  private keyDifferences(tables: readonly TableSpec[]): string[] {
    if (this.columnsOf(KEYS_TABLE).size === 0) return [];
    const recorded = new Map(
      (this.db.prepare(`SELECT tbl, key FROM "${KEYS_TABLE}"`).all() as Array<{ tbl: string; key: string }>).map((r) => [r.tbl, JSON.parse(r.key) as TableKey]),
    );
    return tables.flatMap((table) => {
      const found = recorded.get(table.name);
      return found ? keyDifferencesOf(table.name, found, table) : [];
    });
  }

  private schemaStatement?: SqliteStatementLike;

  async close(): Promise<void> {
    this.compaction?.stop();
    this.prepared.clear();
    this.db.close();
  }

  /**
   * A compaction pass, as Cassandra runs on its own (and `nodetool compact` on demand):
   * purge every tombstone whose local deletion time lies more than its table's
   * `gcGraceSeconds` in the past, and every row whose cells all expired (TTL) longer ago
   * than that. A write older than a purged tombstone that arrives
   * afterwards is visible again, exactly as on Cassandra after gc_grace. (Tombstones a
   * newer one covers are merged away when it is written, so none is left to drop here.)
   * Not part of the port: Cassandra needs no such call.
   */
  compact(): { purged: number } {
    const nowSec = this.nowSeconds();
    let purged = 0;
    for (const name of this.ensured) {
      const s = this.prepared.get(name);
      if (!s) continue;
      this.write(() => {
        const cutoff = nowSec - gcGraceSecondsOf(s.layout.table);
        purged += (s.purgeTombstones.run({ cutoff }) as { changes: number }).changes;
        if (!s.layout.counter) purged += (s.purgeExpired.run({ cutoff }) as { changes: number }).changes;
      });
    }
    return { purged };
  }

  // ---- internals -------------------------------------------------------------

  /** Each call answers its statements in one go, synchronously: count them where the call starts. */
  private count(statements = 1): void {
    countStatements(activeTally(), statements);
  }

  private layout(table: TableSpec): SqliteLayout {
    return this.prepareTable(table).layout;
  }

  /** A table's statements, made once per declaration (a new declaration object gets new ones). */
  private prepareTable(table: TableSpec): LayoutStatements {
    let s = this.prepared.get(table.name);
    if (!s || s.layout.table !== table) {
      s = new LayoutStatements((sql) => this.db.prepare(sql), layoutOf(table));
      this.prepared.set(table.name, s);
    }
    return s;
  }

  /** The statements of an ensured table. */
  private statements(table: TableSpec): LayoutStatements {
    if (!this.ensured.has(table.name)) {
      throw new StoreRequestError(`table ${table.name} does not exist (call ensureTables first)`);
    }
    return this.prepareTable(table);
  }

  private columnsOf(sqlTable: string): Set<string> {
    const info = this.db.prepare(`PRAGMA table_info("${sqlTable}")`).all() as Array<{ name: string }>;
    return new Set(info.map((c) => c.name));
  }

  /**
   * Move the tombstones of a file written before local deletion times into the new
   * table, merged as any new tombstone is; their deletion time is unknown, so it is
   * taken as now (they then live one more grace period: late, never early).
   */
  private mergeLegacyTombstones(layout: SqliteLayout): void {
    const s = this.prepared.get(layout.table.name)!;
    const old = this.db.prepare(`SELECT pk, lo, hi, ts FROM "${legacyTombTable(layout)}" ORDER BY pk, ts`).all() as Array<{
      pk: Buffer;
      lo: Buffer | null;
      hi: Buffer | null;
      ts: bigint;
    }>;
    const ldt = this.nowSeconds();
    for (const t of old) this.addTombstone(s, t.pk, { lo: t.lo ?? PARTITION_START, hi: t.hi, ts: BigInt(t.ts), ldt });
    this.db.exec(`DROP TABLE "${legacyTombTable(layout)}"`);
  }

  private nowSeconds(): number {
    return Math.floor(this.now() / 1000);
  }

  /** The key columns of a write, as the data table stores them. */
  private keyParams(layout: SqliteLayout, { key, pk, ck }: EncodedKey): Record<string, unknown> {
    const { table } = layout;
    const params: Record<string, unknown> = { pk, ck };
    for (const k of keyColumnsOf(table)) params[`k_${k}`] = toSql(table.columns[k]!, key[k]!);
    return params;
  }

  /** Every stored column of a key's row, integers exact. */
  private readPhysical(s: LayoutStatements, key: Row): PhysicalRow | null {
    const { pk, ck } = encodeKey(s.layout.table, key);
    return (s.physical.get({ pk, ck }) as PhysicalRow | undefined) ?? null;
  }

  private getSync(table: TableSpec, key: Row): Row | null {
    const s = this.statements(table);
    const { pk, ck } = encodeKey(table, key);
    const r = s.getOne.get({ pk, ck, now: this.nowSeconds() });
    return r ? s.rowFrom(r as unknown[]) : null;
  }

  /**
   * Count the tombstones a slice passed over, as Cassandra does: those intersecting the
   * part of the range it scanned (from its start to the last row returned, or all of it
   * when fewer than `limit` rows came back). Above the warning threshold, one log line;
   * above the failure threshold, the read fails. A cheap gate first: when the scanned
   * part holds fewer tombstones than the warning threshold, nothing is counted, so
   * tombstones beyond a page's last row cost that page nothing.
   */
  private checkTombstonesPassed(s: LayoutStatements, pk: Buffer, range: ByteRange, query: SliceQuery, rows: readonly Row[]): void {
    // The scanned part: up to the last row returned when the limit stopped the read.
    let { lo, hi } = range;
    if (rows.length === query.limit && rows.length > 0) {
      const last = encodeClustering(s.layout.table, rows[rows.length - 1]!);
      if (query.reverse) lo = last;
      else hi = Buffer.concat([last, ZERO_BYTE]);
    }
    const bounds = { pk, lo: lo ?? PARTITION_START, ...(hi ? { hi } : {}) };
    if (this.warnThreshold > 0 && !s.tombstonesBeyond(hi !== null).get({ ...bounds, skip: this.gateSkip })) return;
    const passed = (s.tombstoneCount(hi !== null).get({ ...bounds, cap: this.failureThreshold + 1 }) as [number])[0];
    if (passed <= this.warnThreshold) return;
    // Cassandra's text, but with bind markers for the key: its values stay out of logs.
    const { table } = s.layout;
    const prepared = `SELECT * FROM ${table.name} WHERE ${table.partitionKey.map((k) => `${k} = ?`).join(' AND ')} LIMIT ${query.limit}`;
    if (passed > this.failureThreshold) {
      throw new StoreReadFailureError(
        `Scanned over ${passed} tombstones during query '${prepared}' (tombstone_failure_threshold is ${this.failureThreshold}); query aborted`,
      );
    }
    this.warn({
      table: table.name,
      kind: 'tombstones',
      tombstones: passed,
      message: `Read ${rows.length} live rows and ${passed} tombstone cells for query ${prepared} (see tombstone_warn_threshold)`,
      keyValues: table.partitionKey.map((k) => query.partition[k]),
    });
    // Synchronous from the call's start: the active tally is still the call's.
    noteTombstoneWarning(activeTally());
  }

  /**
   * The ballot of a Paxos round on `table`'s partition `pk`, inside the round's write
   * transaction: the coordinator's clock, but always above the partition's previous
   * ballot, as Cassandra promises (a round that starts after another has completed
   * takes a higher ballot, whichever coordinator's clock is behind). Without this, two
   * processes sharing one file with skewed clocks could stamp an insert-if-not-exists
   * below an earlier conditional delete of the same row, which would hide it.
   */
  private ballot(table: TableSpec, pk: Buffer): bigint {
    const last = this.paxos().read.get({ tbl: table.name, pk }) as { ballot: bigint } | undefined;
    const now = this.coordinatorClock.nowMicros();
    const ballot = last !== undefined && last.ballot >= now ? last.ballot + 1n : now;
    this.paxos().write.run({ tbl: table.name, pk, ballot });
    return ballot;
  }

  private paxosStatements?: { readonly read: SqliteStatementLike; readonly write: SqliteStatementLike };

  /** The statements of the ballot table (created by `ensureTables`), prepared on first use. */
  private paxos(): { readonly read: SqliteStatementLike; readonly write: SqliteStatementLike } {
    this.paxosStatements ??= {
      read: this.db.prepare(`SELECT ballot FROM "${PAXOS_TABLE}" WHERE tbl = @tbl AND pk = @pk`),
      write: this.db.prepare(`INSERT OR REPLACE INTO "${PAXOS_TABLE}" (tbl, pk, ballot) VALUES (@tbl, @pk, @ballot)`),
    };
    return this.paxosStatements;
  }

  private writeTimestamp(ts: bigint | undefined): bigint {
    return writeTimestampOf(ts, () => this.clock.nowMicros());
  }

  private prepareUpsert(table: TableSpec, row: Row, options?: WriteOptions): PreparedUpsert {
    const s = this.statements(table);
    const values = regularValuesOf(table, row);
    const key = encodeKey(table, row);
    return { s, key, values, ts: this.writeTimestamp(options?.timestamp), ttl: ttlOf(options?.ttl, this.now()) };
  }

  private applyUpsert({ s, key, values, ts, ttl }: PreparedUpsert): void {
    const { layout } = s;
    const { table } = layout;
    const nowSec = this.nowSeconds();
    // A tombstone at or above this timestamp hides the write, even if it arrived first.
    const shadow = this.coveringTombstone(s, key.pk, key.ck);
    if (shadow !== null && ts <= shadow) return;
    // Only the marker and the cells written are read and merged, not the whole row.
    const columns = Object.keys(values);
    const existing = s.cellsOf(columns).get({ pk: key.pk, ck: key.ck }) as PhysicalRow | undefined;
    const expiry = ttl > 0 ? BigInt(nowSec + ttl) : null;
    const merged: PhysicalRow = { pk: key.pk, ck: key.ck };
    // The row marker (CQL INSERT), so a row with only null cells still exists.
    const markerW = existing?.row_w as bigint | null | undefined;
    if (markerW === null || markerW === undefined || ts >= markerW) {
      merged.row_w = ts;
      merged.row_x = expiry;
    } else {
      merged.row_w = markerW;
      merged.row_x = existing!.row_x ?? null;
    }
    for (const c of columns) {
      const value = values[c]!;
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
    if (existing) s.updateCells(columns).run(merged);
    else s.insertCells(columns).run({ ...this.keyParams(layout, key), ...merged });
  }

  /** The timestamp of the tombstone covering `ck`, if any: one index seek (sqlite-tombstones.ts). */
  private coveringTombstone(s: LayoutStatements, pk: Buffer, ck: Buffer): bigint | null {
    const t = s.coveringTombstone.get({ pk, ck }) as { ts: bigint; hi: Buffer | null } | undefined;
    return t && (t.hi === null || Buffer.compare(t.hi, ck) > 0) ? t.ts : null;
  }

  private prepareDelete(table: TableSpec, key: Row, options?: DeleteOptions): PreparedTombstone {
    const s = this.statements(table);
    checkNotCounter(table, 'deletes');
    const { pk, ck } = encodeKey(table, key);
    return { s, pk, range: rowByteRange(table, ck), ts: this.writeTimestamp(options?.timestamp) };
  }

  private prepareRangeDelete(
    table: TableSpec,
    partition: Row,
    range: ClusteringRange,
    options?: DeleteOptions,
  ): PreparedTombstone {
    const s = this.statements(table);
    checkNotCounter(table, 'range deletes');
    return {
      s,
      pk: encodePartition(table, partition),
      range: byteRange(table, range),
      ts: this.writeTimestamp(options?.timestamp),
    };
  }

  private applyTombstone({ s, pk, range, ts }: PreparedTombstone): void {
    if (range.empty) return;
    this.addTombstone(s, pk, { lo: range.lo ?? PARTITION_START, hi: range.hi, ts, ldt: this.nowSeconds() });
    const bounds = rangeParams(range);
    if (s.layout.counter) {
      s.hideCells(range).run({ pk, ...bounds });
      return;
    }
    s.hideCells(range).run({ pk, ...bounds, ts });
    s.dropHiddenRows(range).run({ pk, ...bounds, ts });
  }

  /**
   * Merge a tombstone into its partition's disjoint list: read the ones it overlaps or
   * touches (two index seeks), and rewrite them only when the merge changed something
   * (a tombstone a stronger one covers changes nothing).
   */
  private addTombstone(s: LayoutStatements, pk: Buffer, added: Tombstone): void {
    const existing: Tombstone[] = [];
    const before = s.tombstoneBefore.get({ pk, lo: added.lo }) as TombstoneRow | undefined;
    if (before && (before.hi === null || Buffer.compare(before.hi, added.lo) >= 0)) existing.push(tombstoneOf(before));
    const from = s.tombstonesFrom(added.hi !== null).all({ pk, lo: added.lo, ...(added.hi ? { hi: added.hi } : {}) });
    for (const t of from as TombstoneRow[]) existing.push(tombstoneOf(t));
    const merged = mergeTombstones(existing, added);
    if (sameTombstones(existing, merged)) return;
    for (const t of existing) s.deleteTombstone.run({ pk, lo: t.lo });
    for (const t of merged) s.insertTombstone.run({ pk, lo: t.lo, hi: t.hi, ts: t.ts, ldt: t.ldt });
  }
}

const ZERO_BYTE = Buffer.from([0]);

/**
 * Slices of at most this many rows carry their tombstone gate in their own statement
 * (`LayoutStatements.slice`); larger ones ask it in a second, cheaper for them. A
 * cursor's place in a counted index is such a slice (LEAF_FIRST, ranked-index.ts).
 */
const GATED_SLICE_LIMIT = 16;

function tombstoneOf(r: TombstoneRow): Tombstone {
  return { lo: r.lo, hi: r.hi, ts: BigInt(r.ts), ldt: Number(r.ldt) };
}

function threshold(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got ${value}`);
  return value;
}

function decode(layout: SqliteLayout, r: PhysicalRow, nowSec: number): Row {
  const { table } = layout;
  const out: Row = {};
  for (const k of keyColumnsOf(table)) out[k] = fromSql(table.columns[k]!, r[`k_${k}`]);
  for (const c of layout.regular) {
    out[c] = layout.counter || cellLive(r, c, nowSec) ? fromSql(table.columns[c]!, r[`v_${c}`]) : null;
  }
  return out;
}

/**
 * The last Paxos ballot of each partition that had a conditional write (Cassandra
 * keeps it in system.paxos). Not a CQL table name: those are stored as `t_<name>`.
 */
const PAXOS_TABLE = 'paxos_ballots';
/** Each table's key as the file's tables were created with it (JSON of a `TableKey`). */
const KEYS_TABLE = 'table_keys';

interface PreparedUpsert {
  readonly s: LayoutStatements;
  readonly key: EncodedKey;
  readonly values: Record<string, CqlValue>;
  readonly ts: bigint;
  readonly ttl: number;
}

interface PreparedTombstone {
  readonly s: LayoutStatements;
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
