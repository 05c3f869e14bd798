/**
 * Idempotency keys: a mutation given a `clientMutationId` takes effect once, however
 * often and on whichever servers it is retried, for `IDEMPOTENCY_RETENTION_S`.
 *
 * - The first attempt claims the key with an insert-if-not-exists (one Paxos round),
 *   recording the input's fingerprint and a plan: a random seed and an instant from
 *   which the mutation draws every id and "now" (store/id-source.ts). When it finishes,
 *   it writes its payload beside the claim.
 * - A retry finds the claim. A different input is BAD_USER_INPUT naming
 *   `clientMutationId`. A recorded payload is answered as it is: the same ids, nothing
 *   written. An attempt still running is waited for (a little), then answered
 *   OUTCOME_UNKNOWN ("retry with the same clientMutationId").
 * - An attempt that ended without a payload (its write's outcome unknown, a store that
 *   failed), that outlived every request, or whose process died is taken over: the next
 *   attempt number is claimed by insert-if-not-exists (so one retry takes over, never
 *   two), and the mutation runs again on the same plan. It makes the same ids and writes
 *   the same rows as the attempt before, so whatever of that attempt landed, or lands
 *   later, is the same write, not a second one (docs/how-it-works.md, "Idempotent
 *   mutations").
 * - A refusal (bad input, forbidden, not found) of a first attempt wrote nothing: the
 *   claim is removed (a conditional delete), and the key may be used again.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { ProcessIdentity } from '../../background/presence.js';
import { DomainError, OutcomeUnknownError, badInput } from '../../errors.js';
import type { IdPlan, RequestIds } from '../../store/id-source.js';
import type { Store } from '../../store/port.js';
import type { Row } from '../../store/table.js';
import { mutationKeysTable } from './idempotency-tables.js';

/** Who may take over an attempt: what the key service knows of processes. */
export interface MutationKeysDeps {
  /** This process, the owner of the attempts it claims. */
  readonly owner: ProcessIdentity;
  /** Whether a process is alive (its presence row); this process's own attempts are known in memory. */
  readonly isAlive: (owner: ProcessIdentity) => Promise<boolean>;
  /** How long a key is kept, in seconds (`IDEMPOTENCY_RETENTION_S`). */
  readonly retentionSeconds: number;
  /**
   * After how long a running attempt is certainly over, in ms: the request's time limit
   * plus the late-write window (REQUEST_TIMEOUT_MS + CLOCK_SKEW_MS + STORE_WRITE_TIMEOUT_MS).
   */
  readonly attemptLifetimeMs: number;
  /** How long a retry waits for an attempt running elsewhere before answering OUTCOME_UNKNOWN, in ms. */
  readonly waitMs: number;
}

/** What a key is scoped to: the viewer and the mutation field. */
export interface KeyScope {
  readonly viewer: string;
  readonly field: string;
  readonly key: string;
}

/** The message of a retry that arrives while the first attempt still runs. */
export const STILL_RUNNING_MESSAGE =
  'An earlier request with this clientMutationId is still running; retry with the same clientMutationId to get its result';

/** The partition of a key: a hash, so any `clientMutationId` (of any length) fits. */
export function scopeOf(scope: KeyScope): string {
  return createHash('sha256').update(`${scope.viewer}\u0000${scope.field}\u0000${scope.key}`).digest('base64url');
}

