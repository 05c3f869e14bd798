/**
 * What only the embedded store has to prove about tombstones (the contract suite proves
 * what both stores share): compaction past the grace period, and what comes back after
 * it; the merge that keeps one range where a growing delete covered its predecessors;
 * the covering lookup as an index seek; the failure threshold (Cassandra's default of
 * 100,000 tombstones is too slow to reach in a test, so it is lowered here, where the
 * embedded store lets it be); and files written before tombstones had a deletion time.
 */
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import cassandra from 'cassandra-driver';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { storeErrorFrom } from '../../src/store/cassandra/cassandra-errors.js';
import { StoreReadFailureError, type StoreWarning } from '../../src/store/port.js';
import { SqliteStore, type SqliteDatabaseLike, type SqliteStoreOptions } from '../../src/store/sqlite/sqlite-store.js';
import { mergeTombstones, type Tombstone } from '../../src/store/sqlite/sqlite-tombstones.js';
import { defineTable } from '../../src/store/table.js';

const queue = defineTable({
  name: 'queue',
  columns: { p: 'uuid', k: 'int', v: 'text' },
  partitionKey: ['p'],
  clustering: ['k'],
  gcGraceSeconds: 3_600,
});

const HOUR_MS = 3_600_000;

/** An in-memory store with its database and a wall clock the test moves. */
async function aStore(options: Partial<SqliteStoreOptions> = {}) {
  const db = new Database(':memory:');
  const clock = { ms: Date.UTC(2026, 0, 1) };
  const store = new SqliteStore({ database: db, now: () => clock.ms, ...options });
  await store.ensureTables([queue]);
  const storedTombstones = () => db.prepare('SELECT lo, hi, ts FROM d_queue ORDER BY pk, lo').all() as Array<{ lo: Buffer; hi: Buffer | null; ts: bigint }>;
  return { db, store, clock, storedTombstones };
}

