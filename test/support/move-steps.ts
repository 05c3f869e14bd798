/**
 * Stops the list applier inside a move, after step 1 or 2, to reproduce seed 002's
 * walkthrough states: a store decorator the test wires under the applier. The step to
 * stop after travels with each call (AsyncLocalStorage), so concurrent calls stop
 * where each was told to.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ListApplier } from '../../src/features/lists/applier.js';
import { listItemIndexTable, listItemsTable } from '../../src/features/lists/lists-tables.js';
import type { Mutation } from '../../src/store/port.js';
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';

/** A move's step: 1 soft-deletes the old row and writes the new one; 2 hard-deletes and re-points the index. */
export type MoveStep = 1 | 2;

class StoppedAfterStep extends Error {}

/** The move step a batch is, if it is one. */
function moveStepOf(mutations: readonly Mutation[]): MoveStep | null {
  const rows = mutations.filter((m) => m.table === listItemsTable);
  if (mutations.length === 2 && rows.length === 2 && rows.every((m) => m.kind === 'upsert')) return 1;
  const repointsIndex = mutations.some((m) => m.table === listItemIndexTable && m.kind === 'upsert');
  if (rows.length === 2 && rows.every((m) => m.kind === 'delete') && repointsIndex) return 2;
  return null;
}

/** The applier's store, able to stop a move after a given step. */
export class MoveSteps extends StoreDecorator {
  private readonly stopAfter = new AsyncLocalStorage<MoveStep | undefined>();

  protected around<T>(_call: StoreCall, run: () => Promise<T>): Promise<T> {
    return run();
  }

  override async batch(mutations: readonly Mutation[]): Promise<void> {
    await super.batch(mutations);
    const step = this.stopAfter.getStore();
    if (step !== undefined && moveStepOf(mutations) === step) throw new StoppedAfterStep();
  }

  /** `applier.applyNext(listId)`, a move in it stopped after `step` (the transaction stays pending). */
  applyNext(applier: ListApplier, listId: string, step?: MoveStep): Promise<boolean> {
    return this.stopAfter.run(step, () => applier.applyNext(listId)).catch((err: unknown) => {
      if (err instanceof StoppedAfterStep) return true;
      throw err;
    });
  }
}
