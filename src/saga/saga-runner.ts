/**
 * Sagas: writes across tables as an ordered list of idempotent steps, each with a
 * compensation, recorded in the durable saga log before every step. A failed step
 * compensates the finished ones (and itself: it may have applied) in reverse order; a
 * crash leaves the log behind, and `recover` rolls each open saga forward or back.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { DomainError } from '../errors.js';
import type { Store } from '../store/port.js';
import { newTimeuuid } from '../store/timeuuid.js';
import { SagaLog, type SagaRecord } from './saga-log.js';

/** One idempotent step; `compensate` must be idempotent and safe if `run` never applied. */
export interface SagaStep<P> {
  readonly name: string;
  run(payload: P): Promise<void>;
  compensate?(payload: P): Promise<void>;
}

/** A kind of saga: its steps over a store, and what recovery does with it. */
export interface SagaDefinition<P> {
  readonly kind: string;
  /**
   * What recovery does with a saga that crashed in its forward phase: finish it, or
   * undo it. (A saga that crashed while compensating is always undone.)
   */
  readonly recovery: 'forward' | 'backward';
  /**
   * The pivot: the index of the step after which the saga is committed. A failure in a
   * later step does not compensate and does not fail the run: the saga stays in the log
   * and recovery finishes it. Without a pivot every step can be compensated.
   */
  readonly pivot?: number;
  steps(store: Store): ReadonlyArray<SagaStep<P>>;
}

/** A saga stopped on an error; `compensated` says whether everything was undone already. */
export class SagaAbortedError extends Error {
  override readonly name = 'SagaAbortedError';
  constructor(
    readonly kind: string,
    readonly compensated: boolean,
    override readonly cause: unknown,
  ) {
    super(
      compensated
        ? `${kind} could not be completed and was rolled back; nothing changed. Retry later.`
        : `${kind} could not be completed; it will be finished or rolled back automatically.`,
    );
  }
}

/** Options of a runner. */
export interface SagaRunnerOptions {
  readonly store: Store;
  readonly definitions: ReadonlyArray<SagaDefinition<any>>;
  /** Sagas running in this process, shared by all runners, so recovery leaves them alone. */
  readonly inFlight: Set<string>;
  readonly logger?: Logger;
  /** Pause before each step (a testing knob: lets a test kill the process mid-saga). */
  readonly stepDelayMs?: number;
}

/** What one recovery pass did. */
export interface RecoveryReport {
  readonly rolledForward: number;
  readonly rolledBack: number;
  readonly failed: number;
  readonly skipped: number;
}

/** Runs sagas and recovers open ones. Construct one per store view (per request is fine). */
export class SagaRunner {
  private readonly log: SagaLog;
  private readonly definitions = new Map<string, SagaDefinition<any>>();

  constructor(private readonly options: SagaRunnerOptions) {
    this.log = new SagaLog(options.store);
    for (const d of options.definitions) {
      if (this.definitions.has(d.kind)) throw new Error(`saga kind "${d.kind}" is defined twice`);
      this.definitions.set(d.kind, d);
    }
  }

  /**
   * Run a saga to completion. On a failure it compensates and throws: the step's own
   * DomainError (a refusal such as CONFLICT), or SagaAbortedError.
   */
  async run<P>(kind: string, payload: P, sagaId: string = newTimeuuid()): Promise<void> {
    const definition = this.definition(kind);
    const steps = definition.steps(this.options.store);
    this.options.inFlight.add(sagaId);
    try {
      let i = 0;
      try {
        for (; i < steps.length; i++) {
          // Before step i, and so after step i-1: the log says how far we got.
          await this.log.record(sagaId, kind, payload, i, 'forward');
          if (this.options.stepDelayMs) await sleep(this.options.stepDelayMs);
          await steps[i]!.run(payload);
        }
      } catch (err) {
        if (definition.pivot !== undefined && i > definition.pivot) {
          // Committed: what is left is retriable housekeeping that recovery will finish.
          this.options.logger?.warn({ err, sagaId, kind, step: i }, 'a step after the pivot failed; recovery will finish it');
          return;
        }
        let compensated = true;
        try {
          await this.compensate(sagaId, kind, payload, steps, i);
        } catch (compensationError) {
          compensated = false;
          this.options.logger?.error(
            { err: compensationError, sagaId, kind },
            'compensation failed; the saga stays in the log for recovery',
          );
        }
        if (err instanceof DomainError && compensated) throw err;
        throw new SagaAbortedError(kind, compensated, err);
      }
      try {
        await this.log.close(sagaId);
      } catch (err) {
        // Every step is done. Past a pivot that is a success (recovery only closes the
        // log). Otherwise recovery would undo it, so undo it now and report failure.
        if (definition.pivot !== undefined) {
          this.options.logger?.warn({ err, sagaId, kind }, 'closing the saga log failed; recovery will close it');
          return;
        }
        const compensated = await this.compensate(sagaId, kind, payload, steps, steps.length - 1).then(
          () => true,
          () => false,
        );
        throw new SagaAbortedError(kind, compensated, err);
      }
    } finally {
      this.options.inFlight.delete(sagaId);
    }
  }

