/**
 * The end of every benchmark run: the load average at its end and its length join the
 * results, the table (or, without one, the results) is printed, and both are written to
 * bench/results/<name> (ignored by git; recorded runs are kept as recorded-*.json).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';

export function finishRun(name: string, results: Record<string, unknown>, startedAt: number, rows?: readonly object[]): void {
  results.loadAverageAtEnd = loadavg();
  results.totalSeconds = Math.round((Date.now() - startedAt) / 1000);
  console.log('');
  if (rows) console.table(rows);
  else console.log(JSON.stringify(results, null, 2));
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(`bench/results/${name}`, `${JSON.stringify(rows ? { results, rows } : results, null, 2)}\n`);
  console.log(`\nwrote bench/results/${name} (${results.totalSeconds} s in all)`);
}
