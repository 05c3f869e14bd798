/**
 * fast-check arbitraries shared by the simulated-cluster properties: clock offsets,
 * crash points, and operations spread over instances with random start times.
 */
import fc from 'fast-check';
import type { Outcome, SimCluster } from './sim-cluster.js';

/** Clock offsets of 2-3 instances, each within ±1 s of true time. */
export const offsets = fc.array(fc.integer({ min: -1_000, max: 1_000 }), { minLength: 2, maxLength: 3 });

/** How late a held-back batch lands (`SimOptions.lateLandingMs`): from seconds to minutes past its window. */
export const lateLanding = fc.integer({ min: 10_000, max: 300_000 });

/** Optionally, one instance crashing before one of its store calls. */
export const crashPoint = fc.option(fc.record({ instance: fc.nat(2), beforeCall: fc.nat(40) }), { nil: undefined });

/** An operation: which instance runs it, and how many real ms after the start. */
export interface Scheduled {
  readonly instance: number;
  readonly startMs: number;
}

/** Scheduling fields for an operation record. */
export const scheduled = { instance: fc.nat(2), startMs: fc.nat(6) };

/** Arm the crash point, if any. */
export function armCrash(cluster: SimCluster, crash: { instance: number; beforeCall: number } | undefined): void {
  if (crash) cluster.at(crash.instance).store.crashBeforeCall(crash.beforeCall);
}

/** Start every operation at its time on its instance; resolves with every outcome. */
export function runAll<O extends Scheduled, T>(
  cluster: SimCluster,
  ops: readonly O[],
  run: (op: O, instance: ReturnType<SimCluster['at']>) => Promise<Outcome<T>>,
): Promise<Array<Outcome<T>>> {
  return Promise.all(
    ops.map(async (op) => {
      await new Promise((resolve) => setTimeout(resolve, op.startMs));
      return run(op, cluster.at(op.instance));
    }),
  );
}

/** Fixed seeds and run counts keep the properties reproducible in CI. */
export const PROPERTY_RUNS = { seed: 14_2026, numRuns: Number(process.env.SIM_RUNS ?? 15), endOnFailure: process.env.SIM_SHRINK !== "1" } as const;

/**
 * Assert a simulated-cluster property with the fixed seed. With SIM_TALLY=1 it instead
 * runs every generated case and prints how many failed (how often a defect shows), and
 * for each failure its first lines and its case.
 */
export async function assertSim<Ts extends [unknown, ...unknown[]]>(name: string, property: fc.IAsyncPropertyWithHooks<Ts>): Promise<void> {
  if (process.env.SIM_TALLY !== '1') {
    await fc.assert(property, PROPERTY_RUNS);
    return;
  }
  let failed = 0;
  const samples = fc.sample(property, { seed: PROPERTY_RUNS.seed, numRuns: PROPERTY_RUNS.numRuns });
  for (const sample of samples) {
    const outcome = await property.run(sample);
    if (outcome === null) continue;
    failed++;
    const reason = String((outcome as { error?: unknown }).error ?? outcome).split('\n').slice(0, 3).join(' / ');
    console.log(`[tally] ${name} failed: ${reason}\n  case: ${JSON.stringify(sample, (_k, v) => (typeof v === 'bigint' ? String(v) : v))}`);
  }
  console.log(`[tally] ${name}: ${failed} of ${samples.length} runs failed`);
}
