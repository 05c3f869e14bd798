/**
 * Every statement the embedded store runs on one declared table, its SQL built once
 * per table layout and prepared on first use, then kept: a call only binds values.
 * Reads on the row path (slices, gets) select only the columns the port returns, apply
 * TTL expiry in SQL, and read integers as numbers (bigint values as exact text, see
 * `readExpression`); statements whose integers must stay exact (write timestamps up to
 * 2^63-1, tombstone timestamps) read with safe integers.
 */
import { rangeWhere, type ByteRange } from './sqlite-keys.js';
import type { SqliteLayout } from './sqlite-schema.js';
import { physicalColumns } from './sqlite-schema.js';
import { readerOf, readExpression } from './sqlite-values.js';
import type { CqlValue, Row } from '../table.js';
import { keyColumnsOf } from '../table.js';

/** The slice of a better-sqlite3 statement the embedded store uses. */
export interface SqliteStatementLike {
  run(...params: unknown[]): unknown;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  /** Return rows as arrays of values, in select-list order. */
  raw(toggle?: boolean): SqliteStatementLike;
  /** Return integers as bigint (exact up to 2^63-1) rather than as numbers. */
  safeIntegers(toggle?: boolean): SqliteStatementLike;
}

/** Keys per `getMany` statement: SQLite binds at most 32,766 parameters, two per key here. */
export const GET_MANY_CHUNK = 128;


/**
 * A bound LIMIT, as SQL: `@limit` behind a CAST. SQLite reads a bare bound LIMIT's value
 * while planning and then marks the statement stale whenever that parameter is bound
 * again, so every call re-prepared it (a 1-row slice took 9.4 µs in `all`, 1.7 µs so).
 */
const LIMIT = 'CAST(@limit AS INTEGER)';
/** A bound OFFSET, as SQL: behind a CAST for the same reason as `LIMIT`. */
const SKIP = 'CAST(@skip AS INTEGER)';

/** The statements of one table layout. */
export class LayoutStatements {
  /** Port columns in the order the row path selects them. */
  private readonly rowColumns: readonly string[];
  private readonly readers: ReadonlyArray<(raw: unknown) => CqlValue>;
  private readonly rowSelect: string;
  private readonly live: string;
  private readonly cache = new Map<string, SqliteStatementLike>();
  private readonly slices: Array<SqliteStatementLike | undefined> = [];
  private readonly getManyByCount: Array<SqliteStatementLike | undefined> = [];

  constructor(
    private readonly prepare: (sql: string) => SqliteStatementLike,
    readonly layout: SqliteLayout,
  ) {
    const { table } = layout;
    this.rowColumns = [...keyColumnsOf(table), ...layout.regular];
    this.readers = this.rowColumns.map((c) => readerOf(table.columns[c]!));
    const regular = new Set(layout.regular);
    this.rowSelect = this.rowColumns
      .map((c) => {
        const type = table.columns[c]!;
        if (!regular.has(c)) return readExpression(type, `"k_${c}"`);
        if (layout.counter) return readExpression(type, `"v_${c}"`);
        return readExpression(type, `CASE WHEN "x_${c}" IS NULL OR "x_${c}" > @now THEN "v_${c}" END`);
      })
      .join(', ');
    this.live = liveCondition(layout);
  }

  /** A port row from a row-path result (an array of values), starting at `offset`. */
  rowFrom(values: readonly unknown[], offset = 0): Row {
    const out: Row = {};
    for (let i = 0; i < this.rowColumns.length; i++) out[this.rowColumns[i]!] = this.readers[i]!(values[i + offset]);
    return out;
  }

  /**
   * Live rows of one partition between optional bounds, in `ck` order or reversed; with
   * `gated`, each followed by the tombstone gate over the whole range (`tombstonesBeyond`:
   * 1 when more than `skip` tombstones start inside the bounds, else null), an
   * uncorrelated subquery SQLite runs once per call. A small slice so learns in its own
   * statement that it passed over too few tombstones to count; a larger one asks apart,
   * as the column costs about 0.07 µs a row and a statement of its own 0.6 µs (see
   * `GATED_SLICE_LIMIT`). Binds pk, lo, hi, now, limit, and skip when gated.
   */
  slice(range: ByteRange, reverse: boolean, gated: boolean): SqliteStatementLike {
    // The hottest statement: found by its shape's number, no key string built per call.
    const shape = (range.lo ? 1 : 0) | (range.hi ? 2 : 0) | (reverse ? 4 : 0) | (gated ? 8 : 0);
    let statement = this.slices[shape];
    if (!statement) {
      const gate = gated ? `, (SELECT 1 FROM "${this.layout.tombTable}" WHERE ${tombstoneRangeWhere(range)} LIMIT 1 OFFSET ${SKIP})` : '';
      statement = this.once(`slice:${shape}`, 'rows', () =>
        `SELECT ${this.rowSelect}${gate} FROM "${this.layout.dataTable}" WHERE ${rangeWhere(range)} AND ${this.live} ` +
        `ORDER BY ck ${reverse ? 'DESC' : 'ASC'} LIMIT ${LIMIT}`,
      );
      this.slices[shape] = statement;
    }
    return statement;
  }

