/**
 * The embedded store records each table's key when it creates it, and refuses to open a
 * file whose tables were created under another key: its clustering keys are stored
 * encoded in their declared order, so pages would come out wrong, without an error (as
 * Cassandra's start-up check refuses a table recreated with another clustering order).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { timelineTable } from '../../src/features/timeline/timeline-tables.js';
import { StoreStartupError } from '../../src/store/port.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { defineTable } from '../../src/store/table.js';

/** The timeline declared newest last: the wrong order for its file. */
const ascending = defineTable({ name: 'timeline', columns: { ...timelineTable.columns }, partitionKey: ['user_id'], clustering: [{ column: 'post_id', order: 'ASC' }] });

function openStore(file: string): SqliteStore {
  return new SqliteStore({ database: new Database(file) });
}

describe('the embedded store’s table keys', () => {
  it('refuses to open a file whose timeline was created under another clustering order, naming it, and reports it as /readyz does', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sqlite-keys-')), 'app.db');
    const first = openStore(file);
    await first.ensureTables([timelineTable]);
    await first.close();
    const reopened = openStore(file);
    await expect(reopened.ensureTables([ascending])).rejects.toThrow(
      new StoreStartupError(
        'the embedded store keys tables otherwise than declared: table timeline clustered by (post_id DESC), declared (post_id ASC); a key cannot be altered: move the file aside to start afresh',
      ),
    );
    expect(await reopened.checkSchema([ascending])).toEqual(['table timeline clustered by (post_id DESC), declared (post_id ASC)']);
    await reopened.ensureTables([timelineTable]);
    expect(await reopened.checkSchema([timelineTable])).toEqual([]);
    await reopened.close();
  });

  it('takes the tables of a file from before keys were recorded as declared, and records them', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sqlite-keys-')), 'app.db');
    const old = openStore(file);
    await old.ensureTables([timelineTable]);
    await old.close();
    const db = new Database(file);
    db.exec('DROP TABLE table_keys');
    db.close();
    const upgraded = openStore(file);
    await upgraded.ensureTables([timelineTable]);
    expect(await upgraded.checkSchema([ascending])).toEqual(['table timeline clustered by (post_id DESC), declared (post_id ASC)']);
    await upgraded.close();
  });
});
