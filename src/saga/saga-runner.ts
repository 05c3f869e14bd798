/**
 * Sagas: writes across tables as an ordered list of idempotent steps, each with a
 * compensation, recorded in the durable saga log before every step. A failed step
 * compensates the finished ones (and itself: it may have applied) in reverse order; a
 * crash leaves the log behind, and `recover` rolls each open saga forward or back.
 *
 * A saga runs under this process's presence lease: it does not start while the lease
 * has lapsed (PresenceLapsedError, nothing written), and once its lease lapses its
 * writes are refused, even after the process takes its node back (another server may
 * be recovering it meanwhile): it stops where it is and is left to recovery, as after
 * a crash. Recovery passes skip while the lease has lapsed.
 */
import type { Logger } from 'pino';
import { DomainError, SagaAbortedError } from '../errors.js';
import { startPeriodicTask, type PeriodicTask } from '../background/periodic-task.js';
import { LeaseGuardedStore, PresenceLapsedError, type Presence } from '../background/presence.js';
import type { CountWriter } from '../counts/connection-counts.js';
import type { ChangeWriter } from '../live/change-log.js';
import type { Store } from '../store/port.js';
import { newTimeuuid } from '../store/timeuuid.js';
import { DEFAULT_CLUSTER_SETTINGS, type ClusterSettings } from '../config.js';
import { SagaLog, SAGA_START_WINDOW_MS, type SagaRecord } from './saga-log.js';

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
  /** The steps over a store, with what else they may write (the live change log). */
  steps(store: Store, environment: SagaEnvironment): ReadonlyArray<SagaStep<P>>;
}

/** What a saga's steps may use besides the store. */
export interface SagaEnvironment {
  /** Appends changes to the live change log, in the step that makes them. */
  readonly changes: ChangeWriter;
  /** Records items added to and removed from counted connections, in the step that makes them. */
  readonly counts: CountWriter;
  /** Told how each bucket registry prune went (metrics); absent: nobody asks. */
  readonly onRegistryPrune?: (registry: string, outcome: 'pruned' | 'kept') => void;
}

export { SagaAbortedError };

/**
 * Every saga definition the product runs, by kind: recovery finds an open saga's steps
 * here. Built once, in the composition root, from the definitions each feature exports.
 */
export class SagaRegistry {
  private readonly byKind = new Map<string, SagaDefinition<any>>();

  constructor(definitions: ReadonlyArray<SagaDefinition<any>>) {
    for (const d of definitions) {
      if (this.byKind.has(d.kind)) throw new Error(`saga kind "${d.kind}" is defined twice`);
      this.byKind.set(d.kind, d);
    }
  }

  /** Whether this very definition is the one registered under its kind. */
  has(definition: SagaDefinition<any>): boolean {
    return this.byKind.get(definition.kind) === definition;
  }

  /** The definition of a kind found in the log. */
  get(kind: string): SagaDefinition<unknown> {
    const d = this.byKind.get(kind);
    if (!d) throw new Error(`no saga definition of kind "${kind}"`);
    return d;
  }
}

/** Options of a runner. */
export interface SagaRunnerOptions {
  readonly store: Store;
  readonly registry: SagaRegistry;
  /** Sagas running in this process, shared by all runners, so recovery leaves them alone. */
  readonly inFlight: Set<string>;
  /** This process's presence: sagas are recorded with it as owner, and recovery asks it who is alive. */
  readonly presence?: Pick<Presence, 'identity' | 'isAlive' | 'lease'>;
  readonly logger?: Logger;
  /** The clock-skew and write-timeout bounds the saga log's low-water marks rely on. */
  readonly cluster?: ClusterSettings;
  /** What the steps may use besides the store (the live change log's writer). */
  readonly environment: SagaEnvironment;
}

/** What one recovery pass did. */
export interface RecoveryReport {
  readonly rolledForward: number;
  readonly rolledBack: number;
  readonly failed: number;
  readonly skipped: number;
}

/** A saga being run or recovered: its definition, payload and steps over the runner's store. */
interface ActiveSaga<P> {
  readonly sagaId: string;
  /** Recorded in the saga log's previous layout. */
  readonly legacy?: boolean;
  readonly definition: SagaDefinition<P>;
  readonly payload: P;
  readonly steps: ReadonlyArray<SagaStep<P>>;
  /** The saga log, over the saga's own view of the store (its writes refused once its lease lapses). */
  readonly log: SagaLog;
}

/** A step that threw. */
interface FailedStep {
  readonly step: number;
  readonly error: unknown;
}

/** Whether a saga whose step `step` was reached is past its pivot (committed). */
function committed(definition: SagaDefinition<unknown>, step: number): boolean {
  return definition.pivot !== undefined && step > definition.pivot;
}

