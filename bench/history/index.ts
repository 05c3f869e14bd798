/** The parts of the history benchmark, in the order they run. */
import type { HistoryBench } from './harness.js';
import { listsBench } from './lists.js';
import { registriesBench } from './registries.js';
import { storeHistoryBench } from './store.js';

export const historyBenches: readonly HistoryBench[] = [storeHistoryBench, listsBench, registriesBench];
