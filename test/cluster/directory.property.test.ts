/**
 * The user directory on a simulated cluster (seed 004's hand-built index): profile
 * updates of the same users from instances with skewed clocks, late writes and a
 * crash. After settling, every user is listed under its current location, once, and
 * under no other; and under its current last name by `usersByLastName(prefix: "")`, which
 * walks the last-name bucket registry while renames empty buckets (pruned) and fill them
 * again (registered) from servers whose clocks differ.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { usersTable } from '../../src/features/users/users-tables.js';
import { armCrash, assertSim, crashPoint, offsets, runAll, scheduled } from '../support/sim-arbitraries.js';
import { SimCluster } from '../support/sim-cluster.js';

const USERS = 3;
const PLACES = ['Kyoto', 'Lagos', 'Quito'];
/** Last names in three buckets (their first two letters). */
const NAMES = ['Abe', 'Baker', 'Cole'];

/**
 * The property both tests share: users start with `field` = "Start", instances with
 * skewed clocks set it to one of `values` (late writes, maybe a crash), the cluster
 * settles, and `check` judges what the directory lists against the user rows.
 */
function updatesOnACluster(
  name: string,
  field: 'location' | 'lastName',
  values: readonly string[],
  check: (cluster: SimCluster, ids: readonly string[]) => Promise<void>,
) {
  return assertSim(
    name,
    fc.asyncProperty(
      fc.integer(),
      offsets,
      crashPoint,
      fc.array(fc.record({ ...scheduled, user: fc.nat(USERS - 1), value: fc.nat(values.length - 1) }), { minLength: 2, maxLength: 12 }),
      async (seed, offsetsMs, crash, ops) => {
        const cluster = await SimCluster.create({ seed, offsetsMs });
        try {
          const ids: string[] = [];
          for (let i = 0; i < USERS; i++) {
            const made = await cluster.at(i).run((ctx) => ctx.users.create({ ...aUser(), [field]: 'Start' }));
            if (made.kind !== 'ok') throw new Error('setup failed');
            ids.push(made.value.id);
          }
          armCrash(cluster, crash);
          await runAll(cluster, ops, (op, instance) => instance.run((ctx) => ctx.users.update(ids[op.user]!, { [field]: values[op.value]! })));
          await cluster.settle();
          await check(cluster, ids);
        } finally {
          await cluster.close();
        }
      },
    ),
  );
}

describe('the user directory on a simulated cluster', () => {
  it('lists every user once, under its current location', async () => {
    await updatesOnACluster('directory', 'location', PLACES, async (cluster, ids) => {
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
    });
  }, 60_000);

  it('lists every user once by last name, through a registry that shrinks', async () => {
    await updatesOnACluster('directory-last-names', 'lastName', NAMES, async (cluster, ids) => {
      const page = await cluster.at(0).run((ctx) => ctx.directory.byLastName('', { first: 100 }));
      if (page.kind !== 'ok') throw new Error('search failed');
      const listed = page.value.edges.map((e) => `${e.node.userId}:${e.node.value}`).sort();
      const current: string[] = [];
      for (const id of ids) current.push(`${id}:${((await cluster.base.get(usersTable, { user_id: id }))!.last_name as string).toLowerCase()}`);
      expect(listed).toEqual(current.sort());
    });
  }, 60_000);
});