/** Runs sagas and recovers open ones. Construct one per store view (per request is fine). */
export class SagaRunner {
  private readonly log: SagaLog;

  constructor(private readonly options: SagaRunnerOptions) {
    this.log = new SagaLog(options.store, options.cluster ?? DEFAULT_CLUSTER_SETTINGS);
  }

  private get owner() {
    return this.options.presence?.identity ?? null;
  }

  /**
   * The store and saga log a saga writes through: bound to the presence lease held now,
   * so that its writes stop for good if the lease lapses. Throws PresenceLapsedError
   * when it has lapsed already.
   */
  private underLease(): { store: Store; log: SagaLog } {
    const lease = this.options.presence?.lease();
    if (!lease) return { store: this.options.store, log: this.log };
    if (!lease.held()) {
      throw new PresenceLapsedError('this server does not hold its clock node now (its presence lapsed); nothing changed; retry the request');
    }
    const store = new LeaseGuardedStore(this.options.store, lease.held);
    return { store, log: new SagaLog(store, this.options.cluster ?? DEFAULT_CLUSTER_SETTINGS) };
  }

  /**
   * Run a saga to completion. On a failure it compensates and throws: the step's own
   * DomainError (a refusal such as CONFLICT), or SagaAbortedError. The definition must
   * be registered (recovery could not finish it otherwise), and a given `sagaId` must
   * have been made just now (within SAGA_START_WINDOW_MS: the saga log's buckets close
   * after that); both are checked before anything is written.
   */
  async run<P>(definition: SagaDefinition<P>, payload: NoInfer<P>, sagaId: string = newTimeuuid()): Promise<void> {
    if (!this.options.registry.has(definition)) {
      throw new Error(`saga kind "${definition.kind}" is not in the registry: add it where the registry is built`);
    }
    if (!SagaLog.canStart(sagaId)) {
      throw new Error(`saga ${sagaId} was made over ${SAGA_START_WINDOW_MS} ms ago: make its id just before running it`);
    }
    const { store, log } = this.underLease();
    const saga: ActiveSaga<P> = { sagaId, definition, payload, steps: definition.steps(store, this.options.environment), log };
    this.options.inFlight.add(sagaId);
    try {
      const failed = await this.forward(saga, 0);
      if (failed) return await this.afterFailedStep(saga, failed);
      await this.finish(saga);
    } finally {
      this.options.inFlight.delete(sagaId);
    }
  }

  /** Whether a saga is still open (running here or elsewhere, or waiting for recovery). */
  isOpen(sagaId: string): Promise<boolean> {
    return this.log.isOpen(sagaId);
  }

