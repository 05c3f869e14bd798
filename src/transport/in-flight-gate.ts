/**
 * Load shedding: at most `MAX_IN_FLIGHT` requests execute at once in this process.
 * Past that a request waits in a short queue (`MAX_QUEUED` places, `QUEUE_TIMEOUT_MS`
 * at most) and is otherwise refused as busy (503, `Retry-After`, `UNAVAILABLE`).
 *
 * Fair to principals, so one client cannot take every slot: a principal holds at most a
 * quarter of the slots (`PRINCIPAL_SHARE`; its other requests wait their turn even when
 * slots are free), a freed slot goes to the waiting principal with the fewest requests
 * in flight (the oldest of its requests), and when the queue is full the principal with
 * the most requests in flight and queued is shed first: its newest queued request is
 * refused in favour of a newcomer from a lighter principal, or the newcomer is refused
 * when it is that principal's. A flood therefore shares the store and the event loop
 * with at most a quarter of the slots' worth of its own requests.
 *
 * A slot is handed over in the event loop's next check phase (`setImmediate`), not at
 * once: requests whose work is all synchronous (the embedded store's) would otherwise
 * run to their end inside the callback that read them, never more than one "in
 * flight", and a flood read in one turn of the loop would run whole before anything
 * else is read. So each turn runs at most `MAX_IN_FLIGHT` requests, and a light
 * principal's request, first in the queue, waits a turn or two, not the whole flood.
 */

/** The configured caps; `maxInFlight` 0 turns the gate off. */
export interface InFlightSettings {
  readonly maxInFlight: number;
  readonly maxQueued: number;
  readonly queueTimeoutMs: number;
}

/** A request refused because the server is busy (`reason` says which cap). */
export class ServerBusyError extends Error {
  override readonly name = 'ServerBusyError';
  constructor(readonly reason: 'queue-full' | 'queue-timeout' | 'shed') {
    super('The server is busy: too many requests are in flight; retry after the time Retry-After gives');
  }
}

/**
 * Seconds a client refused as busy is told to wait (`Retry-After`): a second, by which
 * the queue has moved on; a client told longer would leave slots idle that it could use.
 */
export const BUSY_RETRY_AFTER_S = 1;

/** The part of the slots one principal may hold at once (at least one slot). */
export const PRINCIPAL_SHARE = 1 / 4;

/** Frees the slot it was given for; calling it again does nothing. */
export type Release = () => void;

/** A slot taken now, handed over in the loop's next check phase (see the file comment). */
function handOver(release: Release): Promise<Release> {
  return new Promise((resolve) => setImmediate(resolve, release));
}

interface Waiter {
  readonly principal: string;
  readonly resolve: (release: Release) => void;
  readonly reject: (err: Error) => void;
  readonly timer: NodeJS.Timeout;
  readonly cleanup: () => void;
}

/** The process's execution slots and their queue. */
export class InFlightGate {
  private running = 0;
  private queuedCount = 0;
  /** Requests in flight, by principal (absent: none). */
  private readonly inFlight = new Map<string, number>();
  /** Waiting requests, by principal, oldest first (absent: none). */
  private readonly queues = new Map<string, Waiter[]>();

  /** Slots one principal may hold (`PRINCIPAL_SHARE` of them). */
  readonly perPrincipal: number;

  constructor(readonly settings: InFlightSettings) {
    for (const name of ['maxInFlight', 'maxQueued', 'queueTimeoutMs'] as const) {
      const value = settings[name];
      if (!Number.isInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
    }
    this.perPrincipal = Math.max(1, Math.ceil(settings.maxInFlight * PRINCIPAL_SHARE));
  }

  /** Requests executing now. */
  get executing(): number {
    return this.running;
  }

  /** Requests waiting for a slot now. */
  get queued(): number {
    return this.queuedCount;
  }

  /**
   * A slot for one request of `principal`: at once when one is free, else after a wait
   * in the queue. Rejects with `ServerBusyError` when the queue is full and this
   * principal is the heaviest, when the request is shed for a lighter one, or at the
   * queue timeout; with `signal`'s reason when its client goes away while it waits.
   */
  acquire(principal: string, signal?: AbortSignal): Promise<Release> {
    const { maxInFlight, maxQueued } = this.settings;
    if (maxInFlight === 0) return Promise.resolve(this.take(principal));
    if (this.running < maxInFlight && (this.inFlight.get(principal) ?? 0) < this.perPrincipal) return handOver(this.take(principal));
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.queuedCount >= maxQueued) {
      const victim = this.heaviestQueued(principal);
      if (victim === null) return Promise.reject(new ServerBusyError('queue-full'));
      this.drop(victim).reject(new ServerBusyError('shed'));
    }
    return new Promise<Release>((resolve, reject) => {
      const onAbort = () => {
        this.drop(waiter);
        reject(signal!.reason);
      };
      const timer = setTimeout(() => {
        this.drop(waiter);
        reject(new ServerBusyError('queue-timeout'));
      }, this.settings.queueTimeoutMs);
      const waiter: Waiter = {
        principal,
        resolve,
        reject,
        timer,
        cleanup: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const queue = this.queues.get(principal);
      if (queue) queue.push(waiter);
      else this.queues.set(principal, [waiter]);
      this.queuedCount++;
    });
  }

  /** Run `work` in a slot of `principal`'s (see `acquire`); the slot is freed when it settles. */
  async run<T>(principal: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const release = await this.acquire(principal, signal);
    try {
      return await work();
    } finally {
      release();
    }
  }

  private take(principal: string): Release {
    this.running++;
    this.inFlight.set(principal, (this.inFlight.get(principal) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      const left = this.inFlight.get(principal)! - 1;
      if (left === 0) this.inFlight.delete(principal);
      else this.inFlight.set(principal, left);
      this.admitNext();
    };
  }

  /** Give free slots to the waiting principals with the fewest requests in flight, each within its share. */
  private admitNext(): void {
    while (this.queuedCount > 0 && this.running < this.settings.maxInFlight) {
      let chosen: string | null = null;
      let least = this.perPrincipal;
      for (const principal of this.queues.keys()) {
        const load = this.inFlight.get(principal) ?? 0;
        if (load < least) [chosen, least] = [principal, load];
      }
      // Every waiting principal holds its share: the free slots wait for another.
      if (chosen === null) return;
      const waiter = this.drop(this.queues.get(chosen!)![0]!);
      void handOver(this.take(waiter.principal)).then(waiter.resolve);
    }
  }

  /**
   * The newest queued request of the heaviest principal (in flight plus queued), or
   * null when the newcomer's own principal is the heaviest (ties included): it is refused.
   */
  private heaviestQueued(newcomer: string): Waiter | null {
    const weight = (principal: string) => (this.inFlight.get(principal) ?? 0) + (this.queues.get(principal)?.length ?? 0);
    let heaviest = newcomer;
    let most = weight(newcomer) + 1;
    for (const principal of this.queues.keys()) {
      const w = weight(principal);
      if (w > most) [heaviest, most] = [principal, w];
    }
    if (heaviest === newcomer) return null;
    const queue = this.queues.get(heaviest)!;
    return queue[queue.length - 1]!;
  }

  /** Take a waiter out of the queue (its timer and abort listener too). */
  private drop(waiter: Waiter): Waiter {
    const queue = this.queues.get(waiter.principal);
    const at = queue?.indexOf(waiter) ?? -1;
    if (at === -1) return waiter;
    queue!.splice(at, 1);
    if (queue!.length === 0) this.queues.delete(waiter.principal);
    this.queuedCount--;
    waiter.cleanup();
    return waiter;
  }
}
