/**
 * Honest about the clock-skew bound. Writes are ordered above the write times they read
 * (store/clock.ts, `timestampAbove`), so a server whose clock is behind still orders its
 * writes right; but the windows of counts, list cuts, the name sweeper and live feeds
 * assume no two clocks differ by more than `CLOCK_SKEW_MS`. A server cannot read
 * another's clock; what it can see is a write time it reads lying ahead of its own
 * clock: the clock that wrote it was ahead of ours by at least that much (less the time
 * since, which only understates it). Every such lead is reported here by the process
 * clock (`MonotonicClock.onAhead`): beyond `CLOCK_SKEW_MS` it is logged (at most once
 * every 10 s) and counted in /metrics; beyond `CLOCK_SKEW_UNREADY_MS` the server also
 * fails /readyz for the next minute, so a load balancer stops sending it requests
 * while an operator fixes the clocks. Which clock is wrong is unknown: the servers
 * behind see the lead, and report it, whichever of the two is off.
 */
import type { Logger } from 'pino';

/** How long a lead beyond the readiness bound keeps the server not ready (ms). */
export const UNREADY_HOLD_MS = 60_000;
/** Least time between two log lines about leads beyond the bound (ms). */
const LOG_EVERY_MS = 10_000;

/** Where the watch reports (the app's metrics, when on). */
export interface ClockSkewReport {
  /** A write time was read `aheadMs` ahead of this server's clock, beyond the bound. */
  clockAheadBeyondBound(aheadMs: number): void;
}

/** What the watch needs. */
export interface ClockSkewWatchOptions {
  /** `CLOCK_SKEW_MS`: leads beyond it are logged and counted. */
  readonly boundMs: number;
  /** `CLOCK_SKEW_UNREADY_MS`: leads beyond it fail readiness for `UNREADY_HOLD_MS`. */
  readonly unreadyMs: number;
  readonly logger?: Pick<Logger, 'warn'>;
  readonly report?: ClockSkewReport | null;
  /** This process's wall time (ms); tests move it. */
  readonly now?: () => number;
}

/** Watches the write times this server reads for clocks beyond the bound (see the file comment). */
export class ClockSkewWatch {
  private readonly now: () => number;
  private lastLoggedAt = -Infinity;
  /** The last lead beyond the readiness bound: when, and how large (ms). */
  private unready: { at: number; aheadMs: number } | null = null;

  constructor(private readonly options: ClockSkewWatchOptions) {
    if (!(options.unreadyMs >= options.boundMs)) {
      throw new Error(`the readiness bound (${options.unreadyMs} ms) must be at least the clock-skew bound (${options.boundMs} ms)`);
    }
    this.now = options.now ?? Date.now;
  }

  /** A write time was read `aheadMs` ahead of this server's clock (the clock's `onAhead`). */
  observe(aheadMs: number): void {
    const { boundMs, unreadyMs, logger, report } = this.options;
    if (aheadMs <= boundMs) return;
    const at = this.now();
    report?.clockAheadBeyondBound(aheadMs);
    if (aheadMs > unreadyMs) this.unready = { at, aheadMs };
    if (at - this.lastLoggedAt >= LOG_EVERY_MS) {
      this.lastLoggedAt = at;
      logger?.warn(
        { aheadMs: Math.round(aheadMs), clockSkewMs: boundMs, unreadyMs },
        `a write time read is ${Math.round(aheadMs)} ms ahead of this server's clock, beyond CLOCK_SKEW_MS (${boundMs} ms): this clock or another server's is off; check NTP`,
      );
    }
  }

  /** Why the server is not ready (a lead beyond the readiness bound in the last minute), or null. */
  notReadyBecause(): string | null {
    if (this.unready === null || this.now() - this.unready.at > UNREADY_HOLD_MS) return null;
    return `a write time read ${Math.round(this.unready.aheadMs)} ms ahead of this server's clock, beyond CLOCK_SKEW_UNREADY_MS (${this.options.unreadyMs} ms): a clock is off`;
  }
}
