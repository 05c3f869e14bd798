/**
 * The user directory on a simulated cluster (seed 004's hand-built index): profile
 * updates of the same users from instances with skewed clocks, late writes and a
 * crash. After settling, every user is listed under its current location, once, and
 * under no other.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { usersTable } from '../../src/features/users/users-tables.js';
import { armCrash, assertSim, crashPoint, offsets, runAll, scheduled } from '../support/sim-arbitraries.js';
import { SimCluster } from '../support/sim-cluster.js';

const USERS = 3;
const PLACES = ['Kyoto', 'Lagos', 'Quito'];

describe('the user directory on a simulated cluster', () => {
  it('lists every user once, under its current location', async () => {
    await assertSim(
      'directory',
      fc.asyncProperty(
        fc.integer(),
        offsets,
        crashPoint,
        fc.array(fc.record({ ...scheduled, user: fc.nat(USERS - 1), place: fc.nat(PLACES.length - 1) }), { minLength: 2, maxLength: 12 }),
        async (seed, offsetsMs, crash, ops) => {
          const cluster = await SimCluster.create({ seed, offsetsMs });
          try {
            const ids: string[] = [];
            for (let i = 0; i < USERS; i++) {
              const made = await cluster.at(i).run((ctx) => ctx.users.create({ ...aUser(), location: 'Start' }));
              if (made.kind !== 'ok') throw new Error('setup failed');
              ids.push(made.value.id);
            }
            armCrash(cluster, crash);
            await runAll(cluster, ops, (op, instance) => instance.run((ctx) => ctx.users.update(ids[op.user]!, { location: PLACES[op.place]! })));
            await cluster.settle();
            const listed = new Map<string, string[]>();
            for (const place of [...PLACES, 'Start']) {
              const page = await cluster.at(0).run((ctx) => ctx.directory.byLocation(place, { first: 100 }));
              if (page.kind !== 'ok') throw new Error('search failed');
              for (const e of page.value.edges) listed.set(e.node.userId, [...(listed.get(e.node.userId) ?? []), place]);
            }
            for (const id of ids) {
              const row = await cluster.base.get(usersTable, { user_id: id });
              expect(listed.get(id), `user ${id}`).toEqual([row!.location]);
            }
          } finally {
            await cluster.close();
          }
        },
      ),
    );
  }, 60_000);
});
