/** The parts of the history benchmark, in the order they run. */
import type { HistoryBench } from './harness.js';
import { listsBench } from './lists.js';

export const historyBenches: readonly HistoryBench[] = [listsBench];
