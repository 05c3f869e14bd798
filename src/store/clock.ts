/**
 * Write timestamps in microseconds from a monotonic client clock, as the Cassandra
 * driver's client-side timestamp generator does: never repeats, never goes back.
 *
 * Several servers share one cluster, so two of them can pick the same microsecond for
 * the same cell; Cassandra then keeps the greater value, which neither server can
 * predict. A server's clock can therefore own a node number: its timestamps all end in
 * that number's `NODE_BITS` low bits, so timestamps from two servers with different
 * nodes never tie (and one server's never repeat). The price is resolution: one clock
 * hands out at most one timestamp per 2^NODE_BITS µs before running ahead of the wall.
 */

/** Source of write timestamps; tests replace it to force ties. */
export interface Clock {
  /** Microseconds since the epoch, strictly increasing per clock. */
  nowMicros(): bigint;
  /**
   * A write time read from the store (another server's, maybe): from now on hand out
   * only timestamps above it (a hybrid logical clock's receive step). Optional: a
   * clock without it still serves `timestampAbove`, which never goes below its floor.
   */
  observe?(micros: bigint): void;
}

/**
 * A write timestamp above `floor` (the newest write time read of the cells a write
 * overwrites or hides, or null when there is none) and never below the clock: the rule
 * that orders a write after every write acknowledged before it began, whatever the
 * servers' clocks (docs/how-it-works.md, "Ordering writes across servers"). The clock
 * observes the floor, so its later timestamps stay above it too, and keep its node bits.
 */
export function timestampAbove(clock: Clock, floor: bigint | null | undefined): bigint {
  if (floor === null || floor === undefined) return clock.nowMicros();
  clock.observe?.(floor);
  const t = clock.nowMicros();
  return t > floor ? t : floor + 1n;
}

/** The greatest of some write times, null when there are none (cells never written, or cleared). */
export function newestOf(times: Iterable<bigint | null | undefined>): bigint | null {
  let newest: bigint | null = null;
  for (const t of times) if (t !== null && t !== undefined && (newest === null || t > newest)) newest = t;
  return newest;
}

/** Low bits of a timestamp that name the server (64 servers; 64 µs resolution, 15,625 timestamps/s). */
export const NODE_BITS = 6;
/** How many distinct node numbers exist. */
export const NODE_COUNT = 1 << NODE_BITS;

/** Options of `MonotonicClock`. */
export interface MonotonicClockOptions {
  /** Wall time in ms (tests skew it). */
  readonly now?: () => number;
  /** This server's node number, 0 .. NODE_COUNT-1: the low bits of every timestamp. */
  readonly node?: number;
  /**
   * Told, for each write time observed above this clock's wall reading, by how many ms
   * it was ahead: the only sign a server gets that its clock is behind another's (or
   * the other's ahead). The composition root reports it (ClockSkewWatch).
   */
  readonly onAhead?: (aheadMs: number) => void;
}

/** The default clock: wall time in microseconds, bumped on collisions. */
export class MonotonicClock implements Clock {
  private last = 0n;
  private readonly now: () => number;
  private step: bigint;
  private node: bigint;
  /** See `MonotonicClockOptions.onAhead`; settable once the process has its watch. */
  onAhead: ((aheadMs: number) => void) | undefined;

  constructor(options: MonotonicClockOptions = {}) {
    this.now = options.now ?? Date.now;
    this.onAhead = options.onAhead;
    this.step = 1n;
    this.node = 0n;
    if (options.node !== undefined) this.useNode(options.node);
  }

  /** From now on, end every timestamp in `node`'s low bits (once the process has claimed one). */
  useNode(node: number): void {
    if (!Number.isInteger(node) || node < 0 || node >= NODE_COUNT) {
      throw new Error(`a clock's node must be an integer between 0 and ${NODE_COUNT - 1}, got ${node}`);
    }
    this.step = BigInt(NODE_COUNT);
    this.node = BigInt(node);
  }

  /**
   * The receive step of a hybrid logical clock: every later timestamp is above `micros`
   * (it still ends in this node's bits). A write time ahead of the wall is reported.
   */
  observe(micros: bigint): void {
    const wall = BigInt(Math.floor(this.now() * 1000));
    if (micros > wall) this.onAhead?.(Number(micros - wall) / 1000);
    if (micros > this.last) this.last = micros;
  }

  nowMicros(): bigint {
    const wall = BigInt(Math.floor(this.now() * 1000));
    // Round down to this node's slot: every timestamp ≡ node (mod step).
    const base = wall > this.last ? wall : this.last;
    let slot = base - (base % this.step) + this.node;
    if (slot <= this.last) slot += this.step;
    this.last = slot;
    return slot;
  }
}
