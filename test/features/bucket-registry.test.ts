/**
 * The registry that shrinks (features/bucket-registry.ts), proven on every interleaving
 * of a writer's and pruners' store calls: whatever the order, a bucket that holds a row
 * at the end is registered, and an empty one that was pruned is not. A pruner without
 * the re-check fails on some interleaving, so the exploration has teeth.
 */
import { describe, expect, it } from 'vitest';
import { ensureRegistered, pruneIfEmpty } from '../../src/features/bucket-registry.js';
import { suspensionBuckets } from '../../src/features/suspensions/suspension-sagas.js';
import { SUSPENDED, statusBucketsTable, suspensionTables, usersByStatusTable } from '../../src/features/suspensions/suspensions-tables.js';
import type { Store } from '../../src/store/port.js';
import { forEachInterleaving, type Actor } from '../support/interleavings.js';
import { memorySqliteStore } from '../support/stores.js';

const BUCKET = '2026-11';
const ENTRY = { status: SUSPENDED, bucket: BUCKET };

function rowOf(user: string) {
  return { bucket: BUCKET, status: SUSPENDED, occurred_on: new Date('2026-11-11T11:00:00Z'), user_id: user, reason: 'spam' };
}
const OLD_USER = '00000000-0000-4000-8000-000000000001';
const NEW_USER = '00000000-0000-4000-8000-000000000002';

/** A store whose bucket is registered and holds `rows`. */
async function worldWith(rows: string[]): Promise<Store> {
  const store = memorySqliteStore();
  await store.ensureTables(suspensionTables);
  await store.insertIfNotExists(statusBucketsTable, ENTRY);
  for (const user of rows) await store.upsert(usersByStatusTable, rowOf(user));
  return store;
}

/** A suspension: register, write the row, register again (w1, w2, w3). */
const writer: Actor = async (store) => {
  await ensureRegistered(store, suspensionBuckets, BUCKET);
  await store.upsert(usersByStatusTable, rowOf(NEW_USER));
  await ensureRegistered(store, suspensionBuckets, BUCKET);
};

/** An unsuspension of the old row, then the prune of its bucket. */
const remover: Actor = async (store) => {
  const { occurred_on, user_id, bucket, status } = rowOf(OLD_USER);
  await store.delete(usersByStatusTable, { bucket, status, occurred_on, user_id });
  await pruneIfEmpty(store, suspensionBuckets, BUCKET);
};

const pruner: Actor = async (store) => void (await pruneIfEmpty(store, suspensionBuckets, BUCKET));

/** The invariant: a bucket holding rows is registered; an empty bucket is not, once a prune ran after it emptied. */
async function registeredIffNotEmpty(store: Store, trace: readonly string[]): Promise<void> {
  const rows = await store.slice(usersByStatusTable, { partition: { bucket: BUCKET, status: SUSPENDED }, limit: 10 });
  const entry = await store.get(statusBucketsTable, ENTRY);
  expect(entry !== null, `rows: ${rows.length}, interleaving: ${trace.join(', ')}`).toBe(rows.length > 0);
}

describe('a bucket registry that shrinks, on every interleaving', () => {
  it('keeps a bucket registered when a suspension races the prune of its emptied bucket', async () => {
    const runs = await forEachInterleaving(() => worldWith([]), [writer, pruner], registeredIffNotEmpty);
    expect(runs).toBeGreaterThan(20);
  });

  it('keeps it registered when the suspension races the unsuspension that empties the bucket', async () => {
    const runs = await forEachInterleaving(() => worldWith([OLD_USER]), [writer, remover], registeredIffNotEmpty);
    expect(runs).toBeGreaterThan(50);
  });

  it('registers a bucket whose entry a pruner that died after its delete left missing, when the prune is run again', async () => {
    // The pruner's delete applied, then it died: the writer's row has no entry until recovery re-runs the prune.
    const store = await worldWith([]);
    await ensureRegistered(store, suspensionBuckets, BUCKET);
    await store.upsert(usersByStatusTable, rowOf(NEW_USER));
    await ensureRegistered(store, suspensionBuckets, BUCKET);
    await store.deleteIf(statusBucketsTable, ENTRY);
    expect(await store.get(statusBucketsTable, ENTRY)).toBeNull();
    expect(await pruneIfEmpty(store, suspensionBuckets, BUCKET)).toBe('kept');
    expect(await store.get(statusBucketsTable, ENTRY)).toEqual(ENTRY);
  });

  it('loses a registration on some interleaving when the pruner does not check the bucket again after its delete', async () => {
    const careless: Actor = async (store) => {
      const rows = await store.slice(usersByStatusTable, { partition: { bucket: BUCKET, status: SUSPENDED }, limit: 1 });
      if (rows.length === 0) await store.deleteIf(statusBucketsTable, ENTRY);
    };
    const lost: string[][] = [];
    await forEachInterleaving(
      () => worldWith([]),
      [writer, careless],
      async (store, trace) => {
        const rows = await store.slice(usersByStatusTable, { partition: { bucket: BUCKET, status: SUSPENDED }, limit: 1 });
        if (rows.length > 0 && (await store.get(statusBucketsTable, ENTRY)) === null) lost.push([...trace]);
      },
    );
    // The writer's second registration read the entry before the delete.
    expect(lost.length).toBeGreaterThan(0);
  });
});
