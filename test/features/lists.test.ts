/**
 * Ordered lists (seed 002's ledger list): the seed's walkthrough states read the same,
 * a model-based test of concurrent clients against a serial reference, and a list of
 * 10,000 items paged end to end in both directions.
 */
import { countTables } from '../../src/counts/count-tables.js';
import { windowedJobTables } from '../../src/background/windowed-job.js';
import fc from 'fast-check';
import { afterEach, expect, it } from 'vitest';
import { ListApplier } from '../../src/features/lists/applier.js';
import {
  writeTransactions,
  compareItems,
  readPendingTransactions,
  readTransactionMark,
  readTransactions,
  txToRow,
} from '../../src/features/lists/ledger.js';
import { microsOfTimeuuid, newTimeuuid } from '../../src/store/timeuuid.js';
import {
  listApplierLeasesTable,
  listItemIndexTable,
  listItemsTable,
  listTables,
  listTransactionsTable,
  pendingListMarksTable,
  pendingListTxsTable,
  pendingListsTable,
  pendingShardOf,
} from '../../src/features/lists/lists-tables.js';
import { readListItems, type Lists } from '../../src/features/lists/lists.js';
import type { Mutation, Store } from '../../src/store/port.js';
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';
import { modelPage } from '../support/paging-model.js';
import { liveTables } from '../../src/live/change-log-tables.js';
import { describeEachStore, StorePool } from '../support/stores.js';
import { FaultyStore } from '../support/faulty-store.js';
import { MoveSteps } from '../support/move-steps.js';
import { codec, featuresOver } from '../support/suspension-fixture.js';

/** Records every transaction appended, so a reference can apply them all in id order. */
class TxRecorder extends StoreDecorator {
  readonly appended: Array<{ txId: string; kind: string; itemId: string; payload: string }> = [];
  protected around<T>(_call: StoreCall, run: () => Promise<T>): Promise<T> {
    return run();
  }
  override batch(mutations: readonly Mutation[]): Promise<void> {
    for (const m of mutations) {
      if (m.kind === 'upsert' && m.table === listTransactionsTable && m.row.kind !== undefined) {
        this.appended.push({ txId: m.row.tx_id as string, kind: m.row.kind as string, itemId: m.row.item_id as string, payload: m.row.payload as string });
      }
    }
    return super.batch(mutations);
  }
}

/** The serial reference: every transaction applied in id order to an empty list. */
function reference(appended: TxRecorder['appended']): Array<{ itemId: string; label: string; weight: bigint; seq: bigint }> {
  const items = new Map<string, { itemId: string; label: string; weight: bigint; seq: bigint }>();
  const byTime = [...appended].sort((a, b) => timeOf(a.txId) - timeOf(b.txId) || (a.txId < b.txId ? -1 : 1));
  for (const tx of byTime) {
    const p = JSON.parse(tx.payload) as { weight?: string; seq?: string; label?: string };
    const item = items.get(tx.itemId);
    if (tx.kind === 'add') items.set(tx.itemId, { itemId: tx.itemId, label: p.label!, weight: BigInt(p.weight!), seq: BigInt(p.seq!) });
    else if (tx.kind === 'move' && item) items.set(tx.itemId, { ...item, weight: BigInt(p.weight!), seq: BigInt(p.seq!) });
    else if (tx.kind === 'rename' && item) items.set(tx.itemId, { ...item, label: p.label! });
    else if (tx.kind === 'remove') items.delete(tx.itemId);
  }
  return [...items.values()].sort(compareItems);
}

/** 100 ns ticks of a timeuuid (the order of transaction ids). */
function timeOf(id: string): number {
  const h = id.replace(/-/g, '');
  return Number((BigInt(`0x${h.slice(13, 16)}`) << 48n) | (BigInt(`0x${h.slice(8, 12)}`) << 32n) | BigInt(`0x${h.slice(0, 8)}`));
}

