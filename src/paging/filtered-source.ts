/**
 * An ordered source whose rows may be false positives (seed 004: stale index entries),
 * filtered on read. It reads further until it has the rows asked for or the range
 * ends, so pages stay full and the engine's flags stay exact.
 */
import type { CursorKey, Direction, OrderedSource } from './types.js';

/** Wrap `inner`, keeping only the rows `keep` accepts (one batched check per read). */
export function filteredSource<N>(inner: OrderedSource<N>, keep: (nodes: N[]) => Promise<boolean[]>): OrderedSource<N> {
  return {
    id: inner.id,
    async read(from: CursorKey | undefined, direction: Direction, limit: number): Promise<N[]> {
      const out: N[] = [];
      let start = from;
      let continuing = false;
      while (out.length < limit) {
        // Ask for what is missing, plus the row we continue from (it was already judged).
        const ask = limit - out.length + (continuing ? 1 : 0);
        let batch = await inner.read(start, direction, ask);
        const exhausted = batch.length < ask;
        if (continuing && batch.length > 0 && inner.compare(inner.keyOf(batch[0]!), start!) === 0) batch = batch.slice(1);
        if (batch.length === 0) break;
        const verdicts = await keep(batch);
        batch.forEach((node, i) => verdicts[i] && out.push(node));
        if (exhausted) break;
        start = inner.keyOf(batch[batch.length - 1]!);
        continuing = true;
      }
      return out.slice(0, limit);
    },
    keyOf: (node) => inner.keyOf(node),
    compare: (a, b) => inner.compare(a, b),
    isKey: (key) => inner.isKey(key),
  };
}
