/**
 * Ordered lists on a simulated cluster (seed 002's ledger list): moves from instances
 * with skewed clocks, logged batches landing one partition at a time, late writes and
 * a crash. Every move of an existing item succeeds; after settling every transaction
 * is applied and every item appears exactly once when paging.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readTransactions } from '../../src/features/lists/ledger.js';
import { DomainError } from '../../src/errors.js';
import { armCrash, assertSim, crashPoint, offsets, runAll, scheduled } from '../support/sim-arbitraries.js';
import { SimCluster } from '../support/sim-cluster.js';

const ITEMS = 5;
const OWNER = '00000000-0000-4000-8000-00000000aaaa';

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
            const made = await cluster.at(0).run(async (ctx) => {
              const list = await ctx.lists.create('sim', OWNER);
              const items: string[] = [];
              for (let i = 0; i < ITEMS; i++) items.push((await ctx.lists.add(list.listId, `item ${i}`)).itemId);
              return { listId: list.listId, items };
            });
            if (made.kind !== 'ok') throw new Error('setup failed');
            const { listId, items } = made.value;
            await cluster.settle({ rounds: 1 });
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
            const seen: string[] = [];
            const reader = cluster.at(0);
            let after: string | undefined;
            for (;;) {
              const page = await reader.run((ctx) => ctx.lists.items(listId, { first: 2, after }));
              if (page.kind !== 'ok') throw new Error('paging failed');
              seen.push(...page.value.edges.map((e) => e.node.itemId));
              if (!page.value.pageInfo.hasNextPage) break;
              after = page.value.pageInfo.endCursor ?? undefined;
            }
            expect([...seen].sort()).toEqual([...items].sort());
          } finally {
            await cluster.close();
          }
        },
      ),
    );
  }, 60_000);
});
