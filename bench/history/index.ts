/** The parts of the history benchmark, in the order they run. */
import type { HistoryBench } from './harness.js';
import { registriesBench } from './registries.js';

export const historyBenches: readonly HistoryBench[] = [registriesBench];