async function setup(pool: StorePool, applierOptions: ConstructorParameters<typeof ListApplier>[1] = {}) {
  const base = (await pool.create()).store;
  await base.ensureTables([...listTables, ...liveTables, ...countTables, ...windowedJobTables]);
  const store = new TxRecorder(base);
  const { lists } = featuresOver(store);
  const steps = new MoveSteps(store);
  const applier = new ListApplier(steps, applierOptions);
  const list = await lists.create('Countries', '00000000-0000-4000-8000-000000000001');
  return { base, store, lists, applier, steps, listId: list.listId };
}

/** An applier's lease is not deleted when it is done but expires: wait for that. */
async function leaseReleased(store: Store, listId: string): Promise<void> {
  while (await store.get(listApplierLeasesTable, { list_id: listId })) await new Promise((r) => setTimeout(r, 20));
}

async function allLabels(lists: Lists, listId: string, size = 7): Promise<string[]> {
  const out: string[] = [];
  let page = await lists.items(listId, { first: size });
  out.push(...page.edges.map((e) => e.node.label));
  while (page.pageInfo.hasNextPage) {
    page = await lists.items(listId, { first: size, after: page.pageInfo.endCursor });
    out.push(...page.edges.map((e) => e.node.label));
  }
  return out;
}

/** Every label, paged forward and backward, each page's flags checked on the way. */
async function pagesBothWays(lists: Lists, listId: string, size: number): Promise<{ forward: string[]; backward: string[] }> {
  const forward: string[] = [];
  let page = await lists.items(listId, { first: size });
  for (let n = 0; ; n++) {
    expect(page.pageInfo.hasPreviousPage).toBe(n > 0);
    forward.push(...page.edges.map((e) => e.node.label));
    if (!page.pageInfo.hasNextPage) break;
    page = await lists.items(listId, { first: size, after: page.pageInfo.endCursor });
  }
  const backward: string[] = [];
  page = await lists.items(listId, { last: size });
  for (let n = 0; ; n++) {
    expect(page.pageInfo.hasNextPage).toBe(n > 0);
    backward.unshift(...page.edges.map((e) => e.node.label));
    if (!page.pageInfo.hasPreviousPage) break;
    page = await lists.items(listId, { last: size, before: page.pageInfo.startCursor });
  }
  return { forward, backward };
}

