/**
 * The embedded store as history grows (issue 15, "upsert cost in a partition with 0 and
 * with 20,000 historical deletes"): an upsert must find the tombstone that covers its
 * row, and that lookup must not grow with the partition's tombstones. Each upsert
 * writes a new row between the deleted ones, so every lookup lands among them.
 */
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { defineTable } from '../../src/store/table.js';
import { medianMicrosPerCall, type HistoryBench, type HistoryFigure } from './harness.js';

const table = defineTable({
  name: 'bench_history',
  columns: { p: 'uuid', k: 'int', v: 'text' },
  partitionKey: ['p'],
  clustering: ['k'],
});

const DELETES = 20_000;

/** µs per upsert into a partition that saw `deletes` row deletes (of the even keys). */
async function upsertCost(store: SqliteStore, deletes: number, progress: (m: string) => void): Promise<number> {
  const p = randomUUID();
  for (let i = 0; i < deletes; i++) {
    await store.delete(table, { p, k: 2 * i });
    if ((i + 1) % 5_000 === 0) progress(`${i + 1} deletes`);
  }
  // Odd keys, spread over the deleted range (a prime stride), each written once.
  const span = Math.max(deletes, 20_000);
  return medianMicrosPerCall((i) => store.upsert(table, { p, k: 2 * ((i * 7_919) % span) + 1, v: `value ${i}` }), {
    calls: 2_000,
    rounds: 5,
  });
}

export const storeHistoryBench: HistoryBench = {
  name: 'store',
  async run(progress): Promise<HistoryFigure[]> {
    const store = new SqliteStore({ database: new Database(':memory:') });
    await store.ensureTables([table]);
    // An untimed pass first, so the fresh figure does not pay for warming the JIT up.
    await upsertCost(store, 0, progress);
    const fresh = await upsertCost(store, 0, progress);
    const grown = await upsertCost(store, DELETES, progress);
    await store.close();
    return [
      {
        measure: 'upsert cost in one partition (embedded store)',
        unit: 'µs',
        fresh: { label: '0 historical deletes', value: fresh },
        grown: [{ label: `${DELETES.toLocaleString('en')} historical deletes`, value: grown }],
      },
    ];
  },
};
