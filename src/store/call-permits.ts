/**
 * A cap on the store calls requests have in flight at once, so that background work
 * (presence, saga recovery, the list applier, the verifiers, live polling) always finds
 * capacity: those go to the store directly, requests through their `CountingStore`,
 * which takes a permit for each call. On Cassandra the driver carries about 2,048
 * requests per connection and refuses every caller past that (`BusyConnectionError`),
 * so requests get half of what one host's connections carry; a request call past the
 * cap waits for a permit instead of being refused, and background calls never wait.
 */

/** Requests per connection the Cassandra driver carries before it refuses (its `maxRequestsPerConnection`). */
export const DRIVER_REQUESTS_PER_CONNECTION = 2_048;

/** The request store calls a process may have in flight on Cassandra: half of one host's connections' capacity. */
export function requestCallCapacity(connectionsPerHost: number): number {
  return Math.max(1, Math.floor((connectionsPerHost * DRIVER_REQUESTS_PER_CONNECTION) / 2));
}

/** Permits for concurrent calls: past `max`, a call waits (first come, first served). */
export class CallPermits {
  private used = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`max must be a positive integer, got ${max}`);
  }

  /** Calls holding a permit now. */
  get inUse(): number {
    return this.used;
  }

  /**
   * Run `call` once a permit is free; the permit is returned when it settles. With a
   * permit free (nearly always), the call's own promise is returned, and the permit comes
   * back through one reaction on it: no async function and no await a call (three of
   * these a timeline request over HTTP; docs/benchmarks-history.md, issue 39 over HTTP,
   * round two). The permit is back before the caller's own reactions to the call run.
   */
  run<T>(call: () => Promise<T>): Promise<T> {
    if (this.used >= this.max) return this.afterWait(call);
    this.used++;
    return this.holding(call);
  }

  /** Start `call` under the permit taken for it, and return the permit once the call settles. */
  private holding<T>(call: () => Promise<T>): Promise<T> {
    let result: Promise<T>;
    try {
      result = call();
    } catch (err) {
      this.release();
      return Promise.reject(err);
    }
    result.then(this.release, this.release);
    return result;
  }

  /** Wait for a permit handed over (`used` unchanged), then run `call` under it. */
  private async afterWait<T>(call: () => Promise<T>): Promise<T> {
    await new Promise<void>((resolve) => this.waiting.push(resolve));
    return this.holding(call);
  }

  /** A permit back: to the first waiting call as it is, or free. */
  private readonly release = (): void => {
    const next = this.waiting.shift();
    if (next) next();
    else this.used--;
  };
}
