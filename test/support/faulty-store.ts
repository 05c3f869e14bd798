/**
 * A store that fails chosen calls: the fault-injecting wrapper the style guide asks
 * for, built on the same decorator as round-trip counting.
 */
import { StoreOutcomeUnknownError } from '../../src/store/port.js';
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';

/** Decides whether a call fails. */
export type FaultRule = (call: StoreCall) => boolean;

/** Fails every call a rule matches with `InjectedFault`, until the rule is cleared. */
export class FaultyStore extends StoreDecorator {
  private rule: FaultRule | null = null;
  private error: (call: StoreCall) => Error = (call) => new InjectedFault(`injected fault on ${call.operation} ${call.table ?? ''}`);
  private crashAt: number | null = null;
  readonly calls: StoreCall[] = [];

  /** Fail the calls `rule` matches, with `InjectedFault` or the error `error` makes. */
  failWhen(rule: FaultRule | null, error?: (call: StoreCall) => Error): void {
    this.rule = rule;
    if (error) this.error = error;
  }

  /** Fail only the call with this index (counted from now), once. */
  failCall(index: number): void {
    const target = this.calls.length + index;
    this.failWhen(() => this.calls.length - 1 === target);
  }

  /**
   * Simulate a crash: from the call with this index (counted from now) on, every call
   * fails, as if the process had died; nothing after that point reaches the store.
   */
  crashAtCall(index: number): void {
    this.crashAt = this.calls.length + index;
  }

  /** Back to normal: no rule, no crash. */
  heal(): void {
    this.rule = null;
    this.crashAt = null;
    this.error = (call) => new InjectedFault(`injected fault on ${call.operation} ${call.table ?? ''}`);
  }

  protected async around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    this.calls.push(call);
    if (this.crashAt !== null && this.calls.length - 1 >= this.crashAt) throw new InjectedFault(`crashed before ${call.operation}`);
    if (this.rule?.(call)) throw this.error(call);
    return run();
  }
}

/** The error FaultyStore throws. */
export class InjectedFault extends Error {
  override readonly name = 'InjectedFault';
}

/** Delays every call, so concurrent requests interleave their reads and writes. */
export class SlowStore extends StoreDecorator {
  /** When the last call was made (epoch milliseconds), before its delay. */
  lastStartedAt = 0;

  constructor(
    inner: ConstructorParameters<typeof StoreDecorator>[0],
    /** The delay of each call; a test may change it. */
    public delayMs: number,
  ) {
    super(inner);
  }

  protected async around<T>(_call: StoreCall, run: () => Promise<T>): Promise<T> {
    this.lastStartedAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    return run();
  }
}

/**
 * Holds matching calls until a set number of them have arrived, then lets them all go
 * on together: a race the test needs happens every time, however the machine schedules
 * the requests. Armed per test; calls that do not match pass straight through.
 */
export class RendezvousStore extends StoreDecorator {
  private waiting: Array<() => void> = [];
  private parties = 0;
  private match: ((call: StoreCall) => boolean) | null = null;
  /** Whether the last arming's calls all arrived (rather than `timeoutMs` passing first). */
  met = false;

  /** The next `parties` calls that `match` accepts wait for each other (at most `timeoutMs`). */
  arm(parties: number, match: (call: StoreCall) => boolean, timeoutMs = 5_000): void {
    this.met = false;
    this.parties = parties;
    this.match = match;
    setTimeout(() => this.release(), timeoutMs).unref();
  }

  private release(): void {
    this.match = null;
    const waiting = this.waiting;
    this.waiting = [];
    for (const go of waiting) go();
  }

  protected async around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    if (this.match?.(call)) {
      const arrived = new Promise<void>((resolve) => this.waiting.push(resolve));
      if (this.waiting.length >= this.parties) {
        this.met = true;
        this.release();
      }
      await arrived;
    }
    return run();
  }
}

/**
 * How a write's answer goes wrong: `applied-then-timeout`, the write lands and the
 * caller is told it timed out (the answer was lost); `timeout-then-applied`, the caller
 * is told it timed out at once, and the write lands later, when the test calls `land()`
 * (a batchlog replay or a hint past the window).
 */
export type OutcomeFault = 'applied-then-timeout' | 'timeout-then-applied';

/** The write operations of the port: what an outcome fault can hit. */
const WRITES = new Set<StoreCall['operation']>(['upsert', 'delete', 'deleteRange', 'batch', 'insertIfNotExists', 'deleteIf', 'increment']);

/**
 * Makes the next write a rule matches have an unknown outcome, as Cassandra reports a
 * write timeout (`StoreOutcomeUnknownError`), in one of the two `OutcomeFault` modes.
 */
export class OutcomeFaultStore extends StoreDecorator {
  private armed: { mode: OutcomeFault; match: (call: StoreCall) => boolean } | null = null;
  private held: Array<() => Promise<unknown>> = [];
  /** How many faults were injected since the store was made. */
  injected = 0;

  /** Fault the next write `match` accepts, once. */
  faultNextWrite(mode: OutcomeFault, match: (call: StoreCall) => boolean = () => true): void {
    this.armed = { mode, match };
  }

  /** Apply the writes held back by `timeout-then-applied`, in order. */
  async land(): Promise<void> {
    const held = this.held;
    this.held = [];
    for (const apply of held) await apply();
  }

  /** Whether a fault is still waiting for its write. */
  get pending(): boolean {
    return this.armed !== null;
  }

  protected async around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    const armed = this.armed;
    if (!armed || !WRITES.has(call.operation) || !armed.match(call)) return run();
    this.armed = null;
    this.injected++;
    const timeout = new StoreOutcomeUnknownError(`injected write timeout (${armed.mode}) on ${call.operation} ${call.tables.join(', ')}`, { timedOut: true });
    if (armed.mode === 'applied-then-timeout') {
      await run();
      throw timeout;
    }
    this.held.push(run);
    throw timeout;
  }
}
