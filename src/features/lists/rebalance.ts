/**
 * Rebalancing a hand-ordered list, so it never runs out of room: when moves have used
 * up the gap next to an item (seed 002's weights only halve), the smallest run of
 * consecutive items around it is spread evenly over the room between the run's outer
 * neighbours (or past the list's end). The rebalance is a ledger transaction of its
 * own: one move per item of the run, appended in one batch to the list's log, so
 * readers apply it as they apply any pending move and stay exact while it is applied.
 *
 * A move computed before a rebalance and appended after it keeps its absolute
 * position; it can only land among the items of the run it falls into, which are
 * neighbours of its target anyway. Cursors are positions: a cursor issued before a
 * rebalance still pages from where its position falls in the list as it is now.
 */
import { DomainError } from '../../errors.js';
import type { Store } from '../../store/port.js';
import { readLedger, type ListItem, type NewListTx } from './ledger.js';
import { spreadBetween, type Position } from './positions.js';

/** How many items on each side a rebalance looks at, at most. */
const MAX_REACH = 4_096;

/**
 * The moves that spread the smallest run of items around `around` far enough apart
 * (an empty list when `around` is not in the list). Reads the list as it stands, with
 * pending transactions applied; widens its window fourfold until a run fits.
 */
export async function planRebalance(store: Store, listId: string, around: ListItem, now: bigint): Promise<NewListTx[]> {
  for (let reach = 8; ; reach *= 4) {
    const read = (direction: 'forward' | 'backward') =>
      readLedger(store, listId, { slice: { from: around, direction, limit: reach + 1 } }).then((v) => v.items);
    const [backward, forward] = await Promise.all([read('backward'), read('forward')]);
    if (forward[0]?.itemId !== around.itemId) return []; // moved or removed meanwhile: nothing to do here
    const items = [...backward.slice(1).reverse(), ...forward];
    const atStart = backward.length < reach + 1;
    const atEnd = forward.length < reach + 1;
    const at = backward.length - 1;
    // Grow the run one item at a time, alternately towards the start and the end.
    let [i, j] = [at, at];
    for (let grow = 0; ; grow++) {
      const lo: Position | undefined = items[i - 1];
      const hi: Position | undefined = items[j + 1];
      const fits = (lo || atStart) && (hi || atEnd);
      const spread = fits ? spreadBetween(lo, hi, j - i + 1, now) : null;
      if (spread) return movesTo(items.slice(i, j + 1), spread);
      const canLower = i > 0;
      const canRaise = j < items.length - 1;
      if (!canLower && !canRaise) break;
      if ((grow % 2 === 0 && canLower) || !canRaise) i--;
      else j++;
      // With the window's first or last item in the run, the room beyond is unknown
      // unless the window reached the list's end there.
      if ((i === 0 && !atStart) || (j === items.length - 1 && !atEnd)) break;
    }
    if ((atStart && atEnd) || reach >= MAX_REACH) {
      throw new DomainError('CONFLICT', 'no room left to rebalance this part of the list; retry shortly');
    }
  }
}

function movesTo(run: readonly ListItem[], spread: readonly Position[]): NewListTx[] {
  const moves: NewListTx[] = [];
  run.forEach((item, k) => {
    const to = spread[k]!;
    if (to.weight !== item.weight || to.seq !== item.seq) {
      moves.push({ kind: 'move', itemId: item.itemId, to, rebalance: true });
    }
  });
  return moves;
}
