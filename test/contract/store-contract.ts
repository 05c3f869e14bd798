/**
 * The store contract: the Cassandra semantics every adapter must show (DESIGN.md "The
 * store port"). `defineStoreContract(name, createStore)` is run for every store named
 * in STORES; there are no per-backend branches in here.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { v1 as uuidv1 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_TABLES } from '../../src/composition-root.js';
import type { Clock } from '../../src/store/clock.js';
import type { ClusteringBound, Mutation, Store, StoreWarning } from '../../src/store/port.js';
import { MAX_PARTITION_KEYS, MAX_TIMESTAMP, StoreRequestError, StoreStartupError } from '../../src/store/port.js';
import { CountingStore } from '../../src/store/store-decorator.js';
import {
  defineTable,
  isCounterTable,
  keyColumnsOf,
  regularColumnsOf,
  type ClusteringOrder,
  type CqlType,
  type CqlValue,
  type Row,
  type TableSpec,
} from '../../src/store/table.js';
import { RANK_TOP, uuidAtRank, uuidRank } from '../../src/paging/rank-orders.js';
import { microsOfTimeuuid, minTimeuuidOfMicros, ticksOfTimeuuid, timeuuidBoundOfTicks, timeuuidOfMicros } from '../../src/store/timeuuid.js';
import { tuplesBetween } from '../support/clustering-model.js';
import type { StoreOptions, StoreUnderTest } from '../support/stores.js';

const kv = defineTable({
  name: 'contract_kv',
  columns: { id: 'uuid', name: 'text', score: 'int', big: 'bigint', at: 'timestamp', flag: 'boolean', tid: 'timeuuid' },
  partitionKey: ['id'],
});

const counters = defineTable({
  name: 'contract_counts',
  columns: { id: 'uuid', hits: 'counter', misses: 'counter' },
  partitionKey: ['id'],
});

function grid(name: string, orders: [ClusteringOrder, ClusteringOrder, ClusteringOrder]) {
  return defineTable({
    name,
    columns: { p: 'uuid', a: 'int', b: 'text', c: 'int', v: 'text' },
    partitionKey: ['p'],
    clustering: [
      { column: 'a', order: orders[0] },
      { column: 'b', order: orders[1] },
      { column: 'c', order: orders[2] },
    ],
  });
}

const gridAsc = grid('contract_grid_asc', ['ASC', 'ASC', 'ASC']);
const gridDesc = grid('contract_grid_desc', ['DESC', 'DESC', 'DESC']);
const gridMixed = grid('contract_grid_mixed', ['DESC', 'ASC', 'DESC']);

const typed = defineTable({
  name: 'contract_types',
  columns: { p: 'uuid', t: 'text', n: 'int', big: 'bigint', ts: 'timestamp', tid: 'timeuuid' },
  partitionKey: ['p'],
});
const byText = defineTable({
  name: 'contract_by_text',
  columns: { p: 'uuid', k: 'text', v: 'int' },
  partitionKey: ['p'],
  clustering: ['k'],
});
const byTimeuuid = defineTable({
  name: 'contract_by_timeuuid',
  columns: { p: 'uuid', k: 'timeuuid', v: 'int' },
  partitionKey: ['p'],
  clustering: ['k'],
});
const byUuid = defineTable({
  name: 'contract_by_uuid',
  columns: { p: 'uuid', k: 'uuid', v: 'int' },
  partitionKey: ['p'],
  clustering: ['k'],
});
const byInt = defineTable({
  name: 'contract_by_int',
  columns: { p: 'uuid', k: 'int', v: 'int' },
  partitionKey: ['p'],
  clustering: [{ column: 'k', order: 'DESC' }],
});
const byBigint = defineTable({
  name: 'contract_by_bigint',
  columns: { p: 'uuid', k: 'bigint', v: 'int' },
  partitionKey: ['p'],
  clustering: ['k'],
});
const byTimestamp = defineTable({
  name: 'contract_by_timestamp',
  columns: { p: 'uuid', k: 'timestamp', v: 'int' },
  partitionKey: ['p'],
  clustering: ['k'],
});

/** 12,000 rows in one partition, clustered `a DESC, b ASC`: more than two driver pages. */
const big = defineTable({
  name: 'contract_big',
  columns: { p: 'uuid', a: 'int', b: 'int', v: 'text' },
  partitionKey: ['p'],
  clustering: [
    { column: 'a', order: 'DESC' },
    { column: 'b', order: 'ASC' },
  ],
});

/** Rows a full-table scan must find: nothing else is ever written to it. */
const scanned = defineTable({
  name: 'contract_scanned',
  columns: { p: 'uuid', k: 'int', v: 'text' },
  partitionKey: ['p'],
  clustering: ['k'],
});

/** A table with a grace period of its own (Cassandra's `gc_grace_seconds`), an hour. */
const graced = defineTable({
  name: 'contract_graced',
  columns: { p: 'uuid', k: 'int', v: 'text' },
  partitionKey: ['p'],
  clustering: ['k'],
  gcGraceSeconds: 3_600,
});

/** Run `op` for 0..n-1, `width` at a time (Cassandra takes 1,001 deletes faster in parallel). */
async function inParallel(n: number, width: number, op: (i: number) => Promise<unknown>): Promise<void> {
  for (let start = 0; start < n; start += width) {
    await Promise.all(Array.from({ length: Math.min(width, n - start) }, (_, j) => op(start + j)));
  }
}

/**
 * The tombstone count of the first warning that a read of `table` passed over too many:
 * a replica's own ("Read … and N tombstone cells for query …", which the embedded store
 * gives too), or, where Cassandra runs with `read_thresholds_enabled`, the coordinator's
 * summary of its replicas' ("K nodes scanned up to N tombstones and issued tombstone
 * warnings for query …").
 */
function tombstoneWarning(warnings: readonly StoreWarning[], table: string): number | null {
  return warnings.find((w) => w.kind === 'tombstones' && w.table === table)?.tombstones ?? null;
}

const CONTRACT_TABLES = [scanned, graced, kv, counters, gridAsc, gridDesc, gridMixed, typed, byText, byTimeuuid, byUuid, byInt, byBigint, byTimestamp, big];

/** Microseconds "now", as a client would compute it. */
function nowMicros(): bigint {
  return BigInt(Date.now()) * 1000n;
}

/** A client clock `offsetMicros` away from the real time (a server with a skewed clock). */
function skewedClock(offsetMicros: bigint): Clock {
  let last = 0n;
  return {
    nowMicros() {
      const t = nowMicros() + offsetMicros;
      last = t > last ? t : last + 1n;
      return last;
    },
  };
}

const AN_HOUR_MICROS = 3_600_000_000n;

/** One sample value per CQL type, for round-tripping a row through any table. */
function sampleValue(type: CqlType): CqlValue {
  switch (type) {
    case 'uuid':
      return randomUUID();
    case 'timeuuid':
      return uuidv1();
    case 'text':
      return 'sample';
    case 'int':
      return 7;
    case 'bigint':
    case 'counter':
      return 7n;
    case 'timestamp':
      return new Date('2024-02-29T12:00:00.000Z');
    case 'boolean':
      return true;
  }
}

// --- reference model for slices, independent of the adapters' encoding ---------------

