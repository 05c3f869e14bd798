/**
 * Saga-ordered suspend and unsuspend under faults. A fault-injecting store fails, and
 * separately "crashes" (every later call fails, nothing is compensated), at every store
 * call of both sagas; recovery then runs as it would at the next start. Afterwards the
 * invariants hold and the data is exactly the state before or after the operation.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { aSuspension } from '../../src/features/suspensions/suspension-mother.js';
import { sagaLogTable } from '../../src/saga/saga-log.js';
import { SagaAbortedError } from '../../src/saga/saga-runner.js';
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';
import { FaultyStore } from '../support/faulty-store.js';
import { describeEachStore, StorePool } from '../support/stores.js';
import { checkInvariants, prepare, snapshot, someUsers, suspensionsOver } from '../support/suspension-fixture.js';

const NOW = new Date('2026-11-22T10:00:00.000Z');

type Operation = 'suspend' | 'unsuspend';

/** A store with three users: two already suspended (context), one the operation targets. */
async function world(pool: StorePool, operation: Operation) {
  const base = (await pool.create()).store;
  await prepare(base);
  const ids = await someUsers(base, 3);
  const { suspensions } = suspensionsOver(base);
  await suspensions.suspend(aSuspension(ids[0]!, { reason: 'context one', suspendedAt: new Date('2026-09-09T09:00:00Z') }), NOW);
  await suspensions.suspend(aSuspension(ids[1]!, { reason: 'context two', suspendedAt: new Date('2026-10-10T10:00:00Z') }), NOW);
  if (operation === 'unsuspend') {
    await suspensions.suspend(aSuspension(ids[2]!, { reason: 'under test', suspendedAt: new Date('2026-08-08T08:00:00Z') }), NOW);
  }
  const faulty = new FaultyStore(base);
  const run = () => {
    const f = suspensionsOver(faulty).suspensions;
    return operation === 'suspend'
      ? f.suspend({ userId: ids[2]!, reason: 'under test', suspendedAt: new Date('2026-11-11T11:00:00Z') }, NOW)
      : f.unsuspend(ids[2]!);
  };
  // The next start: a fresh runner over the real store, no grace period.
  const recover = () => suspensionsOver(base).sagas.recover(0);
  // Users are random per world: name them by index so worlds compare.
  const state = async () => {
    const snap = await snapshot(base, ids);
    const name = <T extends { userId: string }>(list: T[]) =>
      list.map((x) => ({ ...x, userId: `user${ids.indexOf(x.userId)}` })).sort((a, b) => a.userId.localeCompare(b.userId));
    return { sorted: name(snap.sorted), lookups: name(snap.lookups), openSagas: snap.openSagas };
  };
  return { base, faulty, ids, run, recover, state };
}

/** The state after a clean run of the operation, and the calls it made. */
async function cleanRun(pool: StorePool, operation: Operation) {
  const w = await world(pool, operation);
  const before = await w.state();
  await w.run();
  return { before, after: await w.state(), calls: [...w.faulty.calls] };
}