describeEachStore('ordered lists (ledger)', (target) => {
  const pool = new StorePool(target);
  afterEach(() => pool.disposeAll());

  it("gives identical reads in the seed's three walkthrough states", async () => {
    // Leases of a second: the timer pass of another applier takes the list at the end.
    const { base, lists, applier, steps, listId } = await setup(pool, { leaseSeconds: 1 });
    const countries = ['Andorra', 'Belgium', 'Chile', 'Denmark', 'Egypt', 'France', 'Greece'];
    const ids: string[] = [];
    for (const c of countries) ids.push((await lists.add(listId, c)).itemId);
    await applier.drain(listId);
    // Move Greece before Belgium and Andorra after Egypt.
    await lists.move(listId, ids[6]!, { beforeItemId: ids[1] });
    await lists.move(listId, ids[0]!, { afterItemId: ids[4] });
    const expected = ['Greece', 'Belgium', 'Chile', 'Denmark', 'Egypt', 'Andorra', 'France'];
    // Pending, not applied: the stored rows have not changed.
    expect(await allLabels(lists, listId, 2)).toEqual(expected);
    const stored = async () => (await base.slice(listItemsTable, { partition: { list_id: listId }, limit: 100 })).map((r) => `${r.label}${r.deleted ? '(deleted)' : ''}`);
    expect(await stored()).toEqual(countries);

    // Stopped after step 1: the soft delete marker and the new row are both there.
    await steps.applyNext(applier, listId, 1);
    expect((await stored()).filter((l) => l.startsWith('Greece'))).toEqual(['Greece', 'Greece', 'Greece(deleted)']);
    expect(await allLabels(lists, listId, 2)).toEqual(expected);
    // Stopped after step 2: only the new row, the transaction still pending.
    await steps.applyNext(applier, listId, 2);
    expect((await stored()).filter((l) => l.startsWith('Greece'))).toEqual(['Greece']);
    expect((await readPendingTransactions(base, listId)).map((t) => t.kind)).toEqual(['move', 'move']);
    expect(await allLabels(lists, listId, 2)).toEqual(expected);
    // Finished: no transaction pending.
    await applier.drain(listId);
    expect(await readPendingTransactions(base, listId)).toEqual([]);
    expect(await stored()).toEqual(expected);
    expect(await allLabels(lists, listId, 2)).toEqual(expected);
    // The timer pass cuts the applied transactions with one range tombstone (no skew
    // to wait out on one clock): the log is empty and its mark is the last id.
    const txIds = (await base.slice(listTransactionsTable, { partition: { list_id: listId }, limit: 100 })).map((r) => r.tx_id);
    expect(txIds).toHaveLength(9);
    await leaseReleased(base, listId);
    // Without trailing passes, whose horizon the tombstone otherwise stays behind (late-writes.test.ts).
    await new ListApplier(base, { cluster: { clockSkewMs: 0, writeTimeoutMs: 0, latePasses: [] } }).runOnce();
    expect(await base.slice(listTransactionsTable, { partition: { list_id: listId }, limit: 100 })).toEqual([]);
    expect(await readTransactionMark(base, listId)).toBe(txIds[8]);
    expect(await allLabels(lists, listId, 2)).toEqual(expected);
  });

  it('reports its lag: the age of the oldest transaction its last pass left to a list another applier holds, and none once it settles it', async () => {
    const { base, lists, listId } = await setup(pool);
    // Another applier holds the list: its lease, short-lived. Three seconds, not one:
    // Cassandra expires a TTL at a whole second (the write's second plus the TTL), so a
    // one-second lease can lapse before the pass below runs.
    await base.insertIfNotExists(listApplierLeasesTable, { list_id: listId, owner: '00000000-0000-4000-8000-0000000000aa' }, { ttl: 3 });
    await lists.add(listId, 'waiting');
    const applier = new ListApplier(base);
    expect(applier.lagSeconds()).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await applier.runOnce()).toBe(0);
    expect(applier.lagSeconds()).toBeGreaterThanOrEqual(0.3);
    expect(applier.lagSeconds()).toBeLessThan(30);
    await leaseReleased(base, listId);
    expect(await applier.runOnce()).toBe(1);
    expect(applier.lagSeconds()).toBe(0);
    expect(await allLabels(lists, listId)).toEqual(['waiting']);
  });

  it('refuses bad moves and changes nothing', async () => {
    const { lists, applier, listId } = await setup(pool);
    const other = await lists.create('Other', '00000000-0000-4000-8000-000000000001');
    const a = await lists.add(listId, 'a');
    const b = await lists.add(listId, 'b');
    const elsewhere = await lists.add(other.listId, 'x');
    await applier.drain(listId);
    await expect(lists.move(listId, a.itemId, {})).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
    await expect(lists.move(listId, a.itemId, { beforeItemId: b.itemId, afterItemId: b.itemId })).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
    await expect(lists.move(listId, a.itemId, { beforeItemId: a.itemId })).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
    await expect(lists.move(listId, a.itemId, { beforeItemId: elsewhere.itemId })).rejects.toMatchObject({ code: 'NOT_FOUND', argument: 'beforeItemId' });
    await expect(lists.move(listId, '00000000-0000-4000-8000-00000000beef', { beforeItemId: b.itemId })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(lists.remove(listId, elsewhere.itemId)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await allLabels(lists, listId)).toEqual(['a', 'b']);
  });

  it('matches a serial reference under concurrent adds, moves, renames and removes, applier steps and reads', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            mutations: fc.array(
              fc.record({
                kind: fc.constantFrom('add', 'move', 'rename', 'remove'),
                a: fc.nat(),
                b: fc.nat(),
                before: fc.boolean(),
                atEnd: fc.boolean(),
              }),
              { minLength: 1, maxLength: 5 },
            ),
            applier: fc.array(fc.constantFrom<1 | 2 | undefined>(1, 2, undefined), { maxLength: 4 }),
            reads: fc.array(fc.record({ forward: fc.boolean(), size: fc.integer({ min: 1, max: 6 }), at: fc.nat() }), { maxLength: 4 }),
          }),
          { minLength: 1, maxLength: 8 },
        ),
        async (rounds) => {
          const { store, lists, applier, steps, listId } = await setup(pool);
          try {
            for (let i = 0; i < 6; i++) await lists.add(listId, `seed-${i}`);
            let label = 0;
            for (const round of rounds) {
              const live = reference(store.appended);
              const pick = (n: number) => live[n % Math.max(1, live.length)];
              // Clients at once, with applier steps in between.
              const ops: Array<Promise<unknown>> = round.mutations.map((m) => {
                const x = pick(m.a);
                const y = pick(m.b);
                const ignoreRefusals = (p: Promise<unknown>) => p.catch((e: { code?: string }) => {
                  if (!e.code) throw e; // refusals are fine (the item may be gone); crashes are not
                });
                if (m.kind === 'add' || !x) return ignoreRefusals(lists.add(listId, `item-${label++}`, m.atEnd || !y ? null : y.itemId));
                if (m.kind === 'move' && y && y.itemId !== x.itemId) {
                  return ignoreRefusals(lists.move(listId, x.itemId, m.before ? { beforeItemId: y.itemId } : { afterItemId: y.itemId }));
                }
                if (m.kind === 'rename') return ignoreRefusals(lists.rename(listId, x.itemId, `renamed-${label++}`));
                if (m.kind === 'remove') return ignoreRefusals(lists.remove(listId, x.itemId));
                return Promise.resolve();
              });
              ops.push(...round.applier.map((step) => steps.applyNext(applier, listId, step)));
              await Promise.all(ops);
              // Reads (with applier steps racing them) must equal the reference.
              const expected = reference(store.appended);
              const checks = round.reads.map(async (r) => {
                const cursorItem = expected[r.at % Math.max(1, expected.length)];
                const cursor = cursorItem ? codec.encodeCursor(`OrderedList.items:${listId}`, [cursorItem.weight.toString(), cursorItem.seq.toString(), cursorItem.itemId]) : null;
                const args = r.forward ? { first: r.size, after: cursor } : { last: r.size, before: cursor };
                const page = await lists.items(listId, args);
                const want = modelPage(expected, compareItems, r.forward ? 'forward' : 'backward', r.size, cursorItem);
                expect({
                  nodes: page.edges.map((e) => ({ itemId: e.node.itemId, label: e.node.label, weight: e.node.weight, seq: e.node.seq })),
                  hasPreviousPage: page.pageInfo.hasPreviousPage,
                  hasNextPage: page.pageInfo.hasNextPage,
                }).toEqual(want);
              });
              await Promise.all([...checks, steps.applyNext(applier, listId, 1)]);
            }
            // Once the applier has settled the list (its timer pass's work: a transaction
            // that landed late, below one already applied, included), the stored list
            // itself is the reference.
            await applier.settle(listId);
            const final = reference(store.appended);
            expect(await allLabels(lists, listId, 5)).toEqual(final.map((i) => i.label));
          } finally {
            await pool.disposeAll();
          }
        },
      ),
      { numRuns: 40 },
    );
    // 40 runs take about 1 s on SQLite and 47 s on an idle single-node Cassandra, where
    // every step is a network round trip; a whole suite running beside it can make that
    // several minutes.
  }, 900_000);

  it('keeps two appliers (two server processes) off one list at a time', async () => {
    const { base, store, lists, listId } = await setup(pool);
    const x = await lists.add(listId, 'x');
    const others = [await lists.add(listId, 'a'), await lists.add(listId, 'b'), await lists.add(listId, 'c')];
    // The first applier's lease is not deleted when it is done: it expires (in 1 s).
    await new ListApplier(store, { leaseSeconds: 1 }).drain(listId);
    await leaseReleased(base, listId);
    // Three moves of the same item in a row.
    await lists.move(listId, x.itemId, { afterItemId: others[0]!.itemId });
    await lists.move(listId, x.itemId, { afterItemId: others[1]!.itemId });
    await lists.move(listId, x.itemId, { afterItemId: others[2]!.itemId });
    // Applier B stalls at its first write: it has read the item's position for move 1.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let stalled = false;
    class Gate extends StoreDecorator {
      protected async around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
        if (call.operation === 'batch' && !stalled) {
          stalled = true;
          await gate;
        }
        return run();
      }
    }
    const b = new ListApplier(new Gate(store));
    const a = new ListApplier(store);
    const bDone = b.drain(listId);
    while (!stalled) await new Promise((r) => setTimeout(r, 1));
    // A second process's applier finds the list leased and leaves it alone. (Without the
    // lease it would apply all three moves, and B, resuming with move 1's stale position,
    // would write the item back at move 1's target: the item twice.)
    expect(await a.drain(listId)).toBe(0);
    release();
    expect(await bDone).toBe(3);
    const stored = await base.slice(listItemsTable, { partition: { list_id: listId }, limit: 100 });
    expect(stored.map((r) => `${r.label}${r.deleted ? '(deleted)' : ''}`)).toEqual(['a', 'b', 'c', 'x']);
    expect(await allLabels(lists, listId)).toEqual(['a', 'b', 'c', 'x']);
  });

  it('drains a woken list once however often it was woken; the timer pass then cuts its log and its queue entries', async () => {
    const { base, lists, listId } = await setup(pool);
    for (const label of ['a', 'b', 'c']) await lists.add(listId, label);
    const recorded = new FaultyStore(base);
    // One process, one clock: no skew to wait out before cutting (and no trailing horizon: late-writes.test.ts).
    const applier = new ListApplier(recorded, { cluster: { clockSkewMs: 0, writeTimeoutMs: 0, latePasses: [] } });
    for (let i = 0; i < 5; i++) applier.wake(listId);
    expect(await readPendingTransactions(base, listId)).toHaveLength(3);
    for (let i = 0; i < 200 && (await readPendingTransactions(base, listId)).length > 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(await readPendingTransactions(base, listId)).toEqual([]);
    expect(await allLabels(lists, listId)).toEqual(['a', 'b', 'c']);
    // Five wakes before the first pass started: one pass, one lease.
    expect(recorded.calls.filter((c) => c.operation === 'insertIfNotExists' && c.table === listApplierLeasesTable.name)).toHaveLength(1);
    const shard = pendingShardOf(listId);
    const queue = () => base.slice(pendingListTxsTable, { partition: { shard }, limit: 100 });
    expect((await queue()).map((e) => e.list_id)).toEqual([listId, listId, listId]);
    await applier.runOnce();
    expect(await queue()).toEqual([]);
    expect(await base.slice(listTransactionsTable, { partition: { list_id: listId }, limit: 10 })).toEqual([]);
    expect(await base.get(pendingListMarksTable, { shard })).not.toBeNull();
    // Each cut is one range delete, and the lease was reused, never deleted.
    const deletes = recorded.calls.filter((c) => ['delete', 'deleteRange', 'deleteIf'].includes(c.operation));
    expect(deletes.map((c) => `${c.operation} ${c.table}`).sort()).toEqual([
      `deleteRange ${listTransactionsTable.name}`,
      `deleteRange ${pendingListTxsTable.name}`,
    ]);
    expect(await allLabels(lists, listId)).toEqual(['a', 'b', 'c']);
    applier.stop();
  });

  it('cuts no transaction or queue entry an append from a server whose clock is behind could still join', async () => {
    const { base, lists, listId } = await setup(pool);
    await lists.add(listId, 'a');
    let nowMs = Date.now();
    const clock = { nowMicros: () => BigInt(nowMs) * 1000n };
    // No trailing horizon for the tombstone to stay behind (late-writes.test.ts has one).
    const applier = new ListApplier(base, { clock, cluster: { clockSkewMs: 1_000, writeTimeoutMs: 2_000, latePasses: [] } });
    const queue = () => base.slice(pendingListTxsTable, { partition: { shard: pendingShardOf(listId) }, limit: 10 });
    const log = () => base.slice(listTransactionsTable, { partition: { list_id: listId }, limit: 10 });
    expect(await applier.runOnce()).toBe(1);
    // Applied, but a transaction stamped up to 1 s behind this one may still be
    // landing: nothing is cut until 3 s have passed on this clock.
    expect(await readPendingTransactions(base, listId)).toEqual([]);
    expect(await log()).toHaveLength(1);
    expect(await queue()).toHaveLength(1);
    nowMs += 3_001;
    expect(await applier.runOnce()).toBe(0);
    expect(await log()).toEqual([]);
    expect(await queue()).toEqual([]);
    expect(await allLabels(lists, listId)).toEqual(['a']);
  });

  it("adds items at the end in order while the applier's item rows lag behind its applied marks (a batch is not isolated across partitions)", async () => {
    const { base, lists, listId } = await setup(pool);
    /** The applier's batches land without their list_items rows until released, as a reader may see them on Cassandra. */
    class ItemRowsLate extends StoreDecorator {
      holding = false;
      readonly held: Mutation[][] = [];
      override batch(mutations: readonly Mutation[]): Promise<void> {
        const rows = mutations.filter((m) => m.table === listItemsTable);
        if (!this.holding || rows.length === 0) return super.batch(mutations);
        this.held.push(rows);
        return super.batch(mutations.filter((m) => m.table !== listItemsTable));
      }
      protected around<T>(_call: StoreCall, run: () => Promise<T>): Promise<T> {
        return run();
      }
    }
    const late = new ItemRowsLate(base);
    const applier = new ListApplier(late);
    await lists.add(listId, 'first');
    await applier.drain(listId);
    // Third goes beyond second, pending; both are then applied, their marks seen before their rows.
    late.holding = true;
    await lists.add(listId, 'second');
    await lists.add(listId, 'third');
    await applier.drain(listId);
    await lists.add(listId, 'fourth');
    late.holding = false;
    for (const rows of late.held) await base.batch(rows);
    await applier.drain(listId);
    expect(await allLabels(lists, listId)).toEqual(['first', 'second', 'third', 'fourth']);
  });

  it('applies a transaction that landed late, below one already applied, when it settles the list (the timer pass)', async () => {
    const { base, lists, applier, listId } = await setup(pool);
    const [a, , c] = [await lists.add(listId, 'a'), await lists.add(listId, 'b'), await lists.add(listId, 'c')];
    await applier.drain(listId);
    // A server whose clock is behind chose an id, then its append landed after a later
    // move had been applied.
    const lateId = newTimeuuid(Date.now() - 500);
    await lists.move(listId, c.itemId, { toEnd: 'TOP' });
    await applier.drain(listId);
    const late = { txId: lateId, kind: 'move' as const, itemId: a.itemId, to: { weight: c.weight + 1n, seq: 0n } };
    await writeTransactions(base, listId, [late]);
    expect(await readPendingTransactions(base, listId)).toEqual([]);
    expect(await readTransactions(base, listId)).toEqual([late]);
    expect((await applier.settle(listId)).applied).toBe(1);
    expect(await readTransactions(base, listId)).toEqual([]);
    // Applied on top of the later move, as the applier finds it (it was not there before).
    expect(await allLabels(lists, listId)).toEqual(['c', 'b', 'a']);
  });

  it('reads and applies transactions written before the applied flag, and drains lists the old pending table still marks', async () => {
    const { base, lists, listId } = await setup(pool);
    const a = await lists.add(listId, 'a');
    const b = await lists.add(listId, 'b');
    // As the old layout left them: transactions without the flag, and a mark per list.
    // After the adds, whose ids are microseconds of the clock (a ms-and-sequence id of this same ms may sort below them).
    const old = { txId: newTimeuuid(Date.now() + 1), kind: 'move' as const, itemId: b.itemId, to: { weight: a.weight - 1n, seq: 0n } };
    await base.upsert(listTransactionsTable, txToRow(listId, old), { timestamp: microsOfTimeuuid(old.txId) });
    await base.upsert(pendingListsTable, { shard: pendingShardOf(listId), list_id: listId });
    expect(await allLabels(lists, listId)).toEqual(['b', 'a']);
    const applier = new ListApplier(base, { cluster: { clockSkewMs: 0, writeTimeoutMs: 0 } });
    await applier.runOnce();
    expect(await readTransactions(base, listId)).toEqual([]);
    expect(await base.get(pendingListsTable, { shard: pendingShardOf(listId), list_id: listId })).toBeNull();
    expect(await allLabels(lists, listId)).toEqual(['b', 'a']);
    const stored = await base.slice(listItemsTable, { partition: { list_id: listId }, limit: 10 });
    expect(stored.map((r) => r.label)).toEqual(['b', 'a']);
  });

  it('finds an item whose earlier moves the applier finished while the reader read, with the index re-pointed before the old rows are gone', async () => {
    // On Cassandra a logged batch is not isolated across partitions: a reader can see
    // step 2's index update before its deletes of the old rows.
    const { base, lists, applier, steps, listId } = await setup(pool);
    const [a, b, c] = [await lists.add(listId, 'a'), await lists.add(listId, 'b'), await lists.add(listId, 'c')];
    await applier.drain(listId);
    await lists.move(listId, a.itemId, { afterItemId: c.itemId }); // tx1
    const tx2Target = await lists.move(listId, a.itemId, { beforeItemId: b.itemId }); // tx2
    // The reader reads both transactions; then, before it reads the index, the applier
    // finishes tx1, does tx2's step 1, and only the index half of tx2's step 2 lands.
    let raced = false;
    class ApplierBetweenReads extends StoreDecorator {
      protected async around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
        const result = await run();
        if (!raced && call.operation === 'slice' && call.table === listTransactionsTable.name) {
          raced = true;
          await steps.applyNext(applier, listId);
          await steps.applyNext(applier, listId, 1);
          await base.upsert(listItemIndexTable, { item_id: a.itemId, list_id: listId, weight: tx2Target.weight, seq: tx2Target.seq, label: 'a' });
        }
        return result;
      }
    }
    const [found] = await readListItems(new ApplierBetweenReads(base), listId, [a.itemId]);
    expect(raced).toBe(true);
    expect(found).toMatchObject({ itemId: a.itemId, weight: tx2Target.weight, seq: tx2Target.seq });
  });

  it('moves an item to the top or the bottom without naming a neighbour; a malformed combination changes nothing', async () => {
    const { lists, applier, listId } = await setup(pool);
    const [a, b, c] = [await lists.add(listId, 'a'), await lists.add(listId, 'b'), await lists.add(listId, 'c')];
    await lists.move(listId, c.itemId, { toEnd: 'TOP' });
    expect(await allLabels(lists, listId)).toEqual(['c', 'a', 'b']);
    await lists.move(listId, c.itemId, { toEnd: 'BOTTOM' });
    await lists.move(listId, b.itemId, { toEnd: 'BOTTOM' });
    expect(await allLabels(lists, listId)).toEqual(['a', 'c', 'b']);
    await applier.drain(listId);
    await lists.move(listId, b.itemId, { toEnd: 'TOP' });
    await lists.move(listId, b.itemId, { toEnd: 'TOP' }); // already there: still first
    expect(await allLabels(lists, listId)).toEqual(['b', 'a', 'c']);
    for (const target of [
      { toEnd: 'TOP' as const, beforeItemId: a.itemId },
      { toEnd: 'BOTTOM' as const, afterItemId: a.itemId },
      { toEnd: 'MIDDLE' as 'TOP' },
    ]) {
      await expect(lists.move(listId, c.itemId, target), JSON.stringify(target)).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
    }
    await applier.drain(listId);
    expect(await allLabels(lists, listId)).toEqual(['b', 'a', 'c']);
  });

  it('never runs out of room: 1,000 consecutive moves to second place succeed, the applier rebalancing, with exact pages both ways', async () => {
    const { store, lists, applier, listId } = await setup(pool);
    const expected: string[] = [];
    const ids = new Map<string, string>();
    for (let i = 0; i < 12; i++) {
      const label = `i${i}`;
      ids.set(label, (await lists.add(listId, label)).itemId);
      expected.push(label);
    }
    await applier.drain(listId);
    for (let n = 0; n < 1_000; n++) {
      const last = expected.pop()!;
      await lists.move(listId, ids.get(last)!, { afterItemId: ids.get(expected[0]!)! });
      expected.splice(1, 0, last);
      await applier.drain(listId);
    }
    expect(await pagesBothWays(lists, listId, 5)).toEqual({ forward: expected, backward: expected });
    // The room came from rebalances, each a transaction of its own in the log.
    const rebalances = store.appended.filter((t) => JSON.parse(t.payload).rebalance);
    expect(rebalances.length).toBeGreaterThan(0);
    // About 3 s on SQLite; on Cassandra every step is a round trip: minutes.
  }, 900_000);

  it('makes room itself when moves use up a gap before the applier runs, readers exact all along', async () => {
    const { store, lists, applier, listId } = await setup(pool);
    const expected: string[] = [];
    const ids = new Map<string, string>();
    for (let i = 0; i < 6; i++) {
      ids.set(`i${i}`, (await lists.add(listId, `i${i}`)).itemId);
      expected.push(`i${i}`);
    }
    await applier.drain(listId);
    for (let n = 0; n < 120; n++) {
      const last = expected.pop()!;
      await lists.move(listId, ids.get(last)!, { afterItemId: ids.get(expected[0]!)! });
      expected.splice(1, 0, last);
    }
    expect(store.appended.some((t) => JSON.parse(t.payload).rebalance)).toBe(true);
    expect(await pagesBothWays(lists, listId, 4)).toEqual({ forward: expected, backward: expected });
    await applier.drain(listId);
    expect(await pagesBothWays(lists, listId, 4)).toEqual({ forward: expected, backward: expected });
    expect(reference(store.appended).map((i) => i.label)).toEqual(expected);
  }, 900_000);

  it('pages exactly from a cursor issued before a rebalance: from where its position falls in the list as it is now', async () => {
    const { store, lists, applier, listId } = await setup(pool);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push((await lists.add(listId, `i${i}`)).itemId);
    await applier.drain(listId);
    const first = await lists.items(listId, { first: 3 });
    const cursor = first.pageInfo.endCursor!;
    const cursorNode = first.edges[2]!.node;
    // Move items to second place until a rebalance has been applied.
    for (let n = 0; !store.appended.some((t) => JSON.parse(t.payload).rebalance); n++) {
      const order = reference(store.appended);
      await lists.move(listId, order[order.length - 1]!.itemId, { afterItemId: order[0]!.itemId });
      await applier.drain(listId);
    }
    const now = reference(store.appended);
    for (const [args, direction] of [
      [{ first: 4, after: cursor }, 'forward'],
      [{ last: 4, before: cursor }, 'backward'],
    ] as const) {
      const page = await lists.items(listId, args);
      const want = modelPage(now, compareItems, direction, 4, { ...cursorNode });
      expect({
        nodes: page.edges.map((e) => ({ itemId: e.node.itemId, label: e.node.label, weight: e.node.weight, seq: e.node.seq })),
        hasPreviousPage: page.pageInfo.hasPreviousPage,
        hasNextPage: page.pageInfo.hasNextPage,
      }).toEqual({ ...want, nodes: want.nodes.map((i) => ({ itemId: i.itemId, label: i.label, weight: i.weight, seq: i.seq })) });
    }
  });

  it('pages a list of 10,000 items end to end in both directions, exactly', async () => {
    const { lists, applier, listId } = await setup(pool);
    const labels: string[] = [];
    for (let i = 0; i < 10_000; i++) {
      labels.push(`n${String(i).padStart(5, '0')}`);
      await lists.add(listId, labels[i]!);
      if (i % 10 === 9) await applier.drain(listId);
    }
    await applier.drain(listId);
    const forward: string[] = [];
    let page = await lists.items(listId, { first: 100 });
    forward.push(...page.edges.map((e) => e.node.label));
    let pages = 1;
    while (page.pageInfo.hasNextPage) {
      page = await lists.items(listId, { first: 100, after: page.pageInfo.endCursor });
      forward.push(...page.edges.map((e) => e.node.label));
      pages++;
    }
    expect(pages).toBe(100);
    expect(forward).toEqual(labels);
    const backward: string[] = [];
    page = await lists.items(listId, { last: 100 });
    backward.unshift(...page.edges.map((e) => e.node.label));
    while (page.pageInfo.hasPreviousPage) {
      page = await lists.items(listId, { last: 100, before: page.pageInfo.startCursor });
      backward.unshift(...page.edges.map((e) => e.node.label));
    }
    expect(backward).toEqual(labels);
  }, 900_000);
});