  /**
   * Roll open sagas forward or back, as their definitions say: at once those whose
   * owner is gone (its presence expired, or it was this instance's previous
   * incarnation) and this process's own that are not running; never one whose owner
   * is alive elsewhere; and those recorded without an owner once older than `graceMs`.
   * Sagas running in this process are left alone. Errors are logged; the saga stays
   * open for the next pass.
   */
  async recover(graceMs: number, now: Date = new Date()): Promise<RecoveryReport> {
    if (this.options.presence && !this.options.presence.lease().held()) return { rolledForward: 0, rolledBack: 0, failed: 0, skipped: 0 };
    let rolledForward = 0;
    let rolledBack = 0;
    let failed = 0;
    let skipped = 0;
    for (const record of await this.log.open(now)) {
      if (this.options.inFlight.has(record.sagaId) || !(await this.due(record, graceMs, now))) {
        skipped++;
        continue;
      }
      // Read again just before acting: another server may have finished it since the
      // log was read (and writing to a closed saga's row would bring it back).
      if (!(await this.log.isOpen(record.sagaId))) continue;
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

  /** Whether recovery should take an open saga that is not running in this process now. */
  private async due(record: SagaRecord, graceMs: number, now: Date): Promise<boolean> {
    const { presence } = this.options;
    if (record.owner && presence) return !(await presence.isAlive(record.owner)) || record.owner.processId === presence.identity.processId;
    return now.getTime() - record.updatedAt.getTime() >= graceMs;
  }

  /** Run the steps from `from` on, recording each in the log first; the first failure, or null. */
  private async forward<P>(saga: ActiveSaga<P>, from: number): Promise<FailedStep | null> {
    for (let step = from; step < saga.steps.length; step++) {
      try {
        // Before step i, and so after step i-1: the log says how far we got.
        await saga.log.record(this.entryOf(saga), step, 'forward', this.owner);
        await saga.steps[step]!.run(saga.payload);
      } catch (error) {
        return { step, error };
      }
    }
    return null;
  }

  /** A step failed: past the pivot recovery finishes the saga; before it, undo and report. */
  private async afterFailedStep<P>(saga: ActiveSaga<P>, failed: FailedStep): Promise<void> {
    const { sagaId, definition } = saga;
    if (committed(definition, failed.step)) {
      // Committed: what is left is retriable housekeeping that recovery will finish.
      this.options.logger?.warn(
        { err: failed.error, sagaId, kind: definition.kind, step: failed.step },
        'a step after the pivot failed; recovery will finish it',
      );
      return;
    }
    // The failed step may have applied: it is compensated too.
    const compensated = await this.tryCompensate(saga, failed.step);
    if (failed.error instanceof DomainError && compensated) throw failed.error;
    throw new SagaAbortedError(definition.kind, compensated, failed.error);
  }

  /**
   * Every step is done: forget the saga. If the log cannot be closed, a saga with a
   * pivot has still succeeded (recovery only closes the log); any other would be
   * undone by recovery, so it is undone now and reported as failed.
   */
  private async finish<P>(saga: ActiveSaga<P>): Promise<void> {
    const { sagaId, definition } = saga;
    try {
      await saga.log.close(saga);
    } catch (err) {
      if (definition.pivot !== undefined) {
        this.options.logger?.warn({ err, sagaId, kind: definition.kind }, 'closing the saga log failed; recovery will close it');
        return;
      }
      const compensated = await this.tryCompensate(saga, saga.steps.length - 1);
      throw new SagaAbortedError(definition.kind, compensated, err);
    }
  }

  private async recoverOne(record: SagaRecord): Promise<'forward' | 'backward'> {
    const definition = this.options.registry.get(record.kind);
    const { store, log } = this.underLease();
    const saga: ActiveSaga<unknown> = {
      sagaId: record.sagaId,
      legacy: record.legacy,
      definition,
      payload: record.payload,
      steps: definition.steps(store, this.options.environment),
      log,
    };
    this.options.inFlight.add(record.sagaId);
    try {
      if (record.phase === 'forward' && (definition.recovery === 'forward' || committed(definition, record.step))) {
        // The step in progress may or may not have applied: steps are idempotent, run it again.
        const failed = await this.forward(saga, record.step);
        if (failed) throw failed.error;
        await saga.log.close(saga);
        this.options.logger?.info({ sagaId: record.sagaId, kind: record.kind }, 'saga rolled forward');
        return 'forward';
      }
      await this.compensate(saga, record.step);
      this.options.logger?.info({ sagaId: record.sagaId, kind: record.kind }, 'saga rolled back');
      return 'backward';
    } finally {
      this.options.inFlight.delete(record.sagaId);
    }
  }

  /** Compensate; true when everything was undone, false (logged) when the saga stays for recovery. */
  private async tryCompensate<P>(saga: ActiveSaga<P>, from: number): Promise<boolean> {
    try {
      await this.compensate(saga, from);
      return true;
    } catch (err) {
      this.options.logger?.error({ err, sagaId: saga.sagaId, kind: saga.definition.kind }, 'compensation failed; the saga stays in the log for recovery');
      return false;
    }
  }

  /** Undo steps `from` .. 0 in reverse order, logging each, then close the saga. */
  private async compensate<P>(saga: ActiveSaga<P>, from: number): Promise<void> {
    for (let j = Math.min(from, saga.steps.length - 1); j >= 0; j--) {
      await saga.log.record(this.entryOf(saga), j, 'compensating', this.owner);
      await saga.steps[j]!.compensate?.(saga.payload);
    }
    await saga.log.close(saga);
  }

  /** How the log names a saga. */
  private entryOf<P>(saga: ActiveSaga<P>) {
    return { sagaId: saga.sagaId, kind: saga.definition.kind, payload: saga.payload, legacy: saga.legacy };
  }
}

/**
 * Run a recovery pass every `intervalMs` until stopped. It only sets the timer: the
 * pass at start-up is the caller's, so it can finish before the server serves. `onPass`
 * is told each pass's report (null: the pass failed).
 */
export function startRecoveryTimer(
  runner: () => SagaRunner,
  options: { intervalMs: number; graceMs: number; logger?: Logger; onPass?: (report: RecoveryReport | null) => void },
): PeriodicTask {
  return startPeriodicTask({
    intervalMs: options.intervalMs,
    async pass() {
      const report = await runner().recover(options.graceMs);
      options.onPass?.(report);
      if (report.rolledForward + report.rolledBack + report.failed > 0) {
        options.logger?.info(report, 'saga recovery pass');
      }
    },
    onError: (err) => {
      options.onPass?.(null);
      options.logger?.error({ err }, 'saga recovery pass failed');
    },
  });
}
