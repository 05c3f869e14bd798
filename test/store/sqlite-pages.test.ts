/**
 * The embedded store's page size: 8 KiB in a file it creates, so a counted index's list
 * of 256 buckets (1.2 to 1.8 kB, counts/count-ranks.ts) lies in its page rather than in
 * overflow pages; a file created before keeps its own, and its rows read back the same.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { countRankListsTable } from '../../src/counts/count-tables.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

/** A list row as long as a dense list of 256 buckets packs to. */
const aLongList = { count_key: 'posts:a', level: 4, parent: 7n, counts: Array.from({ length: 256 }, (_, i) => `${i.toString(36)}:${(i % 9) + 1}`).join(','), settled_through: 1_000n };

const pageSizeOf = (file: string) => {
  const db = new Database(file, { readonly: true });
  try {
    return db.pragma('page_size', { simple: true });
  } finally {
    db.close();
  }
};

/** Open the store on `file`, write the long list, and check it reads back whole. */
async function writeAndReadBack(file: string): Promise<void> {
    const store = new SqliteStore({ database: new Database(file) });
    await store.ensureTables([countRankListsTable]);
    await store.upsert(countRankListsTable, aLongList);
    expect(await store.get(countRankListsTable, { count_key: 'posts:a', level: 4, parent: 7n })).toEqual(aLongList);
    await store.close();
}

describe('the embedded store’s page size', () => {
  it('is 8 KiB in a file the store creates, and a long list row reads back whole', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sqlite-pages-')), 'app.db');
    await writeAndReadBack(file);
    expect(pageSizeOf(file)).toBe(8192);
  });

  it('stays what it was in a file created before, whose rows read back the same', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sqlite-pages-')), 'app.db');
    const old = new Database(file);
    old.pragma('page_size = 4096');
    old.exec('CREATE TABLE created_before (x INTEGER)');
    old.close();
    await writeAndReadBack(file);
    expect(pageSizeOf(file)).toBe(4096);
  });
});
