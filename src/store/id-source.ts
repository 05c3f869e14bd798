/**
 * Where a request's new ids and its "now" come from. Normally fresh: random uuids,
 * timeuuids of the clock, the wall time. A mutation retried under its idempotency key
 * (`clientMutationId`) runs on a plan instead: every id and time it draws is derived
 * from the key's claim (a random seed and an instant, drawn once, when the key was first
 * claimed), in the order it draws them. A redo after a crash or an unknown outcome then
 * makes the same ids and writes the same rows as the first attempt did: its writes are
 * the first attempt's writes again (upserts of the same cells), not a second effect.
 *
 * One per request: GraphQL runs the fields of a mutation one after another, so a plan
 * set for one field never leaks into another. Write timestamps (`USING TIMESTAMP`) are
 * not ids and stay the clock's.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { newTimeuuid, timeuuidOfMicros } from './timeuuid.js';

/** What a mutation's plan is made from: drawn once, when its key is first claimed. */
export interface IdPlan {
  /** 16 random bytes: every id of the plan derives from them. */
  readonly seed: Buffer;
  /** The instant the key was claimed (ms since the epoch): the plan's "now". */
  readonly at: number;
  /** True for a redo: an attempt taking over from one whose outcome is unknown. */
  readonly redo: boolean;
}

/** The ids and times a feature draws; fresh, or from the running mutation's plan. */
export interface IdSource {
  /** A new random (version 4) uuid. */
  uuid(): string;
  /** A new timeuuid of now. */
  timeuuid(): string;
  /** The current time (the plan's instant under a plan). */
  now(): Date;
  /** `n` (at most 32) random bytes. */
  bytes(n: number): Buffer;
  /** Under a plan, microseconds for a change id above `after` (µs) when given; null without a plan. */
  plannedMicros(after?: bigint): bigint | null;
  /** True while a redo of a mutation runs (see `IdPlan.redo`). */
  readonly redo: boolean;
}

/** A request's id source: fresh ids, or a plan's while `withPlan` runs. */
export class RequestIds implements IdSource {
  private plan: IdPlan | null = null;
  private drawn = 0;

  /** Run `body` with every id and time drawn from `plan`, in order; fresh ones again after. */
  async withPlan<T>(plan: IdPlan, body: () => Promise<T>): Promise<T> {
    this.plan = plan;
    this.drawn = 0;
    try {
      return await body();
    } finally {
      this.plan = null;
    }
  }

  get redo(): boolean {
    return this.plan?.redo ?? false;
  }

  uuid(): string {
    if (!this.plan) return randomUUID();
    const b = this.bytes(16);
    b[6] = (b[6]! & 0x0f) | 0x40;
    b[8] = (b[8]! & 0x3f) | 0x80;
    const h = b.toString('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  timeuuid(): string {
    if (!this.plan) return newTimeuuid();
    return timeuuidOfMicros(this.plannedMicros()!, (n) => this.bytes(n));
  }

  now(): Date {
    return new Date(this.plan ? this.plan.at : Date.now());
  }

  bytes(n: number): Buffer {
    if (!this.plan) return randomBytes(n);
    if (n > 32) throw new Error(`a plan draws at most 32 bytes at a time, asked for ${n}`);
    // The i-th draw of the plan: HMAC(seed, i), the same on every server and every attempt.
    return createHmac('sha256', this.plan.seed).update(String(this.drawn++)).digest().subarray(0, n);
  }

  plannedMicros(after?: bigint): bigint | null {
    if (!this.plan) return null;
    // The plan's instant, a microsecond further per draw, so one mutation's ids keep
    // their order; above `after` when the caller needs it (a deletion's change).
    const t = BigInt(this.plan.at) * 1000n + BigInt(this.drawn++);
    return after !== undefined && t <= after ? after + 1n + BigInt(this.drawn) : t;
  }
}

/** The id source of work with no plan (seeding, background jobs): always fresh. */
export const FRESH_IDS: IdSource = new RequestIds();