const A_VALUES = [-7, -1, 0, 2, 30];
const B_VALUES = ['a', 'b', 'zz', 'é', '😀'];
const C_VALUES = [-3, 4];

function modelSlice(
  orders: ClusteringOrder[],
  rows: CqlValue[][],
  lower: ClusteringBound | undefined,
  upper: ClusteringBound | undefined,
  reverse: boolean,
  limit: number,
): CqlValue[][] {
  const kept = tuplesBetween(orders, rows, lower, upper);
  if (reverse) kept.reverse();
  return kept.slice(0, limit);
}

/** A deterministic sample of bounds: every prefix length, present and absent values. */
function sampleBounds(): Array<ClusteringBound | undefined> {
  const bounds: Array<ClusteringBound | undefined> = [undefined];
  const aChoices = [-7, 0, 1, 30, 99];
  const bChoices = ['a', 'c', 'é', '😀'];
  const cChoices = [-3, 0, 4];
  for (const inclusive of [true, false]) {
    for (const a of aChoices) {
      bounds.push({ values: [a], inclusive });
      for (const b of bChoices.slice(0, 3)) {
        bounds.push({ values: [a, b], inclusive });
        for (const c of cChoices) bounds.push({ values: [a, b, c], inclusive });
      }
    }
  }
  return bounds;
}

function pick<T>(items: T[], seed: number, count: number): T[] {
  // A fixed pseudo-random sample, so a failure reproduces.
  const out: T[] = [];
  let x = seed;
  for (let i = 0; i < count; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out.push(items[x % items.length]!);
  }
  return out;
}

