/**
 * Ordered lists on a simulated cluster (seed 002's ledger list): moves from instances
 * with skewed clocks, logged batches landing one partition at a time, late writes and
 * a crash. Every move of an existing item succeeds; after settling every transaction
 * is applied and every item appears exactly once when paging. With appends landing
 * minutes past the applier's cut (their callers told the outcome is unknown), after the
 * trailing passes too, and the list's count is what it shows.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readTransactions } from '../../src/features/lists/ledger.js';
import { DomainError } from '../../src/errors.js';
import { itemsCountKey } from '../../src/features/lists/lists.js';
import { listTransactionsTable } from '../../src/features/lists/lists-tables.js';
import { armCrash, assertSim, crashPoint, lateLanding, offsets, runAll, scheduled } from '../support/sim-arbitraries.js';
import { SimCluster } from '../support/sim-cluster.js';

const ITEMS = 5;
const OWNER = '00000000-0000-4000-8000-00000000aaaa';

/** A list of ITEMS items, made on the first instance and settled. */
async function listOf(cluster: SimCluster): Promise<{ listId: string; items: string[] }> {
  const made = await cluster.at(0).run(async (ctx) => {
    const list = await ctx.lists.create('sim', OWNER);
    const items: string[] = [];
    for (let i = 0; i < ITEMS; i++) items.push((await ctx.lists.add(list.listId, `item ${i}`)).itemId);
    return { listId: list.listId, items };
  });
  if (made.kind !== 'ok') throw new Error('setup failed');
  await cluster.settle({ rounds: 1 });
  return made.value;
}

/** The item ids of a list in order, paged `size` at a time on the first instance. */
async function pagedIds(cluster: SimCluster, listId: string, size: number): Promise<string[]> {
  const seen: string[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await cluster.at(0).run((ctx) => ctx.lists.items(listId, { first: size, after }));
    if (page.kind !== 'ok') throw new Error('paging failed');
    seen.push(...page.value.edges.map((e) => e.node.itemId));
    if (!page.value.pageInfo.hasNextPage) return seen;
    after = page.value.pageInfo.endCursor ?? undefined;
  }
}

describe('ordered lists on a simulated cluster', () => {
  it('move existing items without error and settle every transaction, each item listed once', async () => {
    await assertSim(
      'lists',
      fc.asyncProperty(
        fc.integer(),
        offsets,
        crashPoint,
        fc.array(fc.record({ ...scheduled, item: fc.nat(ITEMS - 1), anchor: fc.nat(ITEMS - 2), after: fc.boolean() }), {
          minLength: 3,
          maxLength: 16,
        }),
        async (seed, offsetsMs, crash, ops) => {
          const cluster = await SimCluster.create({ seed, offsetsMs });
          try {
            const { listId, items } = await listOf(cluster);
            armCrash(cluster, crash);
            const outcomes = await runAll(cluster, ops, (op, instance) => {
              const itemId = items[op.item]!;
              const anchor = items.filter((id) => id !== itemId)[op.anchor]!;
              return instance.run((ctx) =>
                ctx.lists.move(listId, itemId, op.after ? { afterItemId: anchor } : { beforeItemId: anchor }),
              );
            });
            const refused = outcomes.filter((o) => o.kind === 'error');
            expect(refused.map((o) => (o.kind === 'error' && o.error instanceof DomainError ? o.error.message : String(o)))).toEqual([]);
            await cluster.settle();
            expect(await readTransactions(cluster.base, listId)).toEqual([]);
            const seen = await pagedIds(cluster, listId, 2);
            expect([...seen].sort()).toEqual([...items].sort());
          } finally {
            await cluster.close();
          }
        },
      ),
    );
  }, 60_000);

  for (const finder of [0, 1]) {
    it(`count a list's only item whose append landed after every server passed its window, once server ${finder} runs its trailing passes as its timers do`, async () => {
      // The proxy test's ordering (#35), step by step: the append (its transaction, its
      // count's event and mark) lands a minute late, after both servers' passes.
      const cluster = await SimCluster.create({ seed: 35, offsetsMs: [0, 400], lateLandingMs: 60_000 });
      try {
        const made = await cluster.at(1).run((ctx) => ctx.lists.create('held', OWNER));
        if (made.kind !== 'ok') throw new Error('setup failed');
        const { listId } = made.value;
        const key = itemsCountKey(listId);
        await cluster.settle({ rounds: 1 });
        cluster.armLate(1);
        expect((await cluster.at(0).run((ctx) => ctx.lists.add(listId, 'held'))).kind).toBe('error');
        await cluster.settle();
        await cluster.settle({ stepMs: 60_000, rounds: 1 });
        await cluster.settle();
        const counts = () => Promise.all(cluster.instances.map((instance) => instance.count(key)));
        expect(await counts()).toEqual([0, 0]);
        await cluster.at(finder).trailingPasses();
        await cluster.settle();
        expect(await pagedIds(cluster, listId, 3)).toHaveLength(1);
        expect(await counts()).toEqual([1, 1]);
        expect(await cluster.count(key)).toBe(1);
      } finally {
        await cluster.close();
      }
    }, 30_000);
  }

  it('apply adds and moves whose appends landed minutes behind the cut, each item listed once and counted', async () => {
    await assertSim(
      'lists-late',
      fc.asyncProperty(
        fc.integer(),
        offsets,
        fc.array(fc.record({ ...scheduled, add: fc.boolean(), item: fc.nat(ITEMS - 1), anchor: fc.nat(ITEMS - 2), after: fc.boolean() }), {
          minLength: 3,
          maxLength: 16,
        }),
        lateLanding,
        async (seed, offsetsMs, ops, lateLandingMs) => {
          const cluster = await SimCluster.create({ seed, offsetsMs, lateLandingMs });
          try {
            const { listId, items } = await listOf(cluster);
            cluster.armLate();
            const outcomes = await runAll(cluster, ops, (op, instance) => {
              const itemId = items[op.item]!;
              const anchor = items.filter((id) => id !== itemId)[op.anchor]!;
              return instance.run(async (ctx) =>
                op.add
                  ? (await ctx.lists.add(listId, `added by ${instance.name}`)).itemId
                  : (await ctx.lists.move(listId, itemId, op.after ? { afterItemId: anchor } : { beforeItemId: anchor })).itemId,
              );
            });
            await cluster.settle();
            await cluster.settleLate();
            // Every transaction the log holds is applied, late ones included.
            const log = await cluster.base.slice(listTransactionsTable, { partition: { list_id: listId }, limit: 1_000 });
            expect(log.filter((r) => r.applied !== true)).toEqual([]);
            const seen = await pagedIds(cluster, listId, 3);
            expect(new Set(seen).size).toBe(seen.length);
            // The items it started with, and every add that was acknowledged.
            const acknowledged = outcomes.flatMap((o, i) => (o.kind === 'ok' && ops[i]!.add ? [o.value] : []));
            for (const id of [...items, ...acknowledged]) expect(seen).toContain(id);
            expect(await cluster.count(itemsCountKey(listId))).toBe(seen.length);
          } finally {
            await cluster.close();
          }
        },
      ),
    );
  }, 120_000);
});
