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
import { readTransactions } from '../../src/features/lists/ledger.js';
import { assertSim, offsets } from '../support/sim-arbitraries.js';
import { SimCluster, type Outcome } from '../support/sim-cluster.js';

const OWNER = '00000000-0000-4000-8000-00000000bbbb';
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

const listOp = fc.record({
  instance: fc.nat(2),
  kind: fc.constantFrom('add' as const, 'rename' as const, 'move' as const, 'remove' as const),
  item: fc.nat(20),
  anchor: fc.nat(20),
  where: fc.constantFrom('before' as const, 'after' as const, 'TOP' as const, 'BOTTOM' as const),
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

  it('applies list changes in the order they were acknowledged, each item changeable right after its add', async () => {
    await assertSim(
      'real-time-lists',
      fc.asyncProperty(fc.integer(), offsets, fc.array(listOp, { minLength: 3, maxLength: 14 }), async (seed, offsetsMs, ops) => {
        const cluster = await SimCluster.create({ seed, offsetsMs });
        try {
          const list = acknowledged(await cluster.at(0).run((ctx) => ctx.lists.create('sequenced', OWNER)), 'createList');
          /** The model: item ids in list order, and each one's label. */
          const order: string[] = [];
          const labels = new Map<string, string>();
          let n = 0;
          for (const op of ops) {
            const instance = cluster.at(op.instance);
            if (op.kind === 'add' || order.length === 0) {
              const label = `item ${n++}`;
              const item = acknowledged(await instance.run((ctx) => ctx.lists.add(list.listId, label)), `add on ${instance.name}`);
              order.push(item.itemId);
              labels.set(item.itemId, label);
              continue;
            }
            const itemId = order[op.item % order.length]!;
            if (op.kind === 'rename') {
              const label = `renamed ${n++}`;
              acknowledged(await instance.run((ctx) => ctx.lists.rename(list.listId, itemId, label)), `rename on ${instance.name}`);
              labels.set(itemId, label);
            } else if (op.kind === 'remove') {
              acknowledged(await instance.run((ctx) => ctx.lists.remove(list.listId, itemId)), `remove on ${instance.name}`);
              order.splice(order.indexOf(itemId), 1);
              labels.delete(itemId);
            } else {
              const others = order.filter((id) => id !== itemId);
              const anchor = others[op.anchor % Math.max(1, others.length)];
              const target =
                op.where === 'TOP' || op.where === 'BOTTOM' || anchor === undefined
                  ? { toEnd: op.where === 'TOP' ? ('TOP' as const) : ('BOTTOM' as const) }
                  : op.where === 'before'
                    ? { beforeItemId: anchor }
                    : { afterItemId: anchor };
              acknowledged(await instance.run((ctx) => ctx.lists.move(list.listId, itemId, target)), `move on ${instance.name}`);
              order.splice(order.indexOf(itemId), 1);
              const at = 'toEnd' in target ? (target.toEnd === 'TOP' ? 0 : order.length) : order.indexOf(anchor!) + (op.where === 'after' ? 1 : 0);
              order.splice(at, 0, itemId);
            }
          }
          const want = order.map((id) => `${id}:${labels.get(id)}`);
          const shown = async () => {
            const page = acknowledged(await cluster.at(0).run((ctx) => ctx.lists.items(list.listId, { first: 100 })), 'items');
            return page.edges.map((e) => `${e.node.itemId}:${e.node.label}`);
          };
          expect(await shown(), 'right away').toEqual(want);
          await cluster.settle({ rounds: 2 });
          expect(await readTransactions(cluster.base, list.listId)).toEqual([]);
          expect(await shown(), 'settled').toEqual(want);
        } finally {
          await cluster.close();
        }
      }),
    );
  }, 120_000);
});