describe('compaction of the embedded store', () => {
  it("keeps a tombstone within its table's grace period and purges it after; a late older write then comes back, as on Cassandra after gc_grace", async () => {
    const { store, clock } = await aStore();
    const p = randomUUID();
    await store.delete(queue, { p, k: 1 }, { timestamp: 2_000n });
    await store.deleteRange(queue, { p }, { lower: { values: [10], inclusive: true } }, { timestamp: 2_000n });

    clock.ms += HOUR_MS - 1_000;
    expect(store.compact()).toEqual({ purged: 0 });
    await store.upsert(queue, { p, k: 1, v: 'late' }, { timestamp: 1_000n });
    await store.upsert(queue, { p, k: 11, v: 'late' }, { timestamp: 1_000n });
    expect(await store.slice(queue, { partition: { p }, limit: 10 })).toEqual([]);

    clock.ms += 2_000;
    expect(store.compact()).toEqual({ purged: 2 });
    // The deletion is forgotten: Cassandra documents the same for a replica that missed
    // it (or a write that lands) after gc_grace_seconds. Hence a grace period longer
    // than any write can be late.
    await store.upsert(queue, { p, k: 1, v: 'late' }, { timestamp: 1_000n });
    await store.upsert(queue, { p, k: 11, v: 'late' }, { timestamp: 1_000n });
    expect(await store.slice(queue, { partition: { p }, limit: 10 })).toEqual([
      { p, k: 1, v: 'late' },
      { p, k: 11, v: 'late' },
    ]);
    await store.close();
  });

  it('purges a row whose cells all expired (TTL) once the grace period has passed since, and keeps one with a live cell', async () => {
    const { db, store, clock } = await aStore();
    const p = randomUUID();
    await store.upsert(queue, { p, k: 1, v: 'expires' }, { ttl: 60 });
    await store.upsert(queue, { p, k: 2, v: 'stays' });
    const stored = () => Number((db.prepare('SELECT count(*) AS n FROM t_queue').get() as { n: number | bigint }).n);

    clock.ms += 60_000 + HOUR_MS - 1_000;
    expect(store.compact()).toEqual({ purged: 0 });
    expect(stored()).toBe(2);
    clock.ms += 2_000;
    expect(store.compact()).toEqual({ purged: 1 });
    expect(stored()).toBe(1);
    expect(await store.slice(queue, { partition: { p }, limit: 10 })).toEqual([{ p, k: 2, v: 'stays' }]);
    await store.close();
  });

  it('runs on its own timer when given an interval, and logs what it purged', async () => {
    const lines: string[] = [];
    const { store, clock } = await aStore({ compactionIntervalMs: 20, log: (m) => lines.push(m) });
    await store.delete(queue, { p: randomUUID(), k: 1 });
    clock.ms += 2 * HOUR_MS;
    for (let i = 0; i < 100 && lines.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(lines).toEqual(["compaction purged 1 tombstone(s) and expired row(s) past their tables' gc_grace_seconds"]);
    await store.close();
  });
});

describe('tombstones merged as they are written', () => {
  it('keeps ONE range tombstone for a low-water mark that grows 500 times over deleted rows, and it hides older writes', async () => {
    const { store, storedTombstones } = await aStore();
    const p = randomUUID();
    const T = 1_000_000n;
    for (let mark = 1; mark <= 500; mark++) {
      await store.upsert(queue, { p, k: mark, v: 'item' }, { timestamp: T + 3n * BigInt(mark) });
      await store.delete(queue, { p, k: mark }, { timestamp: T + 3n * BigInt(mark) + 1n });
      await store.deleteRange(queue, { p }, { upper: { values: [mark], inclusive: true } }, { timestamp: T + 3n * BigInt(mark) + 2n });
    }
    expect(storedTombstones()).toEqual([{ lo: Buffer.alloc(0), hi: expect.any(Buffer), ts: T + 1_502n }]);
    await store.upsert(queue, { p, k: 250, v: 'late' }, { timestamp: T + 1_502n });
    await store.upsert(queue, { p, k: 501, v: 'next' }, { timestamp: T });
    expect(await store.slice(queue, { partition: { p }, limit: 10 })).toEqual([{ p, k: 501, v: 'next' }]);
  });

  it('leaves a stronger tombstone alone when a weaker one covers it, and splits nothing it need not', async () => {
    const { store, storedTombstones } = await aStore();
    const p = randomUUID();
    await store.delete(queue, { p, k: 5 }, { timestamp: 50n });
    await store.deleteRange(queue, { p }, {}, { timestamp: 10n });
    await store.deleteRange(queue, { p }, {}, { timestamp: 9n });
    expect(storedTombstones().map((t) => t.ts)).toEqual([10n, 50n, 10n]);
    await store.upsert(queue, { p, k: 5, v: 'hidden' }, { timestamp: 50n });
    await store.upsert(queue, { p, k: 6, v: 'hidden' }, { timestamp: 10n });
    await store.upsert(queue, { p, k: 7, v: 'shown' }, { timestamp: 11n });
    expect(await store.slice(queue, { partition: { p }, limit: 10 })).toEqual([{ p, k: 7, v: 'shown' }]);
  });

  it('answers, for every point, the strongest of every tombstone merged in (property)', () => {
    // Points are one-byte keys 0..9; a tombstone covers [lo, hi) or [lo, end).
    const key = (n: number) => Buffer.from([n]);
    const aTombstone = fc
      .record({ lo: fc.integer({ min: 0, max: 9 }), len: fc.option(fc.integer({ min: 1, max: 5 })), ts: fc.integer({ min: 1, max: 6 }) })
      .map(({ lo, len, ts }) => ({ lo: key(lo), hi: len === null ? null : key(Math.min(lo + len, 10)), ts: BigInt(ts), ldt: ts }));
    fc.assert(
      fc.property(fc.array(aTombstone, { maxLength: 12 }), (added) => {
        let list: Tombstone[] = [];
        for (const t of added) {
          // As the store does: merge with the ones it overlaps or touches.
          const touching = list.filter((u) => (u.hi === null || Buffer.compare(u.hi, t.lo) >= 0) && (t.hi === null || Buffer.compare(u.lo, t.hi) <= 0));
          const others = list.filter((u) => !touching.includes(u));
          list = [...others, ...mergeTombstones(touching, t)].sort((a, b) => Buffer.compare(a.lo, b.lo));
        }
        const covering = (ts: Tombstone[], n: number) =>
          ts.filter((t) => t.lo[0]! <= n && (t.hi === null || t.hi[0]! > n)).map((t) => t.ts);
        for (let n = 0; n <= 12; n++) {
          const expected = covering(added, n);
          const found = covering(list, n);
          // Disjoint: at most one stored tombstone per point, carrying the strongest timestamp.
          expect(found.length).toBeLessThanOrEqual(1);
          expect(found[0] ?? null).toBe(expected.length ? expected.reduce((a, b) => (a > b ? a : b)) : null);
        }
        // Neighbours with the same timestamp are joined.
        for (let i = 1; i < list.length; i++) {
          const [a, b] = [list[i - 1]!, list[i]!];
          expect(a.hi !== null && a.hi.equals(b.lo) && a.ts === b.ts).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('the covering tombstone of a row', () => {
  it('is found by one seek on the tombstone index, not a scan of the partition', async () => {
    const db = new Database(':memory:');
    const prepared: string[] = [];
    const recording: SqliteDatabaseLike = {
      prepare: (sql) => {
        prepared.push(sql);
        return db.prepare(sql);
      },
      exec: (sql) => db.exec(sql),
      transaction: (fn) => db.transaction(fn),
      defaultSafeIntegers: (toggle) => db.defaultSafeIntegers(toggle),
      pragma: (source) => db.pragma(source),
      close: () => db.close(),
    };
    const store = new SqliteStore({ database: recording });
    await store.ensureTables([queue]);
    const p = randomUUID();
    for (let k = 0; k < 200; k++) await store.delete(queue, { p, k });
    await store.upsert(queue, { p, k: 100, v: 'x' }, { timestamp: 1n });
    const covering = prepared.find((sql) => sql.includes('lo <= @ck'));
    expect(covering).toBeDefined();
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${covering!}`).all({ pk: Buffer.alloc(1), ck: Buffer.alloc(1) }) as Array<{ detail: string }>;
    expect(plan.map((r) => r.detail)).toEqual(['SEARCH d_queue USING PRIMARY KEY (pk=? AND lo<?)']);
    await store.close();
  });
});

describe('reads that pass over tombstones', () => {
  it('counts only the tombstones in the part of the range the read scanned', async () => {
    const lines: StoreWarning[] = [];
    const { store } = await aStore({ warn: (w) => lines.push(w) });
    const p = randomUUID();
    for (let k = 0; k < 5; k++) await store.upsert(queue, { p, k, v: `live ${k}` });
    for (let k = 100; k < 1_200; k++) await store.delete(queue, { p, k });
    // Five rows come back before any tombstone: nothing passed over.
    expect(await store.slice(queue, { partition: { p }, limit: 5 })).toHaveLength(5);
    expect(lines).toEqual([]);
    // Reversed, the read starts among them.
    expect(await store.slice(queue, { partition: { p }, limit: 5, reverse: true })).toHaveLength(5);
    expect(lines).toEqual([
      {
        table: 'queue',
        kind: 'tombstones',
        tombstones: 1100,
        message: 'Read 5 live rows and 1100 tombstone cells for query SELECT * FROM queue WHERE p = ? LIMIT 5 (see tombstone_warn_threshold)',
        keyValues: [p],
      },
    ]);
  });

  // A slice of up to 16 rows learns from its own statement whether its range holds enough
  // tombstones to count; a larger one asks apart (sqlite-store.ts, GATED_SLICE_LIMIT).
  // Either way, only the part scanned counts, and rows returned do not hide what was passed.
  for (const limit of [10, 50]) {
    it(`counts the tombstones between the rows a slice of ${limit} returns, and none past its last row`, async () => {
      const lines: StoreWarning[] = [];
      const { store } = await aStore({ warn: (w) => lines.push(w) });
      const p = randomUUID();
      for (let k = 0; k < 3; k++) await store.upsert(queue, { p, k, v: `live ${k}` });
      for (let k = 100; k < 1_200; k++) await store.delete(queue, { p, k });
      for (let k = 2_000; k < 2_000 + limit; k++) await store.upsert(queue, { p, k, v: `after ${k}` });
      for (let k = 3_000; k < 4_200; k++) await store.delete(queue, { p, k });
      // Three rows, then 1,100 tombstones, then the rest of the page: all passed over.
      const page = await store.slice(queue, { partition: { p }, limit });
      expect(page.map((r) => r.k)).toEqual([0, 1, 2, ...Array.from({ length: limit - 3 }, (_, i) => 2_000 + i)]);
      expect(lines.map((w) => w.tombstones)).toEqual([1_100]);
      // From the rows after them, the page ends before the next 1,200: nothing passed over.
      lines.length = 0;
      const later = await store.slice(queue, { partition: { p }, lower: { values: [2_000], inclusive: true }, limit });
      expect(later.map((r) => r.k)).toEqual(Array.from({ length: limit }, (_, i) => 2_000 + i));
      expect(lines).toEqual([]);
      // Up to the end of the partition: those 1,200 are passed over.
      const rest = await store.slice(queue, { partition: { p }, lower: { values: [2_001], inclusive: true }, limit });
      expect(rest).toHaveLength(limit - 1);
      expect(lines.map((w) => w.tombstones)).toEqual([1_200]);
    });
  }

  it('fails above the failure threshold with the error Cassandra surfaces as a ReadFailure', async () => {
    const { store } = await aStore({ tombstoneWarnThreshold: 10, tombstoneFailureThreshold: 50 });
    const p = randomUUID();
    for (let k = 0; k < 50; k++) await store.delete(queue, { p, k });
    expect(await store.slice(queue, { partition: { p }, limit: 10 })).toEqual([]);
    await store.delete(queue, { p, k: 50 });
    const error = await store.slice(queue, { partition: { p }, limit: 10 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreReadFailureError);
    expect((error as Error).message).toBe(
      "Scanned over 51 tombstones during query 'SELECT * FROM queue WHERE p = ? LIMIT 10' (tombstone_failure_threshold is 50); query aborted",
    );
    // The Cassandra adapter maps the driver's ReadFailure to the same port error.
    const readFailure = new cassandra.errors.ResponseError(cassandra.types.responseErrorCodes.readFailure, 'Operation failed - received 0 responses and 1 failures: READ_TOO_MANY_TOMBSTONES');
    expect(storeErrorFrom(readFailure)).toBeInstanceOf(StoreReadFailureError);
  });

  it('takes both thresholds and the compaction interval from the environment', () => {
    const config = loadConfig({ STORE_TOMBSTONE_WARN_THRESHOLD: '5', STORE_TOMBSTONE_FAILURE_THRESHOLD: '50', STORE_COMPACTION_INTERVAL_MS: '0' });
    expect(config.embeddedStore).toEqual({ tombstoneWarnThreshold: 5, tombstoneFailureThreshold: 50, compactionIntervalMs: 0 });
    expect(loadConfig({}).embeddedStore).toEqual({ tombstoneWarnThreshold: 1_000, tombstoneFailureThreshold: 100_000, compactionIntervalMs: 600_000 });
    expect(() => loadConfig({ STORE_TOMBSTONE_WARN_THRESHOLD: 'many' })).toThrow(
      'STORE_TOMBSTONE_WARN_THRESHOLD must be an integer between 0 and 1000000000, got "many"',
    );
  });
});

describe('a file written before tombstones had a deletion time', () => {
  it('has its overlapping tombstones merged into the new table, still hiding what they hid', async () => {
    const db = new Database(':memory:');
    db.defaultSafeIntegers(true);
    const old = new SqliteStore({ database: db });
    await old.ensureTables([queue]);
    const p = randomUUID();
    await old.upsert(queue, { p, k: 3, v: 'kept' }, { timestamp: 30n });
    // The old layout, as earlier versions created it, holding two overlapping ranges.
    db.exec('DROP TABLE d_queue');
    db.exec('CREATE TABLE d_queue (pk BLOB NOT NULL, lo BLOB, hi BLOB, ts INTEGER NOT NULL)');
    db.exec('CREATE INDEX d_queue_pk ON d_queue (pk, lo)');
    const pk = (db.prepare('SELECT pk FROM t_queue').get() as { pk: Buffer }).pk;
    const ck = (k: number) => {
      const b = Buffer.alloc(4);
      b.writeInt32BE(k ^ 0x80000000);
      return b;
    };
    db.prepare('INSERT INTO d_queue VALUES (?, NULL, ?, 20)').run(pk, ck(5));
    db.prepare('INSERT INTO d_queue VALUES (?, ?, NULL, 25)').run(pk, ck(2));
    const store = new SqliteStore({ database: db });
    await store.ensureTables([queue]);
    const rows = db.prepare('SELECT ts FROM d_queue ORDER BY lo').all() as Array<{ ts: bigint }>;
    expect(rows.map((r) => r.ts)).toEqual([20n, 25n]);
    await store.upsert(queue, { p, k: 1, v: 'hidden' }, { timestamp: 20n });
    await store.upsert(queue, { p, k: 9, v: 'hidden' }, { timestamp: 25n });
    await store.upsert(queue, { p, k: 0, v: 'shown' }, { timestamp: 21n });
    expect(await store.slice(queue, { partition: { p }, limit: 10 })).toEqual([
      { p, k: 0, v: 'shown' },
      { p, k: 3, v: 'kept' },
    ]);
  });
});
