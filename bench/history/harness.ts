/**
 * The "stays fast as history grows" benchmarks (issue 15): each figure is measured
 * fresh and again after history has piled up, and its target is at most 1.5 times the
 * fresh figure. Each part (store, lists, registries) exports a `HistoryBench`; the
 * runner (`bench/history.ts`, `npm run bench:history`) runs them all and prints and
 * records every figure with its target.
 */

/** One measurement: fresh, then after each amount of history. */
export interface HistoryFigure {
  /** What is measured, e.g. "time per list move". */
  readonly measure: string;
  /** "µs", "ms" or "round trips". */
  readonly unit: string;
  /** The fresh figure, with what "fresh" means (e.g. "0 moves"). */
  readonly fresh: { readonly label: string; readonly value: number };
  /** The same figure after history has grown (e.g. "1,000 moves", "10,000 moves"). */
  readonly grown: ReadonlyArray<{ readonly label: string; readonly value: number }>;
}

/** A part of the history benchmark. `progress` prints a line while it runs. */
export interface HistoryBench {
  readonly name: string;
  run(progress: (message: string) => void): Promise<HistoryFigure[]>;
}

/** The target of every grown figure: at most this many times the fresh one. */
export const HISTORY_TARGET_RATIO = 1.5;

/** Whether a grown value meets its target against the fresh one. */
export function meetsTarget(fresh: number, grown: number): boolean {
  return grown <= fresh * HISTORY_TARGET_RATIO;
}

/**
 * The median of `rounds` timings of `op` in microseconds per call, each round timing
 * `calls` calls after `warmup` untimed ones (a median of rounds, not one long run, so a
 * stray pause does not decide the figure).
 */
export async function medianMicrosPerCall(
  op: (i: number) => Promise<unknown>,
  options: { calls: number; rounds?: number; warmup?: number },
): Promise<number> {
  const rounds = options.rounds ?? 5;
  let i = 0;
  for (let w = 0; w < (options.warmup ?? Math.min(50, options.calls)); w++) await op(i++);
  const perCall: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const start = process.hrtime.bigint();
    for (let c = 0; c < options.calls; c++) await op(i++);
    perCall.push(Number(process.hrtime.bigint() - start) / 1000 / options.calls);
  }
  perCall.sort((a, b) => a - b);
  return perCall[Math.floor(perCall.length / 2)]!;
}