describeEachStore('suspension sagas', (target) => {
  const pool = new StorePool(target);
  afterEach(() => pool.disposeAll());

  for (const operation of ['suspend', 'unsuspend'] as const) {
    describe(`${operation} under faults`, () => {
      it('makes the expected calls on a clean run', async () => {
        const { before, after, calls } = await cleanRun(pool, operation);
        expect(before).not.toEqual(after);
        expect(after.openSagas).toBe(0);
        const order = calls.map((c) => `${c.operation} ${c.table}`);
        if (operation === 'suspend') {
          // Reverse lookup first, then the bucket registry, then the sorted-set row.
          expect(order.filter((c) => !c.includes('saga_log'))).toEqual([
            'getMany users',
            'insertIfNotExists suspended_users',
            // Registered (Paxos: a prune may race it), in a new bucket.
            'get status_buckets',
            'insertIfNotExists status_buckets',
            'upsert users_by_status',
            // The entry again (a prune may have dropped it meanwhile), then confirmed at
            // the claim's own write time: from here on reads show it.
            'get status_buckets',
            'readCells suspended_users',
            'upsert suspended_users',
            // Then announced to live subscribers.
            'batch live_feed_changes',
          ]);
        } else {
          // The sorted-set row goes first, then the reverse lookup.
          expect(order.filter((c) => !c.includes('upsert saga_log') && !c.includes('delete saga_log'))).toEqual([
            'get suspended_users',
            // Is the suspension that wrote the lookup still running (on another server)?
            // Its row's key follows from its id; the log's previous layout is asked too.
            'getMany saga_log_by_bucket',
            'getMany saga_log',
            // With the change that announces it, in one logged batch.
            'batch users_by_status',
            // Only by its owner, and conditionally: the lookup was written by a lightweight transaction.
            'deleteIf suspended_users',
            // The bucket emptied: its entry is dropped, then the bucket checked again.
            'slice users_by_status',
            'deleteIf status_buckets',
            'slice users_by_status',
          ]);
        }
      });

      it('fails at every call, compensates before the pivot, and leaves the state before (or after, once committed)', async () => {
        const { before, after, calls } = await cleanRun(pool, operation);
        // Unsuspend commits when the sorted-set row is deleted; recovery finishes the rest.
        const committedFrom =
          operation === 'unsuspend' ? calls.findIndex((c) => c.operation === 'batch' && c.table === 'users_by_status') + 1 : calls.length;
        for (let k = 0; k < calls.length; k++) {
          const what = `failing call ${k} (${calls[k]!.operation} ${calls[k]!.table})`;
          const w = await world(pool, operation);
          w.faulty.failCall(k);
          const error = await w.run().then(
            () => null,
            (e: unknown) => e,
          );
          w.faulty.heal();
          const committed = k >= committedFrom;
          if (committed) {
            // The operation succeeded: the user is no longer listed; recovery finishes the rest.
            expect(error, what).toBeNull();
            expect((await w.state()).sorted, what).toEqual(after.sorted);
          } else {
            expect(error, what).not.toBeNull();
            // Right after the error, before any recovery: nothing half-done is visible.
            expect(await w.state(), `right after ${what}`).toEqual(before);
            // Pre-saga reads fail as they are; saga failures say they were rolled back.
            const beforeSaga = k < calls.findIndex((c) => c.table === sagaLogTable.name && c.operation === 'upsert');
            if (!beforeSaga) {
              expect(error, what).toBeInstanceOf(SagaAbortedError);
              expect((error as SagaAbortedError).compensated, what).toBe(true);
            }
          }
          await w.recover();
          expect(await w.state(), what).toEqual(committed ? after : before);
          expect(await checkInvariants(w.base, w.ids), what).toEqual([]);
          await pool.disposeAll();
        }
      }, 300_000);

      it('crashes at every call, and recovery rolls the saga back (suspend) or forward (unsuspend)', async () => {
        const { before, after, calls } = await cleanRun(pool, operation);
        const firstLogWrite = calls.findIndex((c) => c.table === sagaLogTable.name && c.operation === 'upsert');
        for (let k = 0; k <= calls.length; k++) {
          const w = await world(pool, operation);
          w.faulty.crashAtCall(k);
          await w.run().catch(() => undefined);
          // At the moment of the crash the order already protects reachability: every
          // sorted-set row has its reverse lookup (the reverse may briefly not hold).
          const atCrash = await w.state();
          for (const row of atCrash.sorted) expect(atCrash.lookups, `crash at call ${k}`).toContainEqual(row);
          const report = await w.recover();
          const state = await w.state();
          const logged = k > firstLogWrite;
          const finished = k === calls.length;
          const expected = finished ? after : operation === 'unsuspend' && logged ? after : before;
          expect(state, `crash at call ${k}`).toEqual(expected);
          expect(await checkInvariants(w.base, w.ids), `crash at call ${k}`).toEqual([]);
          if (logged && !finished) {
            expect(report.rolledForward + report.rolledBack, `crash at call ${k}`).toBe(1);
          }
          await pool.disposeAll();
        }
      }, 300_000);
    });
  }

  describe('suspend and unsuspend of one user on two servers', () => {
    it('refuses to unsuspend while the suspension is still being written, and keeps the invariants', async () => {
      const w = await world(pool, 'suspend');
      // Server 1 stalls its suspension after claiming the reverse lookup.
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let claimed = false;
      class Gate extends StoreDecorator {
        protected async around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
          const result = await run();
          if (call.operation === 'insertIfNotExists' && !claimed) {
            claimed = true;
            await gate;
          }
          return result;
        }
      }
      const server1 = suspensionsOver(new Gate(w.base)).suspensions;
      const suspending = server1.suspend({ userId: w.ids[2]!, reason: 'slow', suspendedAt: new Date('2026-11-11T11:00:00Z') }, NOW);
      while (!claimed) await new Promise((r) => setTimeout(r, 1));
      // Server 2 (its own lock) is asked to unsuspend the same user meanwhile.
      const server2 = suspensionsOver(w.base).suspensions;
      await expect(server2.unsuspend(w.ids[2]!)).rejects.toMatchObject({ code: 'CONFLICT' });
      release();
      await suspending;
      expect(await checkInvariants(w.base, w.ids)).toEqual([]);
      // Once written, it can be lifted.
      await server2.unsuspend(w.ids[2]!);
      expect(await checkInvariants(w.base, w.ids)).toEqual([]);
    });
  });

  describe('saga recovery', () => {
    it('leaves a saga running in this process alone, and waits out the grace period for others', async () => {
      const w = await world(pool, 'suspend');
      w.faulty.crashAtCall(3);
      await w.run().catch(() => undefined);
      const { sagas } = suspensionsOver(w.base);
      expect(await sagas.recover(60_000)).toEqual({ rolledForward: 0, rolledBack: 0, failed: 0, skipped: 1 });
      expect(await sagas.recover(0)).toEqual({ rolledForward: 0, rolledBack: 1, failed: 0, skipped: 0 });
      expect(await checkInvariants(w.base, w.ids)).toEqual([]);
    });

    it('keeps a saga open when recovery itself fails, and finishes it on a later pass', async () => {
      const w = await world(pool, 'unsuspend');
      // After the log write of the first step (the lookup, and the open-saga check in both layouts, come first).
      w.faulty.crashAtCall(4);
      await w.run().catch(() => undefined);
      const flaky = new FaultyStore(w.base);
      flaky.failWhen((c) => c.operation === 'delete');
      expect(await suspensionsOver(flaky).sagas.recover(0)).toMatchObject({ failed: 1 });
      expect((await snapshot(w.base, w.ids)).openSagas).toBe(1);
      expect(await w.recover()).toMatchObject({ rolledForward: 1, failed: 0 });
      expect(await checkInvariants(w.base, w.ids)).toEqual([]);
    });
  });
});
