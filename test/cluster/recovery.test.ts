/**
 * Recovery without waiting, on the simulated cluster: a process that dies mid-saga is
 * recovered at once by its successor under the same instance name, and by any other
 * server as soon as its presence expires, never while it is alive; meanwhile reads do
 * not show what was never acknowledged.
 */
import { describe, expect, it } from 'vitest';
import { suspendedUsersTable } from '../../src/features/suspensions/suspensions-tables.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { PRESENCE_TTL_SECONDS } from '../../src/background/presence.js';
import { SagaLog } from '../../src/saga/saga-log.js';
import { createSagaRunner } from '../../src/composition-root.js';
import { SimCluster, type SimInstance } from '../support/sim-cluster.js';

/** A cluster where instance 0 dies just before confirming a suspension. */
async function suspensionLeftOpen() {
  const cluster = await SimCluster.create({ seed: 7, offsetsMs: [300, -300], maxDelayMs: 1 });
  const made = await cluster.at(1).run((ctx) => ctx.users.create(aUser()));
  if (made.kind !== 'ok') throw new Error('setup failed');
  const userId = made.value.id;
  const dying = cluster.at(0);
  dying.store.crashOn = (call) => call.operation === 'readCells' && call.table === suspendedUsersTable.name;
  const outcome = await dying.run((ctx) => ctx.suspensions.suspend({ userId, reason: 'never acknowledged' }, new Date(cluster.time.now())));
  expect(outcome).toEqual({ kind: 'died' });
  await cluster.quiesce();
  return { cluster, userId };
}

/** What another server's admin reads of the user's suspension. */
async function suspensionSeenBy(instance: SimInstance, userId: string) {
  const read = await instance.run(async (ctx) => ctx.suspensions.ofUser(userId));
  if (read.kind !== 'ok') throw new Error('read failed');
  return read.value;
}

/** The users another server's admin sees in `suspendedUsers`. */
async function listedBy(instance: SimInstance) {
  const read = await instance.run((ctx) => ctx.suspensions.page({ first: 100 }));
  if (read.kind !== 'ok') throw new Error('read failed');
  return read.value.edges.map((e) => e.node.userId);
}

describe('recovery without waiting', () => {
  it("does not show a suspension whose saga is open, and the dead process's successor rolls it back at start", async () => {
    const { cluster, userId } = await suspensionLeftOpen();
    try {
      // The lookup and the sorted-set row are written, but the saga never finished.
      expect(await cluster.base.get(suspendedUsersTable, { user_id: userId })).not.toBeNull();
      expect(await suspensionSeenBy(cluster.at(1), userId)).toBeNull();
      expect(await listedBy(cluster.at(1))).toEqual([]);
      // A live server leaves it alone while the dead one's presence has not expired…
      expect(await createSagaRunner(cluster.at(1).services).recover(0)).toMatchObject({ rolledBack: 0, skipped: 1 });
      // …but the dead one's successor (same instance name) recovers it at once.
      await cluster.restart(0);
      expect(await new SagaLog(cluster.base).open()).toEqual([]);
      expect(await cluster.base.get(suspendedUsersTable, { user_id: userId })).toBeNull();
      // And the user can be suspended again.
      const again = await cluster.at(1).run((ctx) => ctx.suspensions.suspend({ userId, reason: 'again' }, new Date(cluster.time.now())));
      expect(again.kind).toBe('ok');
      expect((await suspensionSeenBy(cluster.at(0), userId))?.reason).toBe('again');
      expect(await listedBy(cluster.at(0))).toEqual([userId]);
    } finally {
      await cluster.close();
    }
  });

  it("lets any other server recover a dead process's saga once its presence has expired", async () => {
    const { cluster, userId } = await suspensionLeftOpen();
    try {
      cluster.time.advance(PRESENCE_TTL_SECONDS * 1000 + 1);
      // A grace period of an hour does not matter: the owner is known to be gone.
      expect(await createSagaRunner(cluster.at(1).services).recover(3_600_000)).toMatchObject({ rolledBack: 1 });
      expect(await cluster.base.get(suspendedUsersTable, { user_id: userId })).toBeNull();
    } finally {
      await cluster.close();
    }
  });
});
