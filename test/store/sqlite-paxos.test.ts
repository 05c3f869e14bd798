/**
 * Paxos ballots in the embedded store: two server processes sharing one database file
 * each act as a coordinator with its own clock. Cassandra gives a round that starts
 * after another has completed a higher ballot, whichever coordinator's clock is
 * behind; the embedded store must too, or an insert-if-not-exists made by a process
 * whose clock is behind lands under an earlier conditional delete and stays hidden
 * (the shrinking bucket registries rely on this).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/store/clock.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { defineTable } from '../../src/store/table.js';

const registry = defineTable({ name: 'registry', columns: { p: 'text', bucket: 'text', note: 'text' }, partitionKey: ['p'], clustering: ['bucket'] });

/** A clock fixed `offsetMs` from the wall clock. */
function offsetClock(offsetMs: number): Clock {
  return { nowMicros: () => BigInt(Date.now() + offsetMs) * 1000n };
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Two processes' stores over one file, the second one's clocks `skewMs` behind. */
async function twoProcesses(skewMs: number) {
  const dir = mkdtempSync(join(tmpdir(), 'paxos-'));
  dirs.push(dir);
  const file = join(dir, 'store.db');
  const open = (offset: number) =>
    new SqliteStore({ database: new Database(file), clock: offsetClock(offset), coordinatorClock: offsetClock(offset) });
  const ahead = open(0);
  const behind = open(-skewMs);
  await ahead.ensureTables([registry]);
  await behind.ensureTables([registry]);
  return { ahead, behind, close: async () => (await ahead.close(), await behind.close()) };
}

describe('embedded store: Paxos ballots across processes', () => {
  it('an insert-if-not-exists after a conditional delete is visible, though its coordinator clock is a second behind', async () => {
    const { ahead, behind, close } = await twoProcesses(1_000);
    try {
      const key = { p: 'SUSPENDED', bucket: '2026-11' };
      expect((await ahead.insertIfNotExists(registry, key)).applied).toBe(true);
      expect(await ahead.deleteIf(registry, key)).toBe(true);
      expect(await behind.get(registry, key)).toBeNull();
      expect((await behind.insertIfNotExists(registry, { ...key, note: 'again' })).applied).toBe(true);
      expect(await ahead.get(registry, key)).toEqual({ ...key, note: 'again' });
      // And the other way round: a delete from the process behind removes the newer claim.
      expect(await behind.deleteIf(registry, key, { note: 'again' })).toBe(true);
      expect(await ahead.get(registry, key)).toBeNull();
    } finally {
      await close();
    }
  });

  it('ballots rise per partition: every round on one partition is stamped above the one before', async () => {
    const { ahead, behind, close } = await twoProcesses(5_000);
    try {
      const stamps: bigint[] = [];
      for (let i = 0; i < 6; i++) {
        const store = i % 2 === 0 ? ahead : behind;
        const bucket = `b${i}`;
        await store.insertIfNotExists(registry, { p: 'x', bucket, note: String(i) });
        stamps.push((await store.readCells(registry, { p: 'x', bucket }, ['note'])).writetime.note!);
      }
      for (let i = 1; i < stamps.length; i++) expect(stamps[i]! > stamps[i - 1]!).toBe(true);
      // Another partition keeps its own ballots: the process behind stamps with its own clock there.
      const other = { p: randomUUID(), bucket: 'b' };
      await behind.insertIfNotExists(registry, { ...other, note: 'n' });
      const otherStamp = (await behind.readCells(registry, other, ['note'])).writetime.note!;
      expect(otherStamp < stamps[0]!).toBe(true);
    } finally {
      await close();
    }
  });
});