/** Run the store contract against the store `createStore` gives. */
export function defineStoreContract(
  name: string,
  createStore: (options?: StoreOptions) => Promise<StoreUnderTest>,
  timeouts: { readonly ddlTimeoutMs: number },
): void {
  describe(`${name} store contract`, () => {
    let subject: StoreUnderTest;
    let store: Store;

    beforeAll(async () => {
      subject = await createStore();
      store = subject.store;
      await store.ensureTables(CONTRACT_TABLES);
      // A second call is harmless: schema creation is idempotent.
      await store.ensureTables(CONTRACT_TABLES);
    });

    afterAll(async () => {
      await subject?.dispose();
    });

    describe('values and keys', () => {
      it('reads back every CQL type as written', async () => {
        const id = randomUUID();
        const tid = uuidv1();
        const at = new Date('1969-07-20T20:17:40.000Z');
        await store.upsert(kv, { id, name: 'Zoë', score: -42, big: -(2n ** 62n), at, flag: true, tid });
        expect(await store.get(kv, { id })).toEqual({ id, name: 'Zoë', score: -42, big: -(2n ** 62n), at, flag: true, tid });
      });

      it('reads back bigints exactly on both sides of the largest integer a double holds', async () => {
        const edge = BigInt(Number.MAX_SAFE_INTEGER);
        const values = [edge, edge + 1n, edge + 2n, -edge, -edge - 1n, -edge - 2n, 0n, (1n << 63n) - 1n, -(1n << 63n)];
        const ids = values.map(() => randomUUID());
        for (const [i, big] of values.entries()) await store.upsert(kv, { id: ids[i]!, big });
        expect((await store.getMany(kv, ids.map((id) => ({ id })))).map((r) => r?.big)).toEqual(values);
      });

      it('returns null for a missing row and rejects a partial primary key', async () => {
        expect(await store.get(kv, { id: randomUUID() })).toBeNull();
        await expect(store.get(gridAsc, { p: randomUUID(), a: 1 })).rejects.toBeInstanceOf(StoreRequestError);
      });

      it('rejects a value of the wrong type and an unknown column, writing nothing', async () => {
        const id = randomUUID();
        await expect(store.upsert(kv, { id, score: 'ten' as unknown as number })).rejects.toBeInstanceOf(StoreRequestError);
        await expect(store.upsert(kv, { id, nope: 'x' })).rejects.toBeInstanceOf(StoreRequestError);
        expect(await store.get(kv, { id })).toBeNull();
      });

      it('treats an insert as an upsert that keeps unnamed columns', async () => {
        const id = randomUUID();
        await store.upsert(kv, { id, name: 'first', score: 1 });
        await store.upsert(kv, { id, name: 'second' });
        expect(await store.get(kv, { id })).toMatchObject({ name: 'second', score: 1 });
      });

      it('reads many rows in key order with null for misses, in one call', async () => {
        const ids = [randomUUID(), randomUUID(), randomUUID()];
        await store.upsert(kv, { id: ids[0]!, name: 'zero' });
        await store.upsert(kv, { id: ids[2]!, name: 'two' });
        const rows = await store.getMany(kv, [{ id: ids[2]! }, { id: ids[1]! }, { id: ids[0]! }]);
        expect(rows.map((r) => r?.name ?? null)).toEqual(['two', null, 'zero']);
      });

      it('reads a row written with its key alone, by key, by many keys and in a slice, its key columns as stored: a uuid asked in upper case comes back in lower case', async () => {
        const id = randomUUID();
        await store.upsert(kv, { id });
        const bare = { id, name: null, score: null, big: null, at: null, flag: null, tid: null };
        expect(await store.get(kv, { id: id.toUpperCase() })).toEqual(bare);
        expect(await store.getMany(kv, [{ id: id.toUpperCase() }, { id: randomUUID() }, { id }])).toEqual([bare, null, bare]);
        const p = randomUUID();
        const at = new Date('2024-02-29T12:00:00.000Z');
        await store.upsert(byUuid, { p, k: id });
        await store.upsert(byTimestamp, { p, k: at, v: 1 });
        expect(await store.slice(byUuid, { partition: { p: p.toUpperCase() }, limit: 5 })).toEqual([{ p, k: id, v: null }]);
        expect(await store.getMany(byUuid, [{ p: p.toUpperCase(), k: id.toUpperCase() }])).toEqual([{ p, k: id, v: null }]);
        const [row] = await store.getMany(byTimestamp, [{ p, k: at }]);
        expect(row).toEqual({ p, k: at, v: 1 });
        // The row's Date is its own: changing it changes neither the key asked with nor the next read.
        (row!.k as Date).setTime(0);
        expect(at.getTime()).toBe(Date.parse('2024-02-29T12:00:00.000Z'));
      });
    });

    describe('last write wins, per cell', () => {
      it('keeps the higher timestamp whatever the arrival order', async () => {
        for (const order of [
          [200n, 100n],
          [100n, 200n],
        ]) {
          const id = randomUUID();
          for (const ts of order) await store.upsert(kv, { id, name: `at-${ts}` }, { timestamp: ts });
          expect((await store.get(kv, { id }))?.name).toBe('at-200');
        }
      });

      it('resolves each cell separately', async () => {
        const id = randomUUID();
        await store.upsert(kv, { id, name: 'new', score: 1 }, { timestamp: 300n });
        await store.upsert(kv, { id, name: 'old', score: 2 }, { timestamp: 200n });
        await store.upsert(kv, { id, score: 3 }, { timestamp: 400n });
        expect(await store.get(kv, { id })).toMatchObject({ name: 'new', score: 3 });
      });

      it('on equal timestamps keeps the greater value, in either order', async () => {
        for (const values of [
          ['apple', 'banana'],
          ['banana', 'apple'],
        ]) {
          const id = randomUUID();
          for (const name of values) await store.upsert(kv, { id, name }, { timestamp: 500n });
          expect((await store.get(kv, { id }))?.name).toBe('banana');
        }
      });

      it('on equal timestamps lets a deletion beat a write, in either order', async () => {
        const first = randomUUID();
        await store.upsert(kv, { id: first, name: 'x' }, { timestamp: 700n });
        await store.delete(kv, { id: first }, { timestamp: 700n });
        expect(await store.get(kv, { id: first })).toBeNull();

        const second = randomUUID();
        await store.delete(kv, { id: second }, { timestamp: 700n });
        await store.upsert(kv, { id: second, name: 'x' }, { timestamp: 700n });
        expect(await store.get(kv, { id: second })).toBeNull();
      });

      it('lets a null write delete one cell and keep the row', async () => {
        const id = randomUUID();
        await store.upsert(kv, { id, name: 'n', score: 9 }, { timestamp: 10n });
        await store.upsert(kv, { id, score: null }, { timestamp: 11n });
        expect(await store.get(kv, { id })).toMatchObject({ name: 'n', score: null });
      });
    });

    describe('tombstones', () => {
      it('hides a write with a lower timestamp that arrives after the delete', async () => {
        const id = randomUUID();
        await store.delete(kv, { id }, { timestamp: 2_000n });
        await store.upsert(kv, { id, name: 'late but older' }, { timestamp: 1_500n });
        expect(await store.get(kv, { id })).toBeNull();
        await store.upsert(kv, { id, name: 'newer' }, { timestamp: 2_500n });
        expect(await store.get(kv, { id })).toMatchObject({ name: 'newer', score: null });
      });

      it('does not remove cells written above the tombstone', async () => {
        const id = randomUUID();
        await store.upsert(kv, { id, name: 'kept' }, { timestamp: 5_000n });
        await store.delete(kv, { id }, { timestamp: 4_000n });
        expect((await store.get(kv, { id }))?.name).toBe('kept');
      });

      it('deletes a clustering range and hides older writes into it', async () => {
        const p = randomUUID();
        for (const a of [1, 2, 3]) {
          for (const b of ['x', 'y']) await store.upsert(gridAsc, { p, a, b, c: 0, v: `${a}${b}` }, { timestamp: 10n });
        }
        await store.deleteRange(gridAsc, { p }, { lower: { values: [2], inclusive: true }, upper: { values: [2], inclusive: true } }, { timestamp: 20n });
        await store.upsert(gridAsc, { p, a: 2, b: 'z', c: 0, v: 'late' }, { timestamp: 15n });
        const rows = await store.slice(gridAsc, { partition: { p }, limit: 100 });
        expect(rows.map((r) => r.v)).toEqual(['1x', '1y', '3x', '3y']);
        await store.upsert(gridAsc, { p, a: 2, b: 'z', c: 0, v: 'fresh' }, { timestamp: 25n });
        const after = await store.slice(gridAsc, { partition: { p }, limit: 100 });
        expect(after.map((r) => r.v)).toEqual(['1x', '1y', 'fresh', '3x', '3y']);
      });

      it("keeps hiding a late, older write within the table's grace period, for a row and for a range", async () => {
        const p = randomUUID();
        await store.delete(graced, { p, k: 1 }, { timestamp: 2_000n });
        await store.deleteRange(graced, { p }, { lower: { values: [10], inclusive: true }, upper: { values: [20], inclusive: false } }, { timestamp: 2_000n });
        await store.upsert(graced, { p, k: 1, v: 'late row' }, { timestamp: 1_999n });
        await store.upsert(graced, { p, k: 15, v: 'late in range' }, { timestamp: 2_000n });
        await store.upsert(graced, { p, k: 20, v: 'past the range' }, { timestamp: 1_000n });
        expect(await store.slice(graced, { partition: { p }, limit: 10 })).toEqual([{ p, k: 20, v: 'past the range' }]);
      });

      // On Cassandra each replica counts the tombstones its own read passes over, and with
      // read_thresholds_enabled false (the 5.0 default) only the coordinator's own read
      // reaches the client as a warning: a replica it asks logs the line in its own
      // system.log and tells the coordinator nothing. Which replicas a LOCAL_QUORUM read
      // asks is the snitch's choice (SimpleSnitch keeps ring order; the dynamic snitch
      // reorders by latency), so on a ring its coordinator may read nothing itself and the
      // client sees no warning. Written and read at ALL, every replica holds every
      // tombstone and the coordinator (a replica: the driver routes by token) reads too, so
      // the warning comes on one node and on a ring; the embedded store has one copy.
      it('warns, naming the table and the count, its key values apart and out of its text, when a read passes over more than 1,000 tombstones, and not over 10', async () => {
        const lines: StoreWarning[] = [];
        const logged = await createStore({ warn: (w) => lines.push(w), consistency: 'ALL' });
        try {
          await logged.store.ensureTables([byText]);
          const few = randomUUID();
          await inParallel(10, 10, (i) => logged.store.delete(byText, { p: few, k: `k${String(i).padStart(4, '0')}` }));
          expect(await logged.store.slice(byText, { partition: { p: few }, limit: 100 })).toEqual([]);
          expect(tombstoneWarning(lines, 'contract_by_text')).toBeNull();
          const many = randomUUID();
          await inParallel(1_001, 50, (i) => logged.store.delete(byText, { p: many, k: `k${String(i).padStart(4, '0')}` }));
          expect(await logged.store.slice(byText, { partition: { p: many }, limit: 100 })).toEqual([]);
          expect(tombstoneWarning(lines, 'contract_by_text')).toBeGreaterThanOrEqual(1_001);
          // The key is handed over apart, for a log to hash; the text never holds it.
          const warning = lines.find((w) => w.kind === 'tombstones')!;
          expect(warning.keyValues.map(String)).toContain(many);
          expect(warning.message).toMatch(/tombstone/);
          expect(lines.some((w) => w.message.includes(many) || w.message.includes(few))).toBe(false);
        } finally {
          await logged.dispose();
        }
      }, 120_000);

      it('deletes a whole partition when a range has no bounds', async () => {
        const p = randomUUID();
        await store.upsert(byInt, { p, k: 1, v: 1 }, { timestamp: 10n });
        await store.upsert(byInt, { p, k: 2, v: 2 }, { timestamp: 10n });
        await store.deleteRange(byInt, { p }, {}, { timestamp: 11n });
        expect(await store.slice(byInt, { partition: { p }, limit: 10 })).toEqual([]);
      });
    });

    describe('timestamps near Long.MAX (seed 001: first write wins)', () => {
      it('keeps the first write when timestamps are 2^63-1 minus now', async () => {
        const id = randomUUID();
        const first = MAX_TIMESTAMP - nowMicros();
        await store.upsert(kv, { id, name: 'first' }, { timestamp: first });
        await sleep(2);
        const second = MAX_TIMESTAMP - nowMicros();
        expect(second).toBeLessThan(first);
        await store.upsert(kv, { id, name: 'second' }, { timestamp: second });
        const cells = await store.readCells(kv, { id }, ['name']);
        expect(cells.row?.name).toBe('first');
        expect(cells.writetime.name).toBe(first);
      });

      it('can only be deleted by a tombstone at least as high', async () => {
        const id = randomUUID();
        const ts = MAX_TIMESTAMP - nowMicros();
        await store.upsert(kv, { id, name: 'sticky' }, { timestamp: ts });
        await store.delete(kv, { id });
        expect((await store.get(kv, { id }))?.name).toBe('sticky');
        await store.delete(kv, { id }, { timestamp: ts });
        expect(await store.get(kv, { id })).toBeNull();
      });

      it('accepts 2^63-1 itself and refuses a timestamp beyond it', async () => {
        const id = randomUUID();
        await store.upsert(kv, { id, name: 'max' }, { timestamp: MAX_TIMESTAMP });
        expect((await store.readCells(kv, { id }, ['name'])).writetime.name).toBe(MAX_TIMESTAMP);
        await expect(store.upsert(kv, { id, name: 'x' }, { timestamp: MAX_TIMESTAMP + 1n })).rejects.toBeInstanceOf(
          StoreRequestError,
        );
      });
    });

    describe('WRITETIME and TTL', () => {
      it('reports the write time of regular cells and null for unset ones', async () => {
        const id = randomUUID();
        await store.upsert(kv, { id, name: 'w' }, { timestamp: 123_456n });
        const cells = await store.readCells(kv, { id }, ['name', 'score']);
        expect(cells.writetime).toEqual({ name: 123_456n, score: null });
        expect(cells.ttl).toEqual({ name: null, score: null });
      });

      it('reports what a write above it needs: a same-value rewrite raises the write time, a lower write neither changes it nor wins, a cleared cell has none', async () => {
        // Ordering writes across servers (docs/how-it-works.md) reads these times and writes above them.
        const id = randomUUID();
        await store.upsert(kv, { id, name: 'a', score: 1 }, { timestamp: 5_000n });
        await store.upsert(kv, { id, name: 'a' }, { timestamp: 7_000n });
        await store.upsert(kv, { id, name: 'older', score: 2 }, { timestamp: 6_000n });
        await store.upsert(kv, { id, score: null }, { timestamp: 8_000n });
        const cells = await store.readCells(kv, { id }, ['name', 'score']);
        expect([cells.row?.name, cells.row?.score ?? null]).toEqual(['a', null]);
        expect(cells.writetime).toEqual({ name: 7_000n, score: null });
      });

      it('reports the remaining TTL of an expiring cell', async () => {
        const id = randomUUID();
        await store.upsert(kv, { id, name: 'ttl' }, { ttl: 100 });
        const { ttl } = await store.readCells(kv, { id }, ['name']);
        expect(ttl.name).toBeGreaterThanOrEqual(98);
        expect(ttl.name).toBeLessThanOrEqual(100);
      });

      it('refuses WRITETIME on a primary-key column, as CQL does', async () => {
        const id = randomUUID();
        await store.upsert(kv, { id, name: 'k' });
        await expect(store.readCells(kv, { id }, ['id'])).rejects.toBeInstanceOf(StoreRequestError);
      });

      it('returns a null row (and null times) for a missing key', async () => {
        const cells = await store.readCells(kv, { id: randomUUID() }, ['name']);
        expect(cells).toEqual({ row: null, writetime: { name: null }, ttl: { name: null } });
      });

      it('makes expired cells vanish, and the row with them', async () => {
        const id = randomUUID();
        const keep = randomUUID();
        await store.upsert(kv, { id, name: 'short-lived' }, { ttl: 2 });
        await store.upsert(kv, { id: keep, name: 'kept', score: 1 });
        await store.upsert(kv, { id: keep, name: 'expires' }, { ttl: 2 });
        expect((await store.get(kv, { id }))?.name).toBe('short-lived');
        await sleep(3_200);
        expect(await store.get(kv, { id })).toBeNull();
        expect(await store.get(kv, { id: keep })).toMatchObject({ name: null, score: 1 });
      });
    });

    describe('counters', () => {
      it('adds increments, positive and negative', async () => {
        const id = randomUUID();
        await store.increment(counters, { id }, { hits: 1 });
        await store.increment(counters, { id }, { hits: 5n, misses: 2 });
        await store.increment(counters, { id }, { hits: -2 });
        expect(await store.get(counters, { id })).toEqual({ id, hits: 4n, misses: 2n });
      });

      it('refuses an upsert into a counter table and an increment of a regular table', async () => {
        const id = randomUUID();
        await expect(store.upsert(counters, { id, hits: 1n })).rejects.toBeInstanceOf(StoreRequestError);
        await expect(store.increment(kv, { id }, { score: 1 })).rejects.toBeInstanceOf(StoreRequestError);
        expect(await store.get(counters, { id })).toBeNull();
      });
    });

    describe('lightweight transactions and logged batches', () => {
      it('inserts if not exists exactly once and returns the existing row otherwise', async () => {
        const id = randomUUID();
        expect(await store.insertIfNotExists(kv, { id, name: 'mine' })).toEqual({ applied: true, existing: null });
        const second = await store.insertIfNotExists(kv, { id, name: 'theirs' });
        expect(second.applied).toBe(false);
        expect(second.existing).toMatchObject({ id, name: 'mine' });
        expect((await store.get(kv, { id }))?.name).toBe('mine');
      });

      it('applies a batch across tables', async () => {
        const id = randomUUID();
        const p = randomUUID();
        await store.batch([
          { kind: 'upsert', table: kv, row: { id, name: 'batched' } },
          { kind: 'upsert', table: byInt, row: { p, k: 1, v: 10 } },
          { kind: 'upsert', table: byInt, row: { p, k: 2, v: 20 } },
          { kind: 'delete', table: byInt, key: { p, k: 1 } },
        ]);
        expect((await store.get(kv, { id }))?.name).toBe('batched');
        expect((await store.slice(byInt, { partition: { p }, limit: 10 })).map((r) => r.v)).toEqual([20]);
      });

      it('applies nothing when one statement of a batch is invalid', async () => {
        const id = randomUUID();
        const p = randomUUID();
        await expect(
          store.batch([
            { kind: 'upsert', table: kv, row: { id, name: 'never' } },
            { kind: 'upsert', table: byInt, row: { p, k: 1, v: 'not an int' as unknown as number } },
          ]),
        ).rejects.toBeInstanceOf(StoreRequestError);
        expect(await store.get(kv, { id })).toBeNull();
        expect(await store.slice(byInt, { partition: { p }, limit: 10 })).toEqual([]);
      });
    });

    describe('slices', () => {
      for (const [table, orders] of [
        [gridAsc, ['ASC', 'ASC', 'ASC']],
        [gridDesc, ['DESC', 'DESC', 'DESC']],
        [gridMixed, ['DESC', 'ASC', 'DESC']],
      ] as const) {
        it(`matches the reference over ${orders.join('/')} clustering, bounds in both directions`, async () => {
          const p = randomUUID();
          const other = randomUUID();
          const tuples: CqlValue[][] = [];
          for (const a of A_VALUES) for (const b of B_VALUES) for (const c of C_VALUES) tuples.push([a, b, c]);
          for (const [a, b, c] of tuples) {
            await store.upsert(table, { p, a: a!, b: b!, c: c!, v: `${a}|${b}|${c}` });
          }
          await store.upsert(table, { p: other, a: 0, b: 'a', c: 0, v: 'other partition' });

          const bounds = sampleBounds();
          const lowers = pick(bounds, 7, 60);
          const uppers = pick(bounds, 11, 60);
          let checked = 0;
          for (let i = 0; i < lowers.length; i++) {
            for (const reverse of [false, true]) {
              const lower = lowers[i]!;
              const upper = i % 3 === 0 ? undefined : uppers[i];
              const limit = [1, 3, 100][i % 3]!;
              const got = await store.slice(table, { partition: { p }, lower, upper, reverse, limit });
              const want = modelSlice([...orders], tuples, lower, upper, reverse, limit);
              expect(
                got.map((r) => [r.a, r.b, r.c]),
                `lower=${JSON.stringify(lower)} upper=${JSON.stringify(upper)} reverse=${reverse} limit=${limit}`,
              ).toEqual(want);
              checked++;
            }
          }
          expect(checked).toBe(120);
          // The whole partition, in clustering order and its exact reverse.
          const all = await store.slice(table, { partition: { p }, limit: 1000 });
          expect(all.map((r) => [r.a, r.b, r.c])).toEqual(modelSlice([...orders], tuples, undefined, undefined, false, 1000));
          const back = await store.slice(table, { partition: { p }, limit: 1000, reverse: true });
          expect(back.map((r) => r.v)).toEqual(all.map((r) => r.v).reverse());
        });
      }

      it('requires the whole partition key', async () => {
        await expect(store.slice(gridAsc, { partition: {}, limit: 1 })).rejects.toBeInstanceOf(StoreRequestError);
      });
    });

    describe('rows of one partition by clustering key (getInPartition)', () => {
      it('reads the rows asked for in the order asked, null for misses, a key asked twice answered twice, over a mixed ASC/DESC key, in one statement', async () => {
        const p = randomUUID();
        const other = randomUUID();
        for (const [a, b, c] of [[30, 'zz', 4], [-7, 'a', -3], [0, '😀', 4], [0, 'é', -3]] as const) {
          await store.upsert(gridMixed, { p, a, b, c, v: `${a}|${b}|${c}` });
        }
        await store.upsert(gridMixed, { p: other, a: 2, b: 'b', c: 4, v: 'other partition' });
        const counting = new CountingStore(store);
        const rows = await counting.getInPartition(gridMixed, { p }, [
          { a: 0, b: 'é', c: -3 },
          { a: 2, b: 'b', c: 4 },
          { a: -7, b: 'a', c: -3 },
          { a: 30, b: 'zz', c: 4 },
          { a: 0, b: 'é', c: -3 },
          { a: 0, b: '😀', c: -3 },
          { a: 0, b: '😀', c: 4 },
        ]);
        expect(rows.map((r) => r?.v ?? null)).toEqual(['0|é|-3', null, '-7|a|-3', '30|zz|4', '0|é|-3', null, '0|😀|4']);
        expect(rows[0]).toEqual({ p, a: 0, b: 'é', c: -3, v: '0|é|-3' });
        expect({ roundTrips: counting.roundTrips, statements: counting.statements }).toEqual({ roundTrips: 1, statements: 1 });
      });

      it('answers a deleted row, a row of a deleted range and an expired one with null, and a row written again after its delete with the row', async () => {
        const p = randomUUID();
        for (const c of [1, 2, 3, 4]) await store.upsert(gridAsc, { p, a: 1, b: 'x', c, v: `v${c}` });
        await store.upsert(gridAsc, { p, a: 2, b: 'x', c: 1, v: 'brief' }, { ttl: 1 });
        await store.delete(gridAsc, { p, a: 1, b: 'x', c: 1 });
        await store.deleteRange(gridAsc, { p }, { lower: { values: [1, 'x', 3], inclusive: true }, upper: { values: [1, 'x', 4], inclusive: true } });
        await store.upsert(gridAsc, { p, a: 1, b: 'x', c: 4, v: 'again' });
        await sleep(2_200);
        const rows = await store.getInPartition(gridAsc, { p }, [1, 2, 3, 4].map((c) => ({ a: 1, b: 'x', c })).concat([{ a: 2, b: 'x', c: 1 }]));
        expect(rows.map((r) => r?.v ?? null)).toEqual([null, 'v2', null, 'again', null]);
      });

      it('answers no keys with no rows, and reads the most keys it takes', async () => {
        const p = randomUUID();
        expect(await store.getInPartition(byInt, { p }, [])).toEqual([]);
        for (const k of [-5, 0, 7]) await store.upsert(byInt, { p, k, v: k * 10 });
        const keys = Array.from({ length: MAX_PARTITION_KEYS }, (_, i) => ({ k: i - 50 }));
        const rows = await store.getInPartition(byInt, { p }, keys);
        expect(rows.flatMap((r, i) => (r ? [[keys[i]!.k, r.v]] : []))).toEqual([[-5, -50], [0, 0], [7, 70]]);
      });

      it('refuses a partial clustering key, a value of the wrong type, a missing partition key, a table without clustering columns and more keys than it takes, reading nothing', async () => {
        const counting = new CountingStore(store);
        const p = randomUUID();
        const refusals = [
          [gridAsc, { p }, [{ a: 1, b: 'x' }], 'clustering key column "c" of contract_grid_asc is required'],
          [gridAsc, { p }, [{ a: 'one', b: 'x', c: 1 }], '"a"'],
          [gridAsc, {}, [{ a: 1, b: 'x', c: 1 }], 'partition key column "p" of contract_grid_asc is required'],
          [kv, { id: p }, [{}], 'has no clustering columns'],
          [byInt, { p }, Array.from({ length: MAX_PARTITION_KEYS + 1 }, (_, k) => ({ k })), `at most ${MAX_PARTITION_KEYS} keys, got ${MAX_PARTITION_KEYS + 1}`],
        ] as const;
        for (const [table, partition, keys, message] of refusals) {
          const refused = counting.getInPartition(table, partition as Row, keys as unknown as Row[]);
          await expect(refused).rejects.toBeInstanceOf(StoreRequestError);
          await expect(refused).rejects.toThrow(message);
        }
        expect(counting.statements).toBe(0);
      });
    });

    describe('identifiers and the product tables', () => {
      it('refuses a reserved CQL keyword as a table or column name, naming the table, the column and the word', async () => {
        expect(() => defineTable({ name: 'contract_reserved', columns: { id: 'uuid', token: 'text' }, partitionKey: ['id'] })).toThrow(
          'column "token" of table contract_reserved: "token" is a reserved CQL keyword',
        );
        expect(() => defineTable({ name: 'order', columns: { id: 'uuid' }, partitionKey: ['id'] })).toThrow(
          'table "order": "order" is a reserved CQL keyword',
        );
        // A declaration built by hand, around defineTable, is refused by the store itself.
        const handBuilt: TableSpec = { name: 'contract_reserved', columns: { id: 'uuid', from: 'text' }, partitionKey: ['id'], clustering: [] };
        await expect(store.ensureTables([handBuilt])).rejects.toThrow(
          'column "from" of table contract_reserved: "from" is a reserved CQL keyword',
        );
      });

      it('creates every table of the product (ALL_TABLES) and round-trips a row through each', async () => {
        await store.ensureTables(ALL_TABLES);
        for (const table of ALL_TABLES) {
          const row: Row = Object.fromEntries(Object.entries(table.columns).map(([c, type]) => [c, sampleValue(type)]));
          const key: Row = Object.fromEntries(keyColumnsOf(table).map((c) => [c, row[c]!]));
          const regular = regularColumnsOf(table);
          // A counter row comes into being by an increment (sampleValue gives counters 7n).
          if (isCounterTable(table)) await store.increment(table, key, Object.fromEntries(regular.map((c) => [c, 7n])));
          else await store.upsert(table, row);
          expect(await store.get(table, key), table.name).toEqual(row);
        }
      }, timeouts.ddlTimeoutMs);

      it('checks the schema without changing it: complete after ensureTables, and names a missing table and a missing column', async () => {
        expect(await store.checkSchema([kv, counters])).toEqual([]);
        const missing = defineTable({ name: 'contract_never_created', columns: { id: 'uuid' }, partitionKey: ['id'] });
        const grown = defineTable({ name: kv.name, columns: { ...kv.columns, contract_added: 'text' }, partitionKey: ['id'] });
        const differences = await store.checkSchema([kv, missing, grown]);
        expect(differences, differences.join("; ")).toHaveLength(2);
        expect(differences[0]).toMatch(/^table (\w+\.)?contract_never_created$/);
        expect(differences[1]).toMatch(new RegExp(`^column ${kv.name}\\.\\w*contract_added$`));
        // Still missing: a check creates nothing.
        expect(await store.checkSchema([missing])).toHaveLength(1);
      });
      it('refuses a table declared again with another key, naming the table and both keys, and checkSchema reports it', async () => {
        const reordered = defineTable({ name: big.name, columns: { ...big.columns }, partitionKey: ['p'], clustering: [{ column: 'a', order: 'ASC' }, { column: 'b', order: 'ASC' }] });
        const repartitioned = defineTable({ name: kv.name, columns: { ...kv.columns }, partitionKey: ['id', 'name'] });
        const clustered = /^table (\w+\.)?contract_big clustered by \(a DESC, b ASC\), declared \(a ASC, b ASC\)$/;
        const partitioned = /^table (\w+\.)?contract_kv partitioned by \(id\), declared \(id, name\)$/;
        const error = await store.ensureTables([reordered, repartitioned]).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(StoreStartupError);
        expect((error as Error).message).toMatch(/clustered by \(a DESC, b ASC\), declared \(a ASC, b ASC\), table .*partitioned by \(id\), declared \(id, name\);/);
        const differences = await store.checkSchema([reordered, repartitioned]);
        expect(differences, differences.join('; ')).toHaveLength(2);
        expect(differences[0]).toMatch(clustered);
        expect(differences[1]).toMatch(partitioned);
        // Refused, not changed: the tables are still as first declared.
        expect(await store.checkSchema([big, kv])).toEqual([]);
      });
    });

    describe('reads that never truncate (the driver pages at 5,000 rows)', () => {
      const p = randomUUID();
      const expected: string[] = [];
      beforeAll(async () => {
        // 12,000 rows: a = 1 then a = 0 (DESC), b = 0..5999 (ASC) under each.
        const mutations: Mutation[] = [];
        for (const a of [1, 0]) {
          for (let b = 0; b < 6_000; b++) {
            mutations.push({ kind: 'upsert', table: big, row: { p, a, b, v: 'x' } });
            expected.push(`${a}:${b}`);
          }
        }
        for (let i = 0; i < mutations.length; i += 100) await store.batch(mutations.slice(i, i + 100));
      });

      it('returns all 12,000 rows of one slice, in clustering order and in reverse', async () => {
        const rows = await store.slice(big, { partition: { p }, limit: 20_000 });
        expect(rows.map((r) => `${r.a}:${r.b}`)).toEqual(expected);
        const back = await store.slice(big, { partition: { p }, limit: 20_000, reverse: true });
        expect(back.map((r) => `${r.a}:${r.b}`)).toEqual([...expected].reverse());
      });

      it('returns every row of a multi-range slice over a mixed ASC/DESC key, in order, each range to its end', async () => {
        // After (1, 0): the rest of a = 1 (5,999 rows, more than a page), then all of a = 0.
        const lower = { values: [1, 0], inclusive: false };
        const rows = await store.slice(big, { partition: { p }, lower, limit: 20_000 });
        expect(rows.map((r) => `${r.a}:${r.b}`)).toEqual(expected.slice(1));
        const back = await store.slice(big, { partition: { p }, lower, limit: 20_000, reverse: true });
        expect(back.map((r) => `${r.a}:${r.b}`)).toEqual(expected.slice(1).reverse());
        const limited = await store.slice(big, { partition: { p }, lower, limit: 7_000 });
        expect(limited.map((r) => `${r.a}:${r.b}`)).toEqual(expected.slice(1, 7_001));
      });
    });

    describe('full-table scans', () => {
      it('visit every live row once, a page at a time, each partition in clustering order, and end', async () => {
        const partitions = Array.from({ length: 5 }, () => randomUUID());
        const expected = new Set<string>();
        for (const [i, p] of partitions.entries()) {
          for (let k = 0; k < 4; k++) {
            await store.upsert(scanned, { p, k, v: `${i}:${k}` });
            expected.add(`${p}:${k}`);
          }
        }
        // Deleted rows and partitions are not visited.
        await store.delete(scanned, { p: partitions[0]!, k: 2 });
        expected.delete(`${partitions[0]}:2`);
        await store.deleteRange(scanned, { p: partitions[1]! }, {});
        for (let k = 0; k < 4; k++) expected.delete(`${partitions[1]}:${k}`);
        const seen: string[] = [];
        const counting = new CountingStore(store);
        let after: string | null = null;
        let pages = 0;
        do {
          const page: { rows: Array<{ p?: unknown; k?: unknown; v?: unknown }>; next: string | null } = await counting.scan(scanned, { limit: 3, after });
          expect(page.rows.length).toBeLessThanOrEqual(3);
          for (const r of page.rows) seen.push(`${r.p}:${r.k}`);
          after = page.next;
          pages++;
        } while (after !== null && pages < 50);
        expect(after).toBeNull();
        expect(counting.roundTrips).toBe(pages);
        expect(seen.length).toBe(new Set(seen).size);
        expect(new Set(seen)).toEqual(expected);
        // Within a partition, clustering order; a partition's rows are not interleaved with another's.
        const order = seen.map((s) => s.split(':'));
        const firstAt = new Map<string, number>();
        order.forEach(([p], i) => firstAt.has(p!) || firstAt.set(p!, i));
        order.forEach(([p, k], i) => {
          if (i > 0 && order[i - 1]![0] === p) expect(Number(k)).toBeGreaterThan(Number(order[i - 1]![1]));
          else expect(firstAt.get(p!)).toBe(i);
        });
        // One page large enough for everything ends at once.
        const whole = await store.scan(scanned, { limit: 100 });
        expect(whole.rows.length).toBe(expected.size);
        expect(whole.next).toBeNull();
      });
    });

    describe('conditional deletes and the Paxos ballot', () => {
      it('deletes IF EXISTS only an existing row, and IF col = ? only when the column matches', async () => {
        const id = randomUUID();
        expect(await store.deleteIf(kv, { id })).toBe(false);
        expect((await store.insertIfNotExists(kv, { id, name: 'mine', score: 1 })).applied).toBe(true);
        expect(await store.deleteIf(kv, { id }, { name: 'theirs' })).toBe(false);
        expect(await store.get(kv, { id })).toMatchObject({ name: 'mine', score: 1 });
        expect(await store.deleteIf(kv, { id }, { name: 'mine', score: 1 })).toBe(true);
        expect(await store.get(kv, { id })).toBeNull();
        expect((await store.insertIfNotExists(kv, { id, name: 'again' })).applied).toBe(true);
        expect(await store.deleteIf(kv, { id })).toBe(true);
        expect(await store.get(kv, { id })).toBeNull();
      });

      it('refuses a condition on a key column, a null condition and a conditional delete on a counter table', async () => {
        const id = randomUUID();
        await expect(store.deleteIf(kv, { id }, { id })).rejects.toBeInstanceOf(StoreRequestError);
        await expect(store.deleteIf(kv, { id }, { name: null })).rejects.toBeInstanceOf(StoreRequestError);
        await expect(store.deleteIf(counters, { id })).rejects.toBeInstanceOf(StoreRequestError);
      });

      it("stamps an insert-if-not-exists with the coordinator's clock: a caller an hour behind cannot delete it plainly, only conditionally", async () => {
        const behind = await createStore({ clock: skewedClock(-AN_HOUR_MICROS) });
        try {
          await behind.store.ensureTables([kv]);
          const id = randomUUID();
          expect((await behind.store.insertIfNotExists(kv, { id, name: 'claimed' })).applied).toBe(true);
          const { writetime } = await behind.store.readCells(kv, { id }, ['name']);
          // The ballot's time, not the caller's: within a minute of now, not an hour ago.
          expect(writetime.name! > nowMicros() - 60_000_000n).toBe(true);
          await behind.store.delete(kv, { id });
          expect((await behind.store.get(kv, { id }))?.name).toBe('claimed');
          expect(await behind.store.deleteIf(kv, { id }, { name: 'claimed' })).toBe(true);
          expect(await behind.store.get(kv, { id })).toBeNull();
          expect((await behind.store.insertIfNotExists(kv, { id, name: 'claimed again' })).applied).toBe(true);
          expect((await behind.store.get(kv, { id }))?.name).toBe('claimed again');
        } finally {
          await behind.dispose();
        }
      });

      it('keeps a plain upsert of a column the insert-if-not-exists did not write beside the claim, even from a clock an hour behind', async () => {
        // What an idempotency key's result relies on (features/idempotency): the claim is a
        // Paxos round, the result a plain write of another column, whatever its timestamp.
        const behind = await createStore({ clock: skewedClock(-AN_HOUR_MICROS) });
        try {
          await behind.store.ensureTables([kv]);
          const id = randomUUID();
          expect((await behind.store.insertIfNotExists(kv, { id, name: 'claimed' }, { ttl: 3_600 })).applied).toBe(true);
          await behind.store.upsert(kv, { id, score: 7 }, { ttl: 3_600 });
          expect(await behind.store.get(kv, { id })).toMatchObject({ name: 'claimed', score: 7 });
          const second = await behind.store.insertIfNotExists(kv, { id, name: 'theirs' });
          expect(second.applied).toBe(false);
          expect(second.existing).toMatchObject({ name: 'claimed', score: 7 });
          expect(await behind.store.deleteIf(kv, { id }, { name: 'claimed' })).toBe(true);
          expect(await behind.store.get(kv, { id })).toBeNull();
        } finally {
          await behind.dispose();
        }
      });

      it('lets a plain delete from a clock an hour ahead hide the next insert-if-not-exists; a conditional delete does not', async () => {
        const ahead = await createStore({ clock: skewedClock(AN_HOUR_MICROS) });
        try {
          await ahead.store.ensureTables([kv]);
          const plain = randomUUID();
          await ahead.store.insertIfNotExists(kv, { id: plain, name: 'first' });
          await ahead.store.delete(kv, { id: plain });
          // Applied, and yet invisible: the tombstone lies an hour above the ballot.
          expect((await ahead.store.insertIfNotExists(kv, { id: plain, name: 'second' })).applied).toBe(true);
          expect(await ahead.store.get(kv, { id: plain })).toBeNull();

          const conditional = randomUUID();
          await ahead.store.insertIfNotExists(kv, { id: conditional, name: 'first' });
          expect(await ahead.store.deleteIf(kv, { id: conditional })).toBe(true);
          expect((await ahead.store.insertIfNotExists(kv, { id: conditional, name: 'second' })).applied).toBe(true);
          expect((await ahead.store.get(kv, { id: conditional }))?.name).toBe('second');
        } finally {
          await ahead.dispose();
        }
      });
    });

    describe("Cassandra's limits", () => {
      it('refuses a delete, a range delete and a logged batch on a counter table, and keeps the counts', async () => {
        const id = randomUUID();
        await store.increment(counters, { id }, { hits: 3 });
        await expect(store.delete(counters, { id })).rejects.toBeInstanceOf(StoreRequestError);
        await expect(store.deleteRange(counters, { id }, {})).rejects.toBeInstanceOf(StoreRequestError);
        await expect(store.batch([{ kind: 'delete', table: counters, key: { id } }])).rejects.toBeInstanceOf(StoreRequestError);
        await expect(store.upsert(counters, { id, hits: 1n }, { timestamp: 10n })).rejects.toBeInstanceOf(StoreRequestError);
        expect(await store.get(counters, { id })).toEqual({ id, hits: 3n, misses: null });
      });

      it('refuses a TTL expiring after 2038-01-19T03:14:06Z and accepts one expiring just before', async () => {
        const id = randomUUID();
        const secondsLeft = 2 ** 31 - 2 - Math.floor(Date.now() / 1000);
        await expect(store.upsert(kv, { id, name: 'late' }, { ttl: secondsLeft + 60 })).rejects.toBeInstanceOf(StoreRequestError);
        await expect(store.insertIfNotExists(kv, { id, name: 'late' }, { ttl: secondsLeft + 60 })).rejects.toBeInstanceOf(
          StoreRequestError,
        );
        expect(await store.get(kv, { id })).toBeNull();
        await store.upsert(kv, { id, name: 'in time' }, { ttl: secondsLeft - 60 });
        expect((await store.readCells(kv, { id }, ['name'])).ttl.name).toBeGreaterThan(secondsLeft - 120);
      });
    });

    describe('accounting', () => {
      it('counts a getMany of 20 keys as one round trip and 20 statements', async () => {
        const counting = new CountingStore(store);
        const ids = Array.from({ length: 20 }, () => ({ id: randomUUID() }));
        await counting.getMany(kv, ids);
        expect({ roundTrips: counting.roundTrips, statements: counting.statements }).toEqual({ roundTrips: 1, statements: 20 });
      });
    });

    describe('clustering order per type', () => {
      async function order(table: typeof byText, keys: CqlValue[]): Promise<CqlValue[]> {
        const p = randomUUID();
        for (const [i, k] of keys.entries()) await store.upsert(table, { p, k, v: i } as Row);
        return (await store.slice(table, { partition: { p }, limit: 100 })).map((r) => r.k ?? null);
      }

      it('orders text by UTF-8 bytes, not UTF-16 code units', async () => {
        const keys = ['😀', 'ｚ', '中', 'é', 'z', 'a', 'Z', ''];
        expect(await order(byText, keys)).toEqual(['', 'Z', 'a', 'z', 'é', '中', 'ｚ', '😀']);
      });

      it('orders timeuuids by their embedded time, whatever the creation order', async () => {
        const t = Date.UTC(2024, 0, 1);
        const late = uuidv1({ msecs: t + 3_000, nsecs: 0 });
        const early = uuidv1({ msecs: t, nsecs: 0 });
        const middle = uuidv1({ msecs: t + 1_000, nsecs: 0 });
        const ancient = uuidv1({ msecs: Date.UTC(1999, 0, 1), nsecs: 0 });
        expect(await order(byTimeuuid as unknown as typeof byText, [late, early, middle, ancient])).toEqual([
          ancient,
          early,
          middle,
          late,
        ]);
      });

      it('starts a slice bounded by the lowest timeuuid of a microsecond at every timeuuid of that microsecond, whatever its random part', async () => {
        const p = randomUUID();
        const t = 1_700_000_000_123_456n;
        // Random parts at the extremes of Cassandra's signed-byte order, and in between.
        const parts = [Buffer.alloc(8, 0x80), Buffer.alloc(8, 0x7f), Buffer.alloc(8, 0x00), Buffer.alloc(8, 0xff), Buffer.from('0123456789abcdef', 'hex')];
        const at = parts.map((bytes) => timeuuidOfMicros(t, () => Buffer.from(bytes)));
        const before = timeuuidOfMicros(t - 1n, () => Buffer.alloc(8, 0x7f));
        for (const [i, k] of [...at, before].entries()) await store.upsert(byTimeuuid, { p, k, v: i });
        const rows = await store.slice(byTimeuuid, { partition: { p }, lower: { values: [minTimeuuidOfMicros(t)], inclusive: true }, limit: 10 });
        expect(rows.map((r) => r.k).sort()).toEqual([...at].sort());
        expect(rows.map((r) => microsOfTimeuuid(r.k as string))).toEqual(at.map(() => t));
      });

      it('ends a slice bounded by the highest timeuuid of a tick at every timeuuid of that tick, and starts one at the lowest (offset reads from them)', async () => {
        const p = randomUUID();
        const t = 1_700_000_000_654_321n;
        const ticks = ticksOfTimeuuid(timeuuidOfMicros(t));
        // The random part's extremes in Cassandra's signed-byte order (the variant bits kept by timeuuidOfMicros): 0x7f makes the highest itself.
        const parts = [Buffer.alloc(8, 0x80), Buffer.alloc(8, 0x7f), Buffer.alloc(8, 0xff), Buffer.from('00112233445566ff', 'hex')];
        const at = parts.map((bytes) => timeuuidOfMicros(t, () => Buffer.from(bytes)));
        const [later, earlier] = [timeuuidOfMicros(t + 1n, () => Buffer.alloc(8, 0x80)), timeuuidOfMicros(t - 1n, () => Buffer.alloc(8, 0x7f))];
        for (const [i, k] of [...at, later, earlier].entries()) await store.upsert(byTimeuuid, { p, k, v: i });
        const highest = timeuuidBoundOfTicks(ticks, 'highest');
        const down = await store.slice(byTimeuuid, { partition: { p }, upper: { values: [highest], inclusive: true }, reverse: true, limit: 10 });
        expect(down.slice(0, at.length).map((r) => r.k).sort()).toEqual([...at].sort());
        expect(down.map((r) => r.k).slice(at.length)).toEqual([earlier]);
        const up = await store.slice(byTimeuuid, { partition: { p }, lower: { values: [timeuuidBoundOfTicks(ticks, 'lowest')], inclusive: true }, limit: 10 });
        expect(up.slice(0, at.length).map((r) => r.k)).toEqual(down.slice(0, at.length).map((r) => r.k).reverse());
        expect(up.map((r) => r.k).slice(at.length)).toEqual([later]);
      });

      it("orders uuids as UUIDType does: version first, time-based ones by their time, the rest by unsigned bytes; a rank's lowest and highest uuid bound it (offset reads from them)", async () => {
        const v4 = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
        const [low, mid, high, top] = [v4('00'.repeat(16)), v4('7f'.repeat(16)), v4('80'.repeat(16)), v4('ff'.repeat(16))];
        const t = Date.UTC(2024, 0, 1);
        const [early, late] = [uuidv1({ msecs: t, nsecs: 0 }), uuidv1({ msecs: t + 1, nsecs: 0 })];
        const [nil, max] = [uuidAtRank(0n, 'lowest'), uuidAtRank(RANK_TOP, 'highest')];
        const sorted = [nil, early, late, low, mid, high, top, max];
        expect(await order(byUuid as unknown as typeof byText, [top, late, max, mid, nil, high, early, low])).toEqual(sorted);
        // A slice from the lowest uuid of mid's rank, and back from its highest: every uuid of that rank, nothing of another.
        const p = randomUUID();
        const rank = uuidRank(mid);
        const [lowest, highest] = [uuidAtRank(rank, 'lowest'), uuidAtRank(rank, 'highest')];
        for (const [i, k] of [...sorted, lowest, highest].entries()) await store.upsert(byUuid, { p, k, v: i });
        const up = await store.slice(byUuid, { partition: { p }, lower: { values: [lowest], inclusive: true }, limit: 3 });
        const down = await store.slice(byUuid, { partition: { p }, upper: { values: [highest], inclusive: true }, reverse: true, limit: 3 });
        expect(up.map((r) => r.k)).toEqual([lowest, mid, highest]);
        expect(down.map((r) => r.k)).toEqual([highest, mid, lowest]);
      });

      it('orders negative integers numerically (and DESC reverses it)', async () => {
        expect(await order(byInt as unknown as typeof byText, [3, -1, 0, -300, 2_000_000_000, -2_000_000_000])).toEqual([
          2_000_000_000, 3, 0, -1, -300, -2_000_000_000,
        ]);
        expect(await order(byBigint as unknown as typeof byText, [5n, -(2n ** 62n), 0n, -1n, 2n ** 62n])).toEqual([
          -(2n ** 62n),
          -1n,
          0n,
          5n,
          2n ** 62n,
        ]);
      });

      it('orders timestamps before and after 1970', async () => {
        const d = (s: string) => new Date(s);
        expect(
          await order(byTimestamp as unknown as typeof byText, [d('2020-01-01T00:00:00Z'), d('1960-01-01T00:00:00Z'), d('1970-01-01T00:00:00Z')]),
        ).toEqual([d('1960-01-01T00:00:00Z'), d('1970-01-01T00:00:00Z'), d('2020-01-01T00:00:00Z')]);
      });
    });
  });
}
