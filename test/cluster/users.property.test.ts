/**
 * User creation on a simulated cluster: the same usernames created from instances
 * with skewed clocks, late writes and a crash at any point. After settling, every
 * claimed username has its user, and every acknowledged user is there.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { usersByUsernameTable, usersTable } from '../../src/features/users/users-tables.js';
import { armCrash, assertSim, crashPoint, offsets, runAll, scheduled } from '../support/sim-arbitraries.js';
import { SimCluster } from '../support/sim-cluster.js';

const NAMES = ['ada', 'bob', 'cyd'];

describe('user creation on a simulated cluster', () => {
  it('leaves no username claimed without its user, and loses no acknowledged user', async () => {
    await assertSim(
      'users',
      fc.asyncProperty(
        fc.integer(),
        offsets,
        crashPoint,
        fc.array(fc.record({ ...scheduled, name: fc.nat(NAMES.length - 1) }), { minLength: 2, maxLength: 10 }),
        async (seed, offsetsMs, crash, ops) => {
          const cluster = await SimCluster.create({ seed, offsetsMs });
          try {
            armCrash(cluster, crash);
            const outcomes = await runAll(cluster, ops, (op, instance) =>
              instance.run((ctx) => ctx.users.create({ username: NAMES[op.name]!, displayName: `from ${instance.name}` })),
            );
            await cluster.settle();
            for (const username of NAMES) {
              const claim = await cluster.base.get(usersByUsernameTable, { username });
              const acked = outcomes.flatMap((o) => (o.kind === 'ok' && o.value.username === username ? [o.value.id] : []));
              expect(acked.length, `${username} acknowledged more than once`).toBeLessThanOrEqual(1);
              if (acked.length === 1) expect(claim?.user_id).toBe(acked[0]);
              if (claim) {
                const user = await cluster.base.get(usersTable, { user_id: claim.user_id as string });
                expect(user?.username, `the claim of ${username} has no user`).toBe(username);
              }
            }
          } finally {
            await cluster.close();
          }
        },
      ),
    );
  }, 60_000);
});
