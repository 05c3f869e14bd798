/**
 * The saga runner's contract with its callers: a run is checked against its
 * definition by TypeScript, a definition missing from the registry is refused before
 * anything is written, and `isOpen` tells whether a saga is still in the log.
 */
import { CountWriter } from '../../src/counts/connection-counts.js';
import { ChangeClock, createChangeWriter } from '../../src/live/change-log.js';
import { MonotonicClock } from '../../src/store/clock.js';
import { describe, expect, it } from 'vitest';
import { sagaLogTables } from '../../src/saga/saga-log.js';
import { newTimeuuid } from '../../src/store/timeuuid.js';
import { SagaRegistry, SagaRunner, type SagaDefinition } from '../../src/saga/saga-runner.js';
import { FaultyStore } from '../support/faulty-store.js';
import { memorySqliteStore } from '../support/stores.js';

/** A one-step saga that records the payloads it ran with, and can be held open. */
function aRecordingSaga(kind: string) {
  const seen: number[] = [];
  let hold: Promise<void> = Promise.resolve();
  const definition: SagaDefinition<{ n: number }> = {
    kind,
    recovery: 'backward',
    steps: () => [
      {
        name: 'record',
        async run(p) {
          await hold;
          seen.push(p.n);
        },
      },
    ],
  };
  return { definition, seen, holdUntil: (gate: Promise<void>) => void (hold = gate) };
}

async function runnerWith(definitions: Array<SagaDefinition<any>>) {
  const base = memorySqliteStore();
  await base.ensureTables(sagaLogTables);
  const store = new FaultyStore(base);
  return { store, runner: new SagaRunner({ store, registry: new SagaRegistry(definitions), inFlight: new Set(), environment: { changes: createChangeWriter(new ChangeClock(new MonotonicClock()), { retentionSeconds: 86_400 }), counts: new CountWriter(new MonotonicClock(), 0) } }) };
}

describe('the saga runner', () => {
  it('runs a registered definition with its typed payload, and reports it open only while it runs', async () => {
    const saga = aRecordingSaga('record');
    const { runner } = await runnerWith([saga.definition]);
    let release!: () => void;
    saga.holdUntil(new Promise<void>((resolve) => (release = resolve)));
    const sagaId = newTimeuuid();
    const running = runner.run(saga.definition, { n: 7 }, sagaId);
    while (!(await runner.isOpen(sagaId))) await new Promise((r) => setTimeout(r, 1));
    release();
    await running;
    expect(saga.seen).toEqual([7]);
    expect(await runner.isOpen(sagaId)).toBe(false);
    // Checked by `npm run typecheck` (part of `npm test`): a payload that does not match
    // the definition ({ n: number }) does not compile.
    // @ts-expect-error: n must be a number
    const mismatched = () => runner.run(saga.definition, { n: 'seven' });
    void mismatched;
  });

  it('refuses a definition missing from the registry before writing anything', async () => {
    const registered = aRecordingSaga('registered');
    const stray = aRecordingSaga('stray');
    const { store, runner } = await runnerWith([registered.definition]);
    await expect(runner.run(stray.definition, { n: 1 })).rejects.toThrow('saga kind "stray" is not in the registry');
    expect(store.calls).toEqual([]);
    expect(stray.seen).toEqual([]);
  });

  it('refuses a saga id made long before the run, before writing anything', async () => {
    const saga = aRecordingSaga('late');
    const { store, runner } = await runnerWith([saga.definition]);
    const stale = newTimeuuid(Date.now() - 60_000);
    await expect(runner.run(saga.definition, { n: 1 }, stale)).rejects.toThrow(`saga ${stale} was made over 30000 ms ago`);
    expect(store.calls).toEqual([]);
    expect(saga.seen).toEqual([]);
  });

  it('refuses two definitions of one kind', () => {
    expect(() => new SagaRegistry([aRecordingSaga('twice').definition, aRecordingSaga('twice').definition])).toThrow(
      'saga kind "twice" is defined twice',
    );
  });
});
