/**
 * A test-only entry point: the real server, with every saga step slowed down by
 * TEST_SAGA_STEP_DELAY_MS, so a test can kill the process between two steps. The
 * delay is a store decorator: after each write to the saga log (which precedes every
 * step) it waits before the step runs.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { sagaLogTable } from '../../src/saga/saga-log.js';
import { serve } from '../../src/serve.js';
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';

class SagaStepDelay extends StoreDecorator {
  constructor(
    inner: ConstructorParameters<typeof StoreDecorator>[0],
    private readonly delayMs: number,
  ) {
    super(inner);
  }

  protected async around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    const result = await run();
    if (call.operation === 'upsert' && call.table === sagaLogTable.name) await sleep(this.delayMs);
    return result;
  }
}

const delayMs = Number(process.env.TEST_SAGA_STEP_DELAY_MS ?? '0');
serve({ wrapStore: (store) => new SagaStepDelay(store, delayMs) }).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