  /**
   * Live rows of the whole table in (pk, ck) order, from just after a row's `pk` and
   * `ck` when `resume` (a scan's next page), each followed by its raw pk and ck. Binds
   * pk and ck when resuming, now, limit.
   */
  scan(resume: boolean): SqliteStatementLike {
    return this.once(`scan:${resume}`, 'rows', () =>
      `SELECT ${this.rowSelect}, pk, ck FROM "${this.layout.dataTable}" WHERE ${resume ? '(pk > @pk OR (pk = @pk AND ck > @ck)) AND ' : ''}${this.live} ` +
      `ORDER BY pk, ck LIMIT ${LIMIT}`,
    );
  }

  /** How many port columns a row-path result holds (a scan's pk and ck follow them). */
  get rowWidth(): number {
    return this.rowColumns.length;
  }

  /** One live row by key. Binds pk, ck, now. */
  get getOne(): SqliteStatementLike {
    return this.once('get', 'rows', () => `SELECT ${this.rowSelect} FROM "${this.layout.dataTable}" WHERE pk = @pk AND ck = @ck AND ${this.live}`);
  }

  /**
   * Live rows of `n` keys (at most GET_MANY_CHUNK) in one statement, each result led by
   * the key's position. One statement per key count: padding to fewer shapes would make
   * SQLite look up the padding too (32 lookups for 20 keys cost 1.7 times 20). Binds
   * now by name, then each key's pk and ck in turn, unnamed: better-sqlite3 binds a
   * named parameter by looking it up in the object given (8 keys: 13.7 µs named, 12.0 so).
   */
  getMany(n: number): SqliteStatementLike {
    let statement = this.getManyByCount[n];
    if (statement) return statement;
    statement = this.once(`getMany:${n}`, 'rows', () => {
      const keys = Array.from({ length: n }, (_, i) => `(${i}, ?, ?)`).join(', ');
      return (
        `WITH q(i, pk, ck) AS (VALUES ${keys}) SELECT q.i, ${this.rowSelect} ` +
        `FROM q JOIN "${this.layout.dataTable}" AS t ON t.pk = q.pk AND t.ck = q.ck WHERE ${this.live}`
      );
    });
    this.getManyByCount[n] = statement;
    return statement;
  }

  /** Every stored column of one row, integers exact (write paths, WRITETIME). Binds pk, ck. */
  get physical(): SqliteStatementLike {
    return this.once('physical', 'exact', () => `SELECT * FROM "${this.layout.dataTable}" WHERE pk = @pk AND ck = @ck`);
  }

  /**
   * The row marker and the named cells of one row (a write reads only what it merges:
   * a wide, sparse row costs what it touches). Integers exact. Binds pk, ck.
   */
  cellsOf(columns: readonly string[]): SqliteStatementLike {
    return this.once(`cells:${columns.join(',')}`, 'exact', () => {
      const cells = columns.flatMap((c) => [`"v_${c}"`, `"w_${c}"`, `"x_${c}"`]);
      return `SELECT ${['row_w', 'row_x', ...cells].join(', ')} FROM "${this.layout.dataTable}" WHERE pk = @pk AND ck = @ck`;
    });
  }

  /** Insert a new row: its keys, marker and the named cells. Binds pk, ck, k_*, row_w, row_x and v_/w_/x_ of each. */
  insertCells(columns: readonly string[]): SqliteStatementLike {
    return this.once(`insert:${columns.join(',')}`, 'write', () => {
      const cols = ['pk', 'ck', ...keyColumnsOf(this.layout.table).map((k) => `k_${k}`), 'row_w', 'row_x', ...columns.flatMap((c) => [`v_${c}`, `w_${c}`, `x_${c}`])];
      return `INSERT INTO "${this.layout.dataTable}" (${cols.map((c) => `"${c}"`).join(', ')}) VALUES (${cols.map((c) => `@${c}`).join(', ')})`;
    });
  }

  /** Set an existing row's marker and the named cells. Binds pk, ck, row_w, row_x and v_/w_/x_ of each. */
  updateCells(columns: readonly string[]): SqliteStatementLike {
    return this.once(`update:${columns.join(',')}`, 'write', () => {
      const cols = ['row_w', 'row_x', ...columns.flatMap((c) => [`v_${c}`, `w_${c}`, `x_${c}`])];
      return `UPDATE "${this.layout.dataTable}" SET ${cols.map((c) => `"${c}" = @${c}`).join(', ')} WHERE pk = @pk AND ck = @ck`;
    });
  }

