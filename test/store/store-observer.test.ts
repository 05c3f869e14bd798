/**
 * The store observer on the embedded store: every round trip reported once, with its
 * operation, tables, statements, outcome and error kind, lightweight-transaction
 * outcomes and tombstone warnings; a request's own counts unchanged beneath it. (The
 * outcomes only a lost Cassandra response produces, unknown then settled or given up,
 * are proven on a real Cassandra in cassandra-store.test.ts.)
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { StoreRequestError, StoreUnavailableError, type Store } from '../../src/store/port.js';
import { CountingStore, type StoreCall } from '../../src/store/store-decorator.js';
import { ObservedStore, storeErrorKindOf, type StoreObserver, type StoreRoundTrip } from '../../src/store/store-observer.js';
import { defineTable } from '../../src/store/table.js';
import { FaultyStore } from '../support/faulty-store.js';
import { memorySqliteStore } from '../support/stores.js';

const claims = defineTable({ name: 'claims', columns: { name: 'text', owner: 'uuid' }, partitionKey: ['name'] });
const items = defineTable({
  name: 'items',
  columns: { list: 'text', pos: 'int', label: 'text' },
  partitionKey: ['list'],
  clustering: [{ column: 'pos', order: 'ASC' }],
});

/** What an observer keeps of a round trip (the report itself is reused). */
type Seen = Omit<StoreRoundTrip, 'durationSeconds' | 'error'> & { durationSeconds: number };

/** An observer that copies every report. */
function recorder(): StoreObserver & { seen: Seen[] } {
  const seen: Seen[] = [];
  return {
    seen,
    finished(trip) {
      const { operation, table, tables, statements, durationSeconds, errorKind, lwt, tombstoneWarnings } = trip;
      seen.push({ operation, table, tables: [...tables], statements, durationSeconds, errorKind, lwt, tombstoneWarnings });
    },
  };
}

/** The report fields a test compares, without the duration. */
function shape(s: Seen) {
  const { durationSeconds: _duration, ...rest } = s;
  return rest;
}

async function observed(options: { tombstoneWarnThreshold?: number; tombstoneFailureThreshold?: number } = {}) {
  const base = memorySqliteStore(options);
  await base.ensureTables([claims, items]);
  const faulty = new FaultyStore(base);
  const rec = recorder();
  const store: Store = new ObservedStore(faulty, [rec]);
  return { store, faulty, rec };
}

const ok = { errorKind: null, lwt: null, tombstoneWarnings: 0 } as const;

