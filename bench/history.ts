/**
 * `npm run bench:history`: every "stays fast as history grows" figure (issue 15), fresh
 * and grown, against its target (at most 1.5 times fresh). Writes
 * bench/results/history-latest.json; exits 1 when a target is missed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { HISTORY_TARGET_RATIO, meetsTarget, type HistoryBench, type HistoryFigure } from './history/harness.js';
import { historyBenches } from './history/index.js';

const only = process.argv[2];
const results: Array<{ bench: string; figures: HistoryFigure[] }> = [];
let missed = 0;
for (const bench of historyBenches as readonly HistoryBench[]) {
  if (only && bench.name !== only) continue;
  const figures = await bench.run((m) => console.error(`[${bench.name}] ${m}`));
  results.push({ bench: bench.name, figures });
  for (const f of figures) {
    console.log(`${f.measure}: ${f.fresh.value.toFixed(1)} ${f.unit} (${f.fresh.label})`);
    for (const g of f.grown) {
      const ok = meetsTarget(f.fresh.value, g.value);
      if (!ok) missed++;
      console.log(
        `  ${g.label}: ${g.value.toFixed(1)} ${f.unit}, ${(g.value / f.fresh.value).toFixed(2)}x fresh ` +
          `(target <= ${HISTORY_TARGET_RATIO}x) ${ok ? 'met' : 'MISSED'}`,
      );
    }
  }
}
const dir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(dir, { recursive: true });
writeFileSync(`${dir}history-latest.json`, JSON.stringify({ at: new Date().toISOString(), results }, null, 2));
process.exit(missed > 0 ? 1 : 0);