  /**
   * Roll every open saga older than `graceMs` forward or back, as its definition says.
   * Sagas running in this process are left alone. Errors are logged; the saga stays
   * open for the next pass.
   */
  async recover(graceMs: number, now: Date = new Date()): Promise<RecoveryReport> {
    let rolledForward = 0;
    let rolledBack = 0;
    let failed = 0;
    let skipped = 0;
    for (const record of await this.log.open()) {
      if (this.options.inFlight.has(record.sagaId) || now.getTime() - record.updatedAt.getTime() < graceMs) {
        skipped++;
        continue;
      }
      try {
        if ((await this.recoverOne(record)) === 'forward') rolledForward++;
        else rolledBack++;
      } catch (err) {
        failed++;
        this.options.logger?.error({ err, sagaId: record.sagaId, kind: record.kind }, 'saga recovery failed; will retry');
      }
    }
    return { rolledForward, rolledBack, failed, skipped };
  }

  private async recoverOne(record: SagaRecord): Promise<'forward' | 'backward'> {
    const definition = this.definition(record.kind);
    const steps = definition.steps(this.options.store);
    this.options.inFlight.add(record.sagaId);
    try {
      const committed = definition.pivot !== undefined && record.step > definition.pivot;
      if (record.phase === 'forward' && (definition.recovery === 'forward' || committed)) {
        // The step in progress may or may not have applied: steps are idempotent, run it again.
        for (let i = record.step; i < steps.length; i++) {
          await this.log.record(record.sagaId, record.kind, record.payload, i, 'forward');
          await steps[i]!.run(record.payload);
        }
        await this.log.close(record.sagaId);
        this.options.logger?.info({ sagaId: record.sagaId, kind: record.kind }, 'saga rolled forward');
        return 'forward';
      }
      await this.compensate(record.sagaId, record.kind, record.payload, steps, record.step);
      this.options.logger?.info({ sagaId: record.sagaId, kind: record.kind }, 'saga rolled back');
      return 'backward';
    } finally {
      this.options.inFlight.delete(record.sagaId);
    }
  }

  /** Undo steps `from` .. 0 in reverse order, logging each, then close the saga. */
  private async compensate<P>(sagaId: string, kind: string, payload: P, steps: ReadonlyArray<SagaStep<P>>, from: number): Promise<void> {
    for (let j = Math.min(from, steps.length - 1); j >= 0; j--) {
      await this.log.record(sagaId, kind, payload, j, 'compensating');
      await steps[j]!.compensate?.(payload);
    }
    await this.log.close(sagaId);
  }

  private definition(kind: string): SagaDefinition<any> {
    const d = this.definitions.get(kind);
    if (!d) throw new Error(`no saga definition of kind "${kind}"`);
    return d;
  }
}

/** Runs `recover` now and then every `intervalMs`, until stopped. */
export function startRecoveryTimer(
  runner: () => SagaRunner,
  options: { intervalMs: number; graceMs: number; logger?: Logger },
): { stop(): void } {
  let running = false;
  const tick = async () => {
    if (running) return;
    running = true;
    try {
      const report = await runner().recover(options.graceMs);
      if (report.rolledForward + report.rolledBack + report.failed > 0) {
        options.logger?.info(report, 'saga recovery pass');
      }
    } catch (err) {
      options.logger?.error({ err }, 'saga recovery pass failed');
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void tick(), options.intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
