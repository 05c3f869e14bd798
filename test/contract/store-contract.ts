/**
 * The store contract: the Cassandra semantics every adapter must show (DESIGN.md "The
 * store port"). `defineStoreContract(name, createStore)` is run for every store named
 * in STORES; there are no per-backend branches in here.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { v1 as uuidv1 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusteringBound, Store } from '../../src/store/port.js';
import { MAX_TIMESTAMP, StoreRequestError } from '../../src/store/port.js';
import { defineTable, type ClusteringOrder, type CqlValue, type Row } from '../../src/store/table.js';
import { tuplesBetween } from '../support/clustering-model.js';

/** A store under test and how to dispose of it. */
export interface StoreUnderTest {
  readonly store: Store;
  readonly dispose: () => Promise<void>;
}

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

const ALL_TABLES = [kv, counters, gridAsc, gridDesc, gridMixed, typed, byText, byTimeuuid, byInt, byBigint, byTimestamp];

/** Microseconds "now", as a client would compute it. */
function nowMicros(): bigint {
  return BigInt(Date.now()) * 1000n;
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
export function defineStoreContract(name: string, createStore: () => Promise<StoreUnderTest>): void {
  describe(`${name} store contract`, () => {
    let subject: StoreUnderTest;
    let store: Store;

    beforeAll(async () => {
      subject = await createStore();
      store = subject.store;
      await store.ensureTables(ALL_TABLES);
      // A second call is harmless: schema creation is idempotent.
      await store.ensureTables(ALL_TABLES);
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
