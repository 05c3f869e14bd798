/**
 * Real-time order on a simulated cluster. The other cluster properties start their
 * operations at once and accept whichever concurrent write wins; these sequence them:
 * each operation starts only after the previous one was acknowledged, on an instance
 * chosen at random, the instances' clocks up to CLOCK_SKEW_MS apart. So every write
 * comes after the ones before it in real time, and the final state must be exactly the
 * model's: the last acknowledged value of every profile field (in the user row, the
 * directory and the name index, on every instance), and every list item where the
 * sequence of adds, renames, moves and removals put it. An item can be changed as soon
 * as its add was acknowledged, on any instance: no operation of the sequence may fail.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { readUsers } from '../../src/features/users/users.js';
import { assertSim, offsets } from '../support/sim-arbitraries.js';
import { SimCluster, type Outcome } from '../support/sim-cluster.js';

const NAMES = ['Abbott', 'Baker', 'Cole', 'Dunn'];
const PLACES = ['Kyoto', 'Lagos', 'Quito'];

/** The value of an operation that must have succeeded (the failure's message otherwise). */
function acknowledged<T>(outcome: Outcome<T>, what: string): T {
  if (outcome.kind === 'ok') return outcome.value;
  throw new Error(`${what} failed: ${outcome.kind === 'error' ? String((outcome.error as Error)?.message ?? outcome.error) : 'died'}`);
}

const profileOp = fc.record({
  instance: fc.nat(2),
  field: fc.constantFrom('displayName' as const, 'lastName' as const, 'location' as const),
  value: fc.nat(3),
});

describe('real-time order on a simulated cluster', () => {
  it('keeps the last acknowledged profile change, in the user row, the directory and the name index', async () => {
    await assertSim(
      'real-time-profiles',
      fc.asyncProperty(fc.integer(), offsets, fc.array(profileOp, { minLength: 2, maxLength: 9 }), async (seed, offsetsMs, ops) => {
        const cluster = await SimCluster.create({ seed, offsetsMs });
        try {
          const model = { displayName: 'Start', lastName: 'Startup', location: 'Oslo' };
          const made = acknowledged(await cluster.at(ops[0]!.instance + 1).run((ctx) => ctx.users.create({ ...aUser(), ...model })), 'createUser');
          for (const op of ops) {
            const value = op.field === 'location' ? PLACES[op.value % PLACES.length]! : op.field === 'lastName' ? NAMES[op.value]! : `Name ${op.value}`;
            acknowledged(await cluster.at(op.instance).run((ctx) => ctx.users.update(made.id, { [op.field]: value })), `updateUser ${op.field}`);
            model[op.field] = value;
          }
          // Right away, on every instance: the user as the model says.
          for (const instance of cluster.instances) {
            const user = acknowledged(await instance.run((ctx) => ctx.users.byIds([made.id])), 'user')[0]!;
            expect({ displayName: user.displayName, lastName: user.lastName, location: user.location }, instance.name).toEqual(model);
          }
          await cluster.settle({ rounds: 4 });
          const [user] = await readUsers(cluster.base, [made.id]);
          expect({ displayName: user!.displayName, lastName: user!.lastName, location: user!.location }).toEqual(model);
          for (const instance of cluster.instances) {
            const byPlace = acknowledged(await instance.run((ctx) => ctx.directory.byLocation(model.location, { first: 10 })), 'usersByLocation');
            expect(byPlace.edges.map((e) => e.node.userId), `${instance.name}: by location`).toEqual([made.id]);
            for (const name of [...NAMES, 'Startup']) {
              const found = acknowledged(await instance.run((ctx) => ctx.directory.byName(name, { first: 10 })), 'usersByName');
              expect(found.edges.map((e) => e.node.userId), `${instance.name}: by name ${name}`).toEqual(name === model.lastName ? [made.id] : []);
            }
          }
        } finally {
          await cluster.close();
        }
      }),
    );
  }, 120_000);
});
