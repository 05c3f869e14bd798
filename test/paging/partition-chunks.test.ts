/**
 * Whole partitions are read in small slices, each after the last row of the one before:
 * every row comes back once, in clustering order, even on a clustering key that mixes
 * DESC and ASC columns and with rows sharing the first clustering value.
 */
import { describe, expect, it } from 'vitest';
import { allRowsOf } from '../../src/paging/partition-chunks.js';
import { SUSPENDED, usersByStatusTable } from '../../src/features/suspensions/suspensions-tables.js';
import { memorySqliteStore } from '../support/stores.js';

describe('reading a partition a slice at a time', () => {
  it('returns every row once, in clustering order, across slice boundaries', async () => {
    const store = memorySqliteStore();
    await store.ensureTables([usersByStatusTable]);
    const partition = { bucket: '2026-11', status: SUSPENDED };
    const written: Array<{ at: number; user: string }> = [];
    for (let i = 0; i < 250; i++) {
      // Three users share each instant: the slice boundary falls inside equal occurred_on values.
      const at = Date.UTC(2026, 10, 1) + Math.floor(i / 3) * 1000;
      const user = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
      written.push({ at, user });
      await store.upsert(usersByStatusTable, { ...partition, occurred_on: new Date(at), user_id: user, reason: 'r' });
    }
    const rows = await allRowsOf(store, usersByStatusTable, partition, { chunk: 7 });
    // Clustering order: occurred_on DESC, then user_id ASC.
    const expected = [...written].sort((a, b) => b.at - a.at || (a.user < b.user ? -1 : 1));
    expect(rows.map((r) => ({ at: (r.occurred_on as Date).getTime(), user: r.user_id }))).toEqual(expected);
  });
});