  /** Write a whole physical row. Binds every physical column by name. */
  get replace(): SqliteStatementLike {
    return this.once('replace', 'write', () => {
      const cols = physicalColumns(this.layout).map(([n]) => n);
      return `INSERT OR REPLACE INTO "${this.layout.dataTable}" (${cols.map((c) => `"${c}"`).join(', ')}) VALUES (${cols.map((c) => `@${c}`).join(', ')})`;
    });
  }

  /** Add deltas to the named counter columns. Binds pk, ck, k_*, d_*. */
  increment(columns: readonly string[]): SqliteStatementLike {
    return this.once(`increment:${columns.join(',')}`, 'write', () => {
      const keyCols = ['pk', 'ck', ...keyColumnsOf(this.layout.table).map((k) => `k_${k}`)];
      return (
        `INSERT INTO "${this.layout.dataTable}" (${[...keyCols, ...columns.map((c) => `v_${c}`)].map((c) => `"${c}"`).join(', ')}) ` +
        `VALUES (${[...keyCols.map((c) => `@${c}`), ...columns.map((c) => `@d_${c}`)].join(', ')}) ` +
        `ON CONFLICT (pk, ck) DO UPDATE SET ${columns.map((c) => `"v_${c}" = COALESCE("v_${c}", 0) + @d_${c}`).join(', ')}`
      );
    });
  }

  /** The tombstone starting at or before `ck` (the only one that can cover it). Binds pk, ck. */
  get coveringTombstone(): SqliteStatementLike {
    return this.once('tomb:covering', 'exact', () => `SELECT ts, hi FROM "${this.layout.tombTable}" WHERE pk = @pk AND lo <= @ck ORDER BY lo DESC LIMIT 1`);
  }

  /** The tombstone starting before `lo`. Binds pk, lo. */
  get tombstoneBefore(): SqliteStatementLike {
    return this.once('tomb:before', 'exact', () => `SELECT lo, hi, ts, ldt FROM "${this.layout.tombTable}" WHERE pk = @pk AND lo < @lo ORDER BY lo DESC LIMIT 1`);
  }

  /** The tombstones starting in `[lo, hi]` (to the end when `bounded` is false). Binds pk, lo, hi. */
  tombstonesFrom(bounded: boolean): SqliteStatementLike {
    return this.once(`tomb:from:${bounded}`, 'exact', () =>
      `SELECT lo, hi, ts, ldt FROM "${this.layout.tombTable}" WHERE pk = @pk AND lo >= @lo${bounded ? ' AND lo <= @hi' : ''} ORDER BY lo`,
    );
  }

  /**
   * How many tombstones intersect `[lo, hi)` (to the end when `bounded` is false),
   * counting at most `cap` of those starting inside. Binds pk, lo, hi, cap.
   */
  tombstoneCount(bounded: boolean): SqliteStatementLike {
    const t = `"${this.layout.tombTable}"`;
    return this.once(`tomb:count:${bounded}`, 'rows', () =>
      `SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM ${t} WHERE pk = @pk AND lo >= @lo${bounded ? ' AND lo < @hi' : ''} LIMIT CAST(@cap AS INTEGER))) + ` +
      `COALESCE((SELECT hi IS NULL OR hi > @lo FROM ${t} WHERE pk = @pk AND lo < @lo ORDER BY lo DESC LIMIT 1), 0)`,
    );
  }

  /**
   * Whether more than `skip` tombstones start in `[lo, hi)` (to the end when `bounded`
   * is false): a cheap gate (an index walk of at most skip + 1 entries; a COUNT over a
   * LIMIT subquery costs 8 µs even on an empty table). Binds pk, lo, hi, skip.
   */
  tombstonesBeyond(bounded: boolean): SqliteStatementLike {
    return this.once(`tomb:beyond:${bounded}`, 'rows', () =>
      `SELECT 1 FROM "${this.layout.tombTable}" WHERE pk = @pk AND lo >= @lo${bounded ? ' AND lo < @hi' : ''} LIMIT 1 OFFSET ${SKIP}`,
    );
  }

  /** Remove one tombstone. Binds pk, lo. */
  get deleteTombstone(): SqliteStatementLike {
    return this.once('tomb:delete', 'write', () => `DELETE FROM "${this.layout.tombTable}" WHERE pk = @pk AND lo = @lo`);
  }

  /** Store one tombstone. Binds pk, lo, hi, ts, ldt. */
  get insertTombstone(): SqliteStatementLike {
    return this.once('tomb:insert', 'write', () => `INSERT INTO "${this.layout.tombTable}" (pk, lo, hi, ts, ldt) VALUES (@pk, @lo, @hi, @ts, @ldt)`);
  }

