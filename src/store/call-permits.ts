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

  /** Run `call` once a permit is free; the permit is returned when it settles. */
  async run<T>(call: () => Promise<T>): Promise<T> {
    if (this.used < this.max) this.used++;
    // A released permit is handed over as it is (`used` unchanged).
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await call();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.used--;
    }
  }
}