/** Runs mutations under their idempotency keys; one per process. */
export class MutationKeys {
  /** This process's running attempts, by scope: a local retry waits on them. */
  private readonly running = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: MutationKeysDeps) {}

  /**
   * Run `execute` once for `scope` and `fingerprint` (a digest of the input): its result
   * on the first attempt, the recorded result on every retry. `execute` must draw its ids
   * and its "now" from the plan it is given, and its result must survive `encodeResult`.
   */
  async run<T>(store: Store, scope: KeyScope, fingerprint: string, execute: (plan: IdPlan) => Promise<T>): Promise<T> {
    const id = scopeOf(scope);
    const waitUntil = Date.now() + this.deps.waitMs;
    // The common case first: a new key, claimed in one round trip.
    let claimAt: number | null = 0;
    for (;;) {
      if (claimAt !== null) {
        const claimed = await this.claim(store, id, claimAt, fingerprint, execute);
        if (claimed) return claimed.run;
      }
      const rows = await store.slice(mutationKeysTable, { partition: { scope: id }, limit: 10_000 });
      // The key's first claim: the one with a fingerprint. Rows below it are left over from
      // an earlier use of the key (an attempt that outlived its claim's TTL by a moment).
      const firstIndex = rows.findIndex((r) => r.fingerprint !== null);
      if (firstIndex < 0) {
        // Removed meanwhile (a refused first attempt) or expired: claim it afresh, above
        // whatever is left over.
        claimAt = rows.length === 0 ? 0 : (rows[rows.length - 1]!.attempt as number) + 1;
        continue;
      }
      claimAt = null;
      const first = rows[firstIndex]!;
      if (first.fingerprint !== fingerprint) {
        throw badInput(
          'clientMutationId',
          `\`clientMutationId\` "${truncate(scope.key)}" was already used for ${scope.field} with a different input; use a new clientMutationId for a new input`,
        );
      }
      const attempts = rows.slice(firstIndex);
      const done = attempts.find((r) => typeof r.result === 'string');
      if (done) return decodeResult(done.result as string) as T;
      const last = attempts[attempts.length - 1]!;
      if (await this.isOver(id, last)) {
        const next = (last.attempt as number) + 1;
        const plan: IdPlan = { seed: Buffer.from(first.seed as string, 'hex'), at: (first.planned_at as Date).getTime(), redo: true };
        const takeover = await store.insertIfNotExists(
          mutationKeysTable,
          { scope: id, attempt: next, started_at: new Date(), ...this.ownerColumns() },
          { ttl: this.ttlFrom(plan.at) },
        );
        if (takeover.applied) return this.attempt(store, id, next, plan, false, execute);
        continue; // another retry took over first: wait for it
      }
      const local = this.running.get(id);
      if (local) {
        await local.catch(() => undefined);
        continue;
      }
      if (Date.now() >= waitUntil) throw new OutcomeUnknownError(STILL_RUNNING_MESSAGE);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Claim the key as attempt `attempt` with a fresh plan, and run it; null when the key is taken. */
  private async claim<T>(
    store: Store,
    id: string,
    attempt: number,
    fingerprint: string,
    execute: (plan: IdPlan) => Promise<T>,
  ): Promise<{ readonly run: Promise<T> } | null> {
    const at = Date.now();
    const seed = randomBytes(16);
    const claim = await store.insertIfNotExists(
      mutationKeysTable,
      { scope: id, attempt, fingerprint, seed: seed.toString('hex'), planned_at: new Date(at), started_at: new Date(at), ...this.ownerColumns() },
      { ttl: this.deps.retentionSeconds },
    );
    return claim.applied ? { run: this.attempt(store, id, attempt, { seed, at, redo: false }, true, execute) } : null;
  }

  /**
   * One attempt, owned by this process: run, then record the payload or that it ended.
   * `first`: the attempt that claimed the key, which a refusal frees again.
   */
  private attempt<T>(store: Store, id: string, attempt: number, plan: IdPlan, first: boolean, execute: (plan: IdPlan) => Promise<T>): Promise<T> {
    const key = { scope: id, attempt };
    const run = (async () => {
      let result: T;
      try {
        result = await execute(plan);
      } catch (err) {
        // A first attempt refused wrote nothing: free the key (only our own claim).
        // Anything else may have written: mark the attempt over, for a retry to redo.
        const refused = err instanceof DomainError && first;
        const released = refused && (await store.deleteIf(mutationKeysTable, key, { owner_process: this.deps.owner.processId }).catch(() => false));
        if (!released) await store.upsert(mutationKeysTable, { ...key, ended: true }, { ttl: this.ttlFrom(plan.at) }).catch(() => undefined);
        throw err;
      }
      // The mutation took effect; a payload not recorded only makes a retry redo it (the
      // same writes again, on the same plan) once this attempt is over.
      await store.upsert(mutationKeysTable, { ...key, result: encodeResult(result) }, { ttl: this.ttlFrom(plan.at) }).catch(() => undefined);
      return result;
    })();
    this.running.set(id, run);
    void run.catch(() => undefined).finally(() => this.running.delete(id));
    return run;
  }

  /** What is left of the key's retention, in seconds, so every row of a key expires with its first claim. */
  private ttlFrom(plannedAt: number): number {
    return Math.max(1, this.deps.retentionSeconds - Math.floor((Date.now() - plannedAt) / 1000));
  }

  /** Whether the attempt `row` can no longer finish: ended, too old, or its process is gone. */
  private async isOver(id: string, row: Row): Promise<boolean> {
    if (row.ended === true) return true;
    const started = row.started_at as Date | null;
    if (started === null || Date.now() - started.getTime() > this.deps.attemptLifetimeMs) return true;
    const owner: ProcessIdentity = {
      processId: row.owner_process as string,
      node: row.owner_node as number,
      instance: row.owner_instance as string,
    };
    if (owner.processId === this.deps.owner.processId) return !this.running.has(id);
    return !(await this.deps.isAlive(owner));
  }

  private ownerColumns(): Row {
    const { processId, node, instance } = this.deps.owner;
    return { owner_process: processId, owner_node: node, owner_instance: instance };
  }
}

function truncate(text: string): string {
  return text.length > 64 ? `${text.slice(0, 64)}…` : text;
}

/**
 * A payload as text: JSON, with dates and bigints tagged so that `decodeResult` gives
 * back the same values (a payload's objects are plain data: rows the features read).
 */
export function encodeResult(value: unknown): string {
  return JSON.stringify(value, function (this: Record<string, unknown>, key, v: unknown) {
    const raw = this[key];
    if (raw instanceof Date) return { $date: raw.getTime() };
    if (typeof raw === 'bigint') return { $bigint: raw.toString() };
    return v;
  });
}

/** The payload `encodeResult` wrote. */
export function decodeResult(text: string): unknown {
  return JSON.parse(text, (_key, v: unknown) => {
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o);
      if (keys.length === 1 && typeof o.$date === 'number') return new Date(o.$date);
      if (keys.length === 1 && typeof o.$bigint === 'string') return BigInt(o.$bigint);
    }
    return v;
  });
}

/** The key service as one request sees it: its store view, and its id source for the plan. */
export interface RequestKeys {
  /** Run `body` under the key `scope` (see `MutationKeys.run`), its ids drawn from the key's plan. */
  run<T>(scope: KeyScope, fingerprint: string, body: () => Promise<T>): Promise<T>;
  /** True while a redo runs: an attempt taking over from one whose outcome is unknown. */
  readonly redo: boolean;
}

/** `keys` bound to a request's store view and id source. */
export function requestKeys(keys: MutationKeys, store: Store, ids: RequestIds): RequestKeys {
  return {
    run: (scope, fingerprint, body) => keys.run(store, scope, fingerprint, (plan) => ids.withPlan(plan, body)),
    get redo() {
      return ids.redo;
    },
  };
}