  /** Purge the tombstones deleted before `cutoff` (epoch seconds). Binds cutoff. */
  get purgeTombstones(): SqliteStatementLike {
    return this.once('tomb:purge', 'write', () => `DELETE FROM "${this.layout.tombTable}" WHERE ldt < @cutoff`);
  }

  /**
   * Purge the rows whose every cell (and row marker) expired, by TTL, before `cutoff`
   * (epoch seconds): an expired cell is a tombstone as of its expiry, which compaction
   * drops once the grace period is past, as Cassandra does. Binds cutoff.
   */
  get purgeExpired(): SqliteStatementLike {
    return this.once('expired:purge', 'write', () => {
      const gone = (w: string, x: string) => `(${w} IS NULL OR (${x} IS NOT NULL AND ${x} < @cutoff))`;
      const cells = [gone('row_w', 'row_x'), ...this.layout.regular.map((c) => gone(`"w_${c}"`, `"x_${c}"`))];
      return `DELETE FROM "${this.layout.dataTable}" WHERE ${cells.join(' AND ')}`;
    });
  }

  /**
   * Apply a tombstone to the stored cells of a range: every cell written at or below it
   * becomes a deletion at its timestamp (a counter table's rows simply go). Binds pk,
   * lo, hi, and ts unless counter.
   */
  hideCells(range: ByteRange): SqliteStatementLike {
    return this.once(`hide:${range.lo ? 1 : 0}${range.hi ? 1 : 0}`, 'write', () => {
      const where = rangeWhere(range);
      if (this.layout.counter) return `DELETE FROM "${this.layout.dataTable}" WHERE ${where}`;
      const sets = ['row_w = CASE WHEN row_w <= @ts THEN NULL ELSE row_w END', 'row_x = CASE WHEN row_w <= @ts THEN NULL ELSE row_x END'];
      for (const c of this.layout.regular) {
        const hidden = `("w_${c}" IS NULL OR "w_${c}" <= @ts)`;
        sets.push(
          `"v_${c}" = CASE WHEN ${hidden} THEN NULL ELSE "v_${c}" END`,
          `"x_${c}" = CASE WHEN ${hidden} THEN NULL ELSE "x_${c}" END`,
          `"w_${c}" = CASE WHEN ${hidden} THEN @ts ELSE "w_${c}" END`,
        );
      }
      return `UPDATE "${this.layout.dataTable}" SET ${sets.join(', ')} WHERE ${where}`;
    });
  }

  /**
   * Drop the rows of a range holding nothing newer than the tombstone: they carry no
   * information (the tombstone keeps hiding late writes). Binds pk, lo, hi, ts.
   */
  dropHiddenRows(range: ByteRange): SqliteStatementLike {
    return this.once(`drop:${range.lo ? 1 : 0}${range.hi ? 1 : 0}`, 'write', () => {
      const stale = this.layout.regular.map((c) => `"w_${c}" <= @ts`);
      return `DELETE FROM "${this.layout.dataTable}" WHERE ${rangeWhere(range)} AND row_w IS NULL${stale.length ? ` AND ${stale.join(' AND ')}` : ''}`;
    });
  }

  /**
   * Prepare once: `rows` statements return arrays with integers as numbers, `exact` ones
   * objects with integers as bigint, `write` ones nothing.
   */
  private once(shape: string, mode: 'rows' | 'exact' | 'write', sql: () => string): SqliteStatementLike {
    let statement = this.cache.get(shape);
    if (!statement) {
      statement = this.prepare(sql());
      if (mode === 'rows') statement = statement.raw(true).safeIntegers(false);
      if (mode === 'exact') statement = statement.safeIntegers(true);
      this.cache.set(shape, statement);
    }
    return statement;
  }
}

/** `rangeWhere` on the tombstone table: the tombstones starting inside the range's bounds. */
function tombstoneRangeWhere(range: ByteRange): string {
  return `pk = @pk${range.lo ? ' AND lo >= @lo' : ''}${range.hi ? ' AND lo < @hi' : ''}`;
}

/** SQL form of "the row is live" (its marker or a cell unexpired), so LIMIT counts live rows only. */
function liveCondition(layout: SqliteLayout): string {
  if (layout.counter) return `(${layout.regular.map((c) => `"v_${c}" IS NOT NULL`).join(' OR ')})`;
  const parts = ['(row_w IS NOT NULL AND (row_x IS NULL OR row_x > @now))'];
  for (const c of layout.regular) parts.push(`("v_${c}" IS NOT NULL AND ("x_${c}" IS NULL OR "x_${c}" > @now))`);
  return `(${parts.join(' OR ')})`;
}
