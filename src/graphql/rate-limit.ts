/**
 * Budgets per principal, after GitHub's GraphQL API: each principal (a signed-in user,
 * or the client address of an anonymous request) has `RATE_LIMIT_POINTS` per window of
 * `RATE_LIMIT_WINDOW_S`, and each operation costs its computed query cost (the figure
 * the cost limit computes, at least 1), charged before anything executes. A window
 * starts with the principal's first charge and resets whole at its end. Once a charge
 * is refused the principal is refused until the reset, so a flooder's later requests
 * are answered before anything parses them (`refusal`).
 *
 * Budgets live in the process: N servers behind a balancer give a principal N times
 * the budget (docs/operations.md, "Overload").
 */
import { GraphQLError } from 'graphql';

/** The configured budget: `points` per `windowSeconds`; 0 points turns budgets off. */
export interface RateLimitSettings {
  readonly points: number;
  readonly windowSeconds: number;
}

/** A principal's budget as a client sees it (`Query.rateLimit`, the RateLimit-* headers). */
export interface RateLimitStatus {
  /** Points per window. */
  readonly limit: number;
  /** What this request was charged (0 before the charge). */
  readonly cost: number;
  /** Points left in the current window. */
  readonly remaining: number;
  /** When the window resets, epoch milliseconds. */
  readonly resetAt: number;
}

interface Window {
  readonly startedAt: number;
  used: number;
  /** A charge was refused in this window: every request is, until it resets. */
  refused: boolean;
}

/** Seconds until `at` (epoch ms), rounded up, at least 1: `Retry-After` and `RateLimit-Reset`. */
export function secondsUntil(at: number, now: number): number {
  return Math.max(1, Math.ceil((at - now) / 1000));
}

/** The error of a request over its principal's budget: HTTP 429 with `Retry-After`. */
export function rateLimitedError(status: RateLimitStatus, cost: number, now = Date.now()): GraphQLError {
  const retryAfter = secondsUntil(status.resetAt, now);
  return new GraphQLError(
    `Rate limit exceeded: this request costs ${cost} points and ${status.remaining} of ${status.limit} remain in this window ` +
      `(RATE_LIMIT_POINTS); the budget resets at ${new Date(status.resetAt).toISOString()}, retry after ${retryAfter} s`,
    { extensions: { code: 'RATE_LIMITED', retryAfter, http: { status: 429 } } },
  );
}

/** The budgets of every principal this process has seen in their current window. */
export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  private readonly windowMs: number;
  private lastSweep = 0;

  constructor(
    readonly settings: RateLimitSettings,
    private readonly now: () => number = Date.now,
  ) {
    if (!Number.isInteger(settings.points) || settings.points < 0) throw new RangeError(`points must be a non-negative integer, got ${settings.points}`);
    if (!(settings.windowSeconds > 0)) throw new RangeError(`windowSeconds must be positive, got ${settings.windowSeconds}`);
    this.windowMs = settings.windowSeconds * 1000;
  }

  /** Whether budgets are enforced (`RATE_LIMIT_POINTS` above 0). */
  get enabled(): boolean {
    return this.settings.points > 0;
  }

  /** The principal's budget now, with `cost` as this request's charge. */
  status(principal: string, cost = 0): RateLimitStatus {
    const now = this.now();
    const window = this.current(principal, now);
    return {
      limit: this.settings.points,
      cost,
      remaining: window ? Math.max(0, this.settings.points - window.used) : this.settings.points,
      resetAt: window ? window.startedAt + this.windowMs : now + this.windowMs,
    };
  }

  /**
   * The refusal of a principal already refused in this window, or null: the HTTP
   * handler answers it before reading the request.
   */
  refusal(principal: string): GraphQLError | null {
    if (!this.enabled) return null;
    const window = this.current(principal, this.now());
    return window?.refused ? rateLimitedError(this.status(principal), 0) : null;
  }

  /**
   * Charge `cost` points (at least 1) to the principal, or throw `RATE_LIMITED` when
   * they do not fit in what remains; a refused charge takes nothing. Returns the
   * budget after the charge.
   */
  charge(principal: string, cost: number): RateLimitStatus {
    const points = Math.max(1, Math.ceil(cost));
    if (!this.enabled) return { limit: 0, cost: points, remaining: 0, resetAt: this.now() };
    const now = this.now();
    this.sweep(now);
    let window = this.current(principal, now);
    if (!window) this.windows.set(principal, (window = { startedAt: now, used: 0, refused: false }));
    if (window.refused || window.used + points > this.settings.points) {
      window.refused = true;
      throw rateLimitedError(this.status(principal), points, now);
    }
    window.used += points;
    return this.status(principal, points);
  }

  /** Principals with a live window (for tests and metrics). */
  get tracked(): number {
    return this.windows.size;
  }

  private current(principal: string, now: number): Window | undefined {
    const window = this.windows.get(principal);
    if (window && now >= window.startedAt + this.windowMs) {
      this.windows.delete(principal);
      return undefined;
    }
    return window;
  }

  /** Forget windows that have ended, at most once per window: memory stays bounded by the principals of one window. */
  private sweep(now: number): void {
    if (now - this.lastSweep < this.windowMs) return;
    this.lastSweep = now;
    for (const [principal, window] of this.windows) if (now >= window.startedAt + this.windowMs) this.windows.delete(principal);
  }
}

/**
 * One request's budget: its principal and what it was charged. The cost check charges
 * it once the operation's cost is known (`limits.ts`); `Query.rateLimit` reads it.
 */
export class RequestBudget {
  private charged: RateLimitStatus | null = null;

  constructor(
    private readonly limiter: RateLimiter,
    readonly principal: string,
  ) {}

  /** Charge this request's cost (throws `RATE_LIMITED`, nothing charged, when over budget). */
  charge(cost: number): void {
    this.charged = this.limiter.charge(this.principal, cost);
  }

  /** The budget as this request left it (before any charge: untouched). */
  status(): RateLimitStatus {
    return this.charged ?? this.limiter.status(this.principal);
  }
}

/** A request context that carries its budget (null when budgets are off). */
export interface Budgeted {
  readonly rateLimit: RequestBudget | null;
}
