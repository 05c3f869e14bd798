/** The parts of the history benchmark, in the order they run. */
import type { HistoryBench } from './harness.js';
import { listsBench } from './lists.js';
import { registriesBench } from './registries.js';

export const historyBenches: readonly HistoryBench[] = [listsBench, registriesBench];
