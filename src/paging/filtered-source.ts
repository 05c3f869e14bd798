/**
 * An ordered source whose rows may be false positives (seed 004: stale index entries),
 * filtered on read. It reads further until it has the rows asked for or the range
 * ends, so pages stay full and the engine's flags stay exact.
 */
import type { CursorKey, Direction, OrderedSource } from './types.js';

/** The most rows one read asks for when few rows pass the filter. */
const MAX_READ = 500;

/**
 * What the check says of each node: `true` keeps it, `false` drops it, and a node keeps
 * it with that node in its place: the same row as the check read it, equal in every
 * field the connection shows and in its key. A check that reads each row's
 * counterpart anyway (a suspension's lookup) hands that object out, so the page holds
 * one object a row rather than two for the rest of the request (issue 39, round four).
 */
export type Verdict<N> = boolean | N;

/**
 * Wrap `inner`, keeping only the rows `keep` accepts (one batched check per read). The
 * first read asks for exactly what is wanted (the usual case: nearly every row passes);
 * when rows are dropped, each further read asks for what is missing divided by the
 * share kept so far (at most MAX_READ rows), so a selective filter costs a few reads,
 * not one per missing row.
 */
export function filteredSource<N>(inner: OrderedSource<N>, keep: (nodes: N[]) => Promise<ReadonlyArray<Verdict<N>>>): OrderedSource<N> {
  return {
    id: inner.id,
    async read(from: CursorKey | undefined, direction: Direction, limit: number, until?: CursorKey): Promise<N[]> {
      const out: N[] = [];
      let start = from;
      let continuing = false;
      let seen = 0;
      while (out.length < limit) {
        // Ask for what is missing (scaled by the share kept so far), plus the row we
        // continue from (it was already judged).
        const missing = limit - out.length;
        const scaled = seen === 0 ? missing : Math.min(MAX_READ, Math.max(missing, Math.ceil((missing * seen) / Math.max(out.length, 1))));
        const ask = scaled + (continuing ? 1 : 0);
        let batch = await inner.read(start, direction, ask, until);
        const exhausted = batch.length < ask;
        if (continuing && batch.length > 0 && inner.compare(inner.keyOf(batch[0]!), start!) === 0) batch = batch.slice(1);
        if (batch.length === 0) break;
        const verdicts = await keep(batch);
        for (let i = 0; i < batch.length; i++) {
          const verdict = verdicts[i];
          if (verdict === true) out.push(batch[i]!);
          else if (verdict !== false && verdict !== undefined) out.push(verdict);
        }
        seen += batch.length;
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
