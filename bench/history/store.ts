/**
 * The embedded store as history grows (issue 15, "upsert cost in a partition with 0 and
 * with 20,000 historical deletes"): an upsert must find the tombstone that covers its
 * row, and that lookup must not grow with the partition's tombstones. Each upsert
 * writes a new row between the deleted ones, so every lookup lands among them. Rounds
 * on the fresh and the grown partition alternate, so a machine busy with other work
 * weighs on both figures alike.
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
const ROUNDS = 7;
const CALLS = 1_000;

/** A partition that saw `deletes` row deletes (of the even keys), and an upsert of its next odd key. */
async function aPartition(store: SqliteStore, deletes: number, progress: (m: string) => void) {
  const p = randomUUID();
  for (let i = 0; i < deletes; i++) {
    await store.delete(table, { p, k: 2 * i });
    if ((i + 1) % 5_000 === 0) progress(`${i + 1} deletes`);
  }
  let next = 0;
  // Odd keys, spread over the deleted range (a prime stride mod 20,000), each written once.
  return () => {
    const i = next++;
    return store.upsert(table, { p, k: 2 * ((i * 7_919) % DELETES) + 1, v: `value ${i}` });
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export const storeHistoryBench: HistoryBench = {
  name: 'store',
  async run(progress): Promise<HistoryFigure[]> {
    const store = new SqliteStore({ database: new Database(':memory:') });
    await store.ensureTables([table]);
    const fresh = await aPartition(store, 0, progress);
    const grown = await aPartition(store, DELETES, progress);
    const freshRounds: number[] = [];
    const grownRounds: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      freshRounds.push(await medianMicrosPerCall(fresh, { calls: CALLS, rounds: 1, warmup: r === 0 ? 500 : 0 }));
      grownRounds.push(await medianMicrosPerCall(grown, { calls: CALLS, rounds: 1, warmup: r === 0 ? 500 : 0 }));
    }
    await store.close();
    return [
      {
        measure: 'upsert cost in one partition (embedded store)',
        unit: 'µs',
        fresh: { label: '0 historical deletes', value: median(freshRounds) },
        grown: [{ label: `${DELETES.toLocaleString('en')} historical deletes`, value: median(grownRounds) }],
      },
    ];
  },
};