describe('the store observer', () => {
  it('reports each round trip once, with its operation, tables and statements, and leaves the request\'s own counts as they were', async () => {
    const { store, rec } = await observed();
    const request = new CountingStore(store);
    await request.upsert(items, { list: 'a', pos: 1, label: 'one' });
    await request.batch([
      { kind: 'upsert', table: items, row: { list: 'a', pos: 2, label: 'two' } },
      { kind: 'upsert', table: claims, row: { name: 'n', owner: randomUUID() } },
    ]);
    expect(await request.slice(items, { partition: { list: 'a' }, limit: 10 })).toHaveLength(2);
    await request.getMany(items, [{ list: 'a', pos: 1 }, { list: 'a', pos: 2 }, { list: 'b', pos: 1 }]);

    expect(rec.seen.map(shape)).toEqual([
      { operation: 'upsert', table: 'items', tables: ['items'], statements: 1, ...ok },
      { operation: 'batch', table: 'items', tables: ['items', 'claims'], statements: 1, ...ok },
      { operation: 'slice', table: 'items', tables: ['items'], statements: 1, ...ok },
      // One statement per key, as Cassandra sends them.
      { operation: 'getMany', table: 'items', tables: ['items'], statements: 3, ...ok },
    ]);
    expect(rec.seen.every((s) => s.durationSeconds >= 0 && s.durationSeconds < 5)).toBe(true);
    // The request's counting view still counts every round trip and statement.
    expect(request.roundTrips).toBe(4);
    expect(request.statements).toBe(rec.seen.reduce((n, s) => n + s.statements, 0));
  });

  it('reports lightweight transactions as applied or not applied', async () => {
    const { store, rec } = await observed();
    const owner = randomUUID();
    expect((await store.insertIfNotExists(claims, { name: 'x', owner })).applied).toBe(true);
    expect((await store.insertIfNotExists(claims, { name: 'x', owner: randomUUID() })).applied).toBe(false);
    expect(await store.deleteIf(claims, { name: 'x' }, { owner: randomUUID() })).toBe(false);
    expect(await store.deleteIf(claims, { name: 'x' }, { owner })).toBe(true);
    expect(rec.seen.map((s) => [s.operation, s.lwt])).toEqual([
      ['insertIfNotExists', 'applied'],
      ['insertIfNotExists', 'not_applied'],
      ['deleteIf', 'not_applied'],
      ['deleteIf', 'applied'],
    ]);
  });

  it('reports a read over more tombstones than the warning threshold, and one over the failure threshold as a read failure', async () => {
    const { store, rec } = await observed({ tombstoneWarnThreshold: 3, tombstoneFailureThreshold: 8 });
    for (let pos = 0; pos < 5; pos++) await store.delete(items, { list: 'w', pos });
    await store.slice(items, { partition: { list: 'w' }, limit: 10 });
    for (let pos = 5; pos < 10; pos++) await store.delete(items, { list: 'w', pos });
    await expect(store.slice(items, { partition: { list: 'w' }, limit: 10 })).rejects.toThrow(/tombstone/);
    const slices = rec.seen.filter((s) => s.operation === 'slice').map((s) => [s.tombstoneWarnings, s.errorKind]);
    expect(slices).toEqual([
      [1, null],
      [0, 'read_failure'],
    ]);
  });

  it('reports errors by kind: invalid, unavailable, timeout, other', async () => {
    const { store, faulty, rec } = await observed();
    await expect(store.upsert(items, { list: 'a', pos: 1, nope: 'x' })).rejects.toBeInstanceOf(StoreRequestError);
    faulty.failWhen(() => true, () => new StoreUnavailableError('replicas down'));
    await expect(store.get(claims, { name: 'a' })).rejects.toThrow('replicas down');
    faulty.failWhen(() => true, () => new StoreUnavailableError('timed out', { timedOut: true }));
    await expect(store.get(claims, { name: 'a' })).rejects.toThrow('timed out');
    faulty.failWhen(() => true, () => new Error('something else'));
    await expect(store.ping()).rejects.toThrow('something else');
    faulty.heal();
    await store.ping();
    expect(rec.seen.map((s) => [s.operation, s.errorKind])).toEqual([
      ['upsert', 'invalid'],
      ['get', 'unavailable'],
      ['get', 'timeout'],
      ['ping', 'other'],
      ['ping', null],
    ]);
    expect(storeErrorKindOf(Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }))).toBe('timeout');
  });

  it('hands each observer back what its `started` returned, and survives an observer that throws', async () => {
    const base = memorySqliteStore();
    await base.ensureTables([claims]);
    const spans: Array<[string, string]> = [];
    const tracing: StoreObserver<{ name: string }> = {
      started: (call: StoreCall) => ({ name: `${call.operation} ${call.table}` }),
      finished: (trip, state) => spans.push([state.name, trip.errorKind ?? 'ok']),
    };
    const broken: StoreObserver = {
      started: () => {
        throw new Error('observer bug');
      },
      finished: () => {
        throw new Error('observer bug');
      },
    };
    const rec = recorder();
    const store = new ObservedStore(base, [broken, tracing, rec]);
    await store.upsert(claims, { name: 'a', owner: randomUUID() });
    expect(await store.get(claims, { name: 'a' })).not.toBeNull();
    expect(spans).toEqual([
      ['upsert claims', 'ok'],
      ['get claims', 'ok'],
    ]);
    expect(rec.seen).toHaveLength(2);
  });

  it("starts each call inside every observer's `within`, the first observer outermost, with what its `started` returned", async () => {
    const base = memorySqliteStore();
    await base.ensureTables([claims]);
    const scope = new AsyncLocalStorage<string[]>();
    // What was in scope when each call reached the store beneath the observer.
    const reached: Array<[string, string[] | undefined]> = [];
    class Probe extends FaultyStore {
      override get(...args: Parameters<Store['get']>) {
        reached.push(['get', scope.getStore()]);
        return super.get(...args);
      }
    }
    const wrapping = (name: string): StoreObserver<string> => ({
      started: (call) => `${name}:${call.operation}`,
      within: (state, run) => scope.run([...(scope.getStore() ?? []), state], run),
      finished: () => undefined,
    });
    const rec = recorder();
    const store = new ObservedStore(new Probe(base), [wrapping('outer'), rec, wrapping('inner')]);
    expect(await store.get(claims, { name: 'nobody' })).toBeNull();
    expect(reached).toEqual([['get', ['outer:get', 'inner:get']]]);
    expect(rec.seen.map(shape)).toEqual([{ operation: 'get', table: 'claims', tables: ['claims'], statements: 1, ...ok }]);
  });
});
