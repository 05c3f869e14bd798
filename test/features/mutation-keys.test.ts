/**
 * Idempotency keys across processes, on every store: a key whose attempt was left by a
 * process that died (or that outlived any request) is taken over by one retry and redone
 * on the first attempt's plan; a running attempt of a live process is never run a second
 * time; however many retries race on one key, across two processes, the mutation runs
 * once per attempt that could not finish, and every answer is the one recorded.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProcessIdentity } from '../../src/background/presence.js';
import { OutcomeUnknownError } from '../../src/errors.js';
import { idempotencyTables } from '../../src/features/idempotency/idempotency-tables.js';
import { MutationKeys, decodeResult, encodeResult, scopeOf, type MutationKeysDeps } from '../../src/features/idempotency/mutation-keys.js';
import { mutationKeysTable } from '../../src/features/idempotency/idempotency-tables.js';
import type { IdPlan } from '../../src/store/id-source.js';
import { RequestIds } from '../../src/store/id-source.js';
import type { Store } from '../../src/store/port.js';
import { FaultyStore } from '../support/faulty-store.js';
import { describeEachStore, StorePool } from '../support/stores.js';

const A: ProcessIdentity = { processId: '00000000-0000-4000-8000-00000000000a', node: 1, instance: 'a:4000' };
const B: ProcessIdentity = { processId: '00000000-0000-4000-8000-00000000000b', node: 2, instance: 'b:4000' };

function keysOf(owner: ProcessIdentity, overrides: Partial<MutationKeysDeps> = {}): MutationKeys {
  return new MutationKeys({ owner, isAlive: async () => true, retentionSeconds: 3_600, attemptLifetimeMs: 60_000, waitMs: 2_000, ...overrides });
}

const scope = (key: string) => ({ viewer: 'alice', field: 'createPost', key });

describe('payloads kept under a key', () => {
  it('come back with their dates and bigints', () => {
    const payload = { post: { postId: 'p', createdAt: new Date('2026-11-27T02:00:00.123Z'), seq: 2n ** 70n }, counted: true, clientMutationId: null };
    expect(decodeResult(encodeResult(payload))).toEqual(payload);
  });
});

describe('plans', () => {
  it('draw the same ids in the same order every time, and fresh ones without a plan', async () => {
    const plan: IdPlan = { seed: Buffer.alloc(16, 7), at: Date.parse('2026-11-27T02:00:00Z'), redo: false };
    const draw = (ids: RequestIds) => [ids.uuid(), ids.timeuuid(), ids.now().toISOString(), ids.bytes(8).toString('hex'), String(ids.plannedMicros(0n))];
    const ids1 = new RequestIds();
    const once = await ids1.withPlan(plan, async () => draw(ids1));
    const ids2 = new RequestIds();
    const again = await ids2.withPlan({ ...plan, redo: true }, async () => draw(ids2));
    expect(again).toEqual(once);
    expect(once[2]).toBe('2026-11-27T02:00:00.000Z');
    expect(new RequestIds().uuid()).not.toBe(new RequestIds().uuid());
  });
});

describeEachStore('idempotency keys across processes', (target) => {
  const pool = new StorePool(target);
  afterEach(() => pool.disposeAll());

  async function aStore(): Promise<Store> {
    const { store } = await pool.create();
    await store.ensureTables(idempotencyTables);
    return store;
  }

  it('lets a retry on another server redo, on the same plan, an attempt whose server died mid-mutation', async () => {
    const faulty = new FaultyStore(await aStore());
    const plans: IdPlan[] = [];
    // Process A claims the key, runs, and dies before it can record anything.
    const dying = keysOf(A).run(faulty, scope('k1'), 'digest', async (plan) => {
      plans.push(plan);
      faulty.crashAtCall(0);
      throw new Error('process killed');
    });
    await expect(dying).rejects.toThrow('process killed');
    faulty.heal();
    // B finds A gone, takes over, and redoes with A's plan.
    const b = keysOf(B, { isAlive: async (owner) => owner.processId !== A.processId });
    const redone = await b.run(faulty, scope('k1'), 'digest', async (plan) => {
      plans.push(plan);
      return { post: plan.seed.toString('hex') };
    });
    expect(plans).toHaveLength(2);
    expect(plans[1]).toEqual({ ...plans[0], redo: true });
    expect(redone).toEqual({ post: plans[0]!.seed.toString('hex') });
    // Every later retry, on either server, gets that payload without running anything.
    const never = async (): Promise<never> => {
      throw new Error('ran again');
    };
    expect(await keysOf(A).run(faulty, scope('k1'), 'digest', never)).toEqual(redone);
    expect(await b.run(faulty, scope('k1'), 'digest', never)).toEqual(redone);
  });

  it('answers OUTCOME_UNKNOWN, running nothing, while another live server still runs the first attempt', async () => {
    const store = await aStore();
    let release!: () => void;
    const first = keysOf(A).run(store, scope('k2'), 'digest', () => new Promise<string>((resolve) => (release = () => resolve('first'))));
    await new Promise((resolve) => setTimeout(resolve, 50));
    let ran = false;
    const retry = keysOf(B, { waitMs: 200 }).run(store, scope('k2'), 'digest', async () => {
      ran = true;
      return 'second';
    });
    await expect(retry).rejects.toBeInstanceOf(OutcomeUnknownError);
    release();
    expect(await first).toBe('first');
    expect(await keysOf(B).run(store, scope('k2'), 'digest', async () => 'third')).toBe('first');
    expect(ran).toBe(false);
  });

  it('takes over an attempt older than any request could run, even while its server lives', async () => {
    const faulty = new FaultyStore(await aStore());
    const stuck = keysOf(A).run(faulty, scope('k3'), 'digest', async () => {
      faulty.crashAtCall(0);
      throw new Error('answer never recorded');
    });
    await expect(stuck).rejects.toThrow();
    faulty.heal();
    await new Promise((resolve) => setTimeout(resolve, 60));
    const b = keysOf(B, { attemptLifetimeMs: 50 });
    expect(await b.run(faulty, scope('k3'), 'digest', async (plan) => plan.redo)).toBe(true);
  });

  it('treats a key whose claim expired, leaving only a later row behind, as new: it runs, and never answers the old payload', async () => {
    const store = await aStore();
    // What outlives a claim by a moment: a payload written a second after the claim, with the same TTL.
    await store.upsert(mutationKeysTable, { scope: scopeOf(scope('k4')), attempt: 0, result: encodeResult('stale') });
    await store.upsert(mutationKeysTable, { scope: scopeOf(scope('k4')), attempt: 1, ended: true });
    expect(await keysOf(A).run(store, scope('k4'), 'digest', async () => 'fresh')).toBe('fresh');
    expect(await keysOf(B).run(store, scope('k4'), 'digest', async () => 'again')).toBe('fresh');
    await expect(keysOf(B).run(store, scope('k4'), 'another input', async () => 'other')).rejects.toMatchObject({ code: 'BAD_USER_INPUT', argument: 'clientMutationId' });
  });

  it('runs a key once, then only redoes it on its plan, however many retries race on two servers', async () => {
    const store = await aStore();
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ server: fc.constantFrom(A, B), fails: fc.boolean(), delayMs: fc.integer({ min: 0, max: 5 }) }), { minLength: 2, maxLength: 6 }),
        fc.string({ minLength: 1, maxLength: 8 }),
        async (requests, key) => {
          const servers = new Map([A, B].map((p) => [p.processId, keysOf(p, { waitMs: 5_000 })]));
          const runs: Array<{ plan: IdPlan; ok: boolean }> = [];
          const k = scope(`${key}-${Math.random()}`);
          const answers = await Promise.all(
            requests.map(async (r) => {
              await new Promise((resolve) => setTimeout(resolve, r.delayMs));
              return servers
                .get(r.server.processId)!
                .run(store, k, 'digest', async (plan) => {
                  runs.push({ plan, ok: !r.fails });
                  if (r.fails) throw new OutcomeUnknownError('write outcome unknown');
                  return `done:${plan.seed.toString('hex')}`;
                })
                .then(
                  (value) => ({ value }),
                  (err: Error) => ({ error: err.name }),
                );
            }),
          );
          // One plan for every attempt: a redo makes the first attempt's ids again.
          expect(new Set(runs.map((r) => r.plan.seed.toString('hex'))).size).toBe(1);
          // The first run is the claim's; every later one is a redo of it (after an attempt
          // that failed, or one whose payload could not be recorded: a store that timed out).
          expect(runs.map((r) => r.plan.redo)).toEqual(runs.map((_, i) => i > 0));
          // Every success answers the same payload.
          const values = answers.flatMap((a) => ('value' in a ? [a.value] : []));
          expect(new Set(values).size).toBeLessThanOrEqual(1);
          // Each attempt is one request's: never more runs than requests.
          expect(runs.length).toBeLessThanOrEqual(requests.length);
        },
      ),
      { numRuns: target.name === 'SQLite' ? 30 : 8 },
    );
  });
});
