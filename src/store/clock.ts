/**
 * Write timestamps in microseconds from a monotonic client clock, as the Cassandra
 * driver's client-side timestamp generator does: never repeats, never goes back.
 */

/** Source of write timestamps; tests replace it to force ties. */
export interface Clock {
  /** Microseconds since the epoch, strictly increasing per clock. */
  nowMicros(): bigint;
}

/** The default clock: wall time in microseconds, bumped by one on collisions. */
export class MonotonicClock implements Clock {
  private last = 0n;

  nowMicros(): bigint {
    const wall = BigInt(Date.now()) * 1000n;
    this.last = wall > this.last ? wall : this.last + 1n;
    return this.last;
  }
}
