/**
 * `ObservedStore`: reports every round trip to a list of observers (metrics, traces):
 * what it was, how many statements it sent, how long it took, how it ended, and what
 * only the adapter could see (a lightweight transaction whose outcome was unknown, reads
 * over too many tombstones). It wraps the process's store once, under every request's
 * `CountingStore`, so a request's calls and the background jobs' calls are all seen,
 * and a call refused at the request's deadline (no round trip) is not.
 *
 * Cheap by construction: one small record per call (it is the call's statement tally and
 * the report at once), `performance.now()` twice, no closure beyond the promise's own.
 */
import { DeadlineExceededError } from './deadline.js';
import type { ConditionalResult, Store } from './port.js';
import { StoreReadFailureError, StoreRequestError, StoreUnavailableError } from './port.js';
import { activeTally, type StatementTally } from './statements.js';
import { StoreDecorator, type StoreCall, type StoreOperation } from './store-decorator.js';

/** Why a round trip failed, in the few kinds an operator acts on differently. */
export type StoreErrorKind = 'unavailable' | 'timeout' | 'invalid' | 'read_failure' | 'other';

/** Every `StoreErrorKind`, in a fixed order (metrics pre-create their series from it). */
export const STORE_ERROR_KINDS: readonly StoreErrorKind[] = ['unavailable', 'timeout', 'invalid', 'read_failure', 'other'];

/**
 * How a lightweight transaction ended: applied or not, or its response was lost
 * (a timeout) and a serial read then learned the outcome (`unknown_settled`) or could
 * not (`unknown_given_up`: the caller got an error saying the outcome is unknown).
 */
export type LwtOutcome = 'applied' | 'not_applied' | 'unknown_settled' | 'unknown_given_up';

/** Every `LwtOutcome`, in a fixed order. */
export const LWT_OUTCOMES: readonly LwtOutcome[] = ['applied', 'not_applied', 'unknown_settled', 'unknown_given_up'];

/** What an observer learns when a round trip ends. Valid only during `finished`: copy what you keep. */
export interface StoreRoundTrip extends StoreCall {
  /** Statements the adapter sent for this call (pages of a read, keys of a `getMany`, serial reads). */
  readonly statements: number;
  /** From the call's start to its answer, in seconds. */
  readonly durationSeconds: number;
  /** Null when the call answered; otherwise why it failed. */
  readonly errorKind: StoreErrorKind | null;
  /** The error the call failed with (undefined when it answered). */
  readonly error: unknown;
  /** For `insertIfNotExists` and `deleteIf`: how the transaction ended; null otherwise. */
  readonly lwt: LwtOutcome | null;
  /** Reads of this call that passed over more tombstones than the warning threshold. */
  readonly tombstoneWarnings: number;
}

/**
 * Told of every round trip. `started` (optional) runs as the call starts; what it returns
 * comes back to `finished` with the same call (a span, for traces). Observers must not
 * throw; one that does is ignored for that call.
 */
export interface StoreObserver<S = unknown> {
  started?(call: StoreCall): S;
  /**
   * Optional: start the call (`run`, once) inside what `started` set up, and return its
   * promise. Tracing makes the call's span the active one here, so the driver's own spans
   * nest under it.
   */
  within?<T>(state: S, run: () => Promise<T>): Promise<T>;
  finished(trip: StoreRoundTrip, state: S): void;
}

/** The kind of a store error (the adapters' own, the driver's through them, SQLite's busy timeout). */
export function storeErrorKindOf(err: unknown): StoreErrorKind {
  if (err instanceof StoreUnavailableError) return err.timedOut ? 'timeout' : 'unavailable';
  if (err instanceof StoreRequestError) return 'invalid';
  if (err instanceof StoreReadFailureError) return 'read_failure';
  if (err instanceof DeadlineExceededError) return 'timeout';
  // better-sqlite3's SqliteError: another process held the write lock past busy_timeout.
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') return 'timeout';
  return 'other';
}

/** One call's tally and report at once: the only allocation a call costs the observer. */
class RoundTrip implements StatementTally, StoreRoundTrip {
  statements = 0;
  lwtUnknown?: 'settled' | 'given-up';
  tombstoneWarnings = 0;
  operation: StoreOperation = 'ping';
  table: string | null = null;
  tables: readonly string[] = [];
  durationSeconds = 0;
  errorKind: StoreErrorKind | null = null;
  error: unknown = undefined;
  lwt: LwtOutcome | null = null;
  /** What each observer's `started` returned (only when one has `started`). */
  states: unknown[] | null = null;
  startedAt = 0;

  constructor(readonly parent: StatementTally | undefined) {}
}

/** The store, observed: wrap the process's store once, before features and requests use it. */
export class ObservedStore extends StoreDecorator {
  private readonly observers: readonly StoreObserver[];
  private readonly starting: boolean;
  private readonly wrapping: boolean;

  constructor(inner: Store, observers: readonly StoreObserver<any>[]) {
    super(inner);
    this.observers = Object.freeze([...observers]);
    this.starting = this.observers.some((o) => o.started !== undefined);
    this.wrapping = this.observers.some((o) => o.within !== undefined);
  }

  protected override statementTally(): StatementTally {
    // The request's tally (if any) stays counted: this one forwards to it.
    return new RoundTrip(activeTally());
  }

  protected around<T>(call: StoreCall, run: () => Promise<T>, tally: StatementTally | undefined): Promise<T> {
    const trip = tally as RoundTrip;
    trip.operation = call.operation;
    trip.table = call.table;
    trip.tables = call.tables;
    if (this.starting) {
      trip.states = this.observers.map((o) => {
        try {
          return o.started?.(call);
        } catch {
          return undefined;
        }
      });
    }
    trip.startedAt = performance.now();
    let promise: Promise<T>;
    try {
      promise = this.wrapping ? this.runWithin(trip, run) : run();
    } catch (err) {
      promise = Promise.reject(err);
    }
    return promise.then(
      (value) => {
        if (call.operation === 'insertIfNotExists' || call.operation === 'deleteIf') {
          const applied = call.operation === 'deleteIf' ? (value as boolean) : (value as ConditionalResult).applied;
          trip.lwt = trip.lwtUnknown === 'settled' ? 'unknown_settled' : applied ? 'applied' : 'not_applied';
        }
        this.finish(trip);
        return value;
      },
      (err: unknown) => {
        trip.error = err;
        trip.errorKind = storeErrorKindOf(err);
        if (trip.lwtUnknown === 'given-up') trip.lwt = 'unknown_given_up';
        this.finish(trip);
        throw err;
      },
    );
  }

  /** `run`, inside every observer's `within` (the first observer's outermost). */
  private runWithin<T>(trip: RoundTrip, run: () => Promise<T>): Promise<T> {
    let start = run;
    for (let i = this.observers.length - 1; i >= 0; i--) {
      const observer = this.observers[i]!;
      if (!observer.within) continue;
      const inner = start;
      const state = trip.states?.[i];
      start = () => observer.within!(state, inner);
    }
    return start();
  }

  private finish(trip: RoundTrip): void {
    trip.durationSeconds = (performance.now() - trip.startedAt) / 1000;
    const { observers } = this;
    for (let i = 0; i < observers.length; i++) {
      try {
        observers[i]!.finished(trip, trip.states?.[i]);
      } catch {
        // An observer's failure must never fail the store call it watched.
      }
    }
  }
}
