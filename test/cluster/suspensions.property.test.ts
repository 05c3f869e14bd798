/**
 * Suspensions on a simulated cluster (seed 000's sorted set, bucket registry and
 * reverse lookup): suspend and unsuspend from instances with skewed clocks, late
 * writes and a crash. After settling, every suspended user is listed exactly once,
 * every listed suspension has its lookup, and nothing acknowledged is lost. Suspensions
 * fall into two month buckets, so unsuspensions prune buckets while other servers
 * register them again: every row must stay in a registered bucket (the invariants read
 * the sorted set through the registry).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { suspendedUsersTable } from '../../src/features/suspensions/suspensions-tables.js';
import { armCrash, assertSim, crashPoint, offsets, runAll, scheduled } from '../support/sim-arbitraries.js';
import { SimCluster } from '../support/sim-cluster.js';
import { checkInvariants } from '../support/suspension-fixture.js';

const USERS = 4;
/** Suspensions land in these month buckets, so buckets empty, are pruned and registered again. */
const MONTHS = ['2026-08-08T08:00:00Z', '2026-09-09T09:00:00Z'].map((t) => new Date(t));

describe('suspensions on a simulated cluster', () => {
  it('list every suspended user once, with its lookup, and lose nothing acknowledged', async () => {
    await assertSim(
      'suspensions',
      fc.asyncProperty(
        fc.integer(),
        offsets,
        crashPoint,
        fc.array(fc.record({ ...scheduled, user: fc.nat(USERS - 1), lift: fc.boolean(), month: fc.nat(MONTHS.length - 1) }), { minLength: 3, maxLength: 14 }),
        async (seed, offsetsMs, crash, ops) => {
          const cluster = await SimCluster.create({ seed, offsetsMs });
          try {
            const ids: string[] = [];
            for (let i = 0; i < USERS; i++) {
              const made = await cluster.at(i).run((ctx) => ctx.users.create(aUser()));
              if (made.kind !== 'ok') throw new Error('setup failed');
              ids.push(made.value.id);
            }
            // Half of them start suspended, so unsuspensions have something to lift.
            for (let i = 0; i < USERS; i += 2) {
              const done = await cluster.at(i).run((ctx) => ctx.suspensions.suspend({ userId: ids[i]!, reason: 'before' }, new Date(cluster.time.now())));
              if (done.kind !== 'ok') throw new Error('setup failed');
            }
            armCrash(cluster, crash);
            const outcomes = await runAll(cluster, ops, (op, instance) =>
              instance.run(async (ctx) => {
                if (op.lift) await ctx.suspensions.unsuspend(ids[op.user]!);
                else await ctx.suspensions.suspend({ userId: ids[op.user]!, reason: `by ${instance.name}`, suspendedAt: MONTHS[op.month]! }, new Date(cluster.time.now()));
              }),
            );
            await cluster.settle();
            expect(await checkInvariants(cluster.base, ids)).toEqual([]);
            // Acknowledged and never contradicted: a user only suspended stays suspended.
            for (let u = 0; u < USERS; u++) {
              const mine = ops.map((op, i) => ({ op, outcome: outcomes[i]! })).filter((x) => x.op.user === u);
              if (mine.some((x) => x.op.lift) || !mine.some((x) => x.outcome.kind === 'ok')) continue;
              expect(await cluster.base.get(suspendedUsersTable, { user_id: ids[u]! }), `user ${u}`).not.toBeNull();
            }
          } finally {
            await cluster.close();
          }
        },
      ),
    );
  }, 60_000);
});
