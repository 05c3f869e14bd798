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
}

/** The default clock: wall time in microseconds, bumped on collisions. */
export class MonotonicClock implements Clock {
  private last = 0n;
  private readonly now: () => number;
  private readonly step: bigint;
  private readonly node: bigint;

  constructor(options: MonotonicClockOptions = {}) {
    this.now = options.now ?? Date.now;
    if (options.node !== undefined && (!Number.isInteger(options.node) || options.node < 0 || options.node >= NODE_COUNT)) {
      throw new Error(`a clock's node must be an integer between 0 and ${NODE_COUNT - 1}, got ${options.node}`);
    }
    this.step = options.node === undefined ? 1n : BigInt(NODE_COUNT);
    this.node = BigInt(options.node ?? 0);
  }

  nowMicros(): bigint {
    const wall = BigInt(Math.floor(this.now() * 1000));
    // Round down to this node's slot: every timestamp ≡ node (mod step).
    const slot = wall - (wall % this.step) + this.node;
    this.last = slot > this.last ? slot : this.last + this.step;
    return this.last;
  }
}
