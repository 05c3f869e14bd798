/**
 * Ordered lists as their history grows (issue 15): the time of a move and of a list's
 * first page, on one list of 100 items in the embedded store, fresh and after 1,000 and
 * 10,000 moves. Every move is "the last item to second place", the move that uses up
 * one gap fastest, so the history includes the rebalances it forces; each is applied
 * at once (as a woken applier does) and the timer pass runs every 500 moves (as the
 * server's timer does), so the log and the queue are cut as in production.
 */
import { ListApplier } from '../../src/features/lists/applier.js';
import { listTables } from '../../src/features/lists/lists-tables.js';
import type { Lists } from '../../src/features/lists/lists.js';
import { memorySqliteStore } from '../../test/support/stores.js';
import { featuresOver } from '../../test/support/suspension-fixture.js';
import { medianMicrosPerCall, type HistoryBench, type HistoryFigure } from './harness.js';

const ITEMS = 100;
const STAGES = [0, 1_000, 10_000];
const TIMER_EVERY = 500;

/** One list and the moves made on it so far. */
class MovingList {
  moves = 0;
  private constructor(
    private readonly lists: Lists,
    private readonly applier: ListApplier,
    readonly listId: string,
    private readonly order: string[],
  ) {}

  static async create(): Promise<MovingList> {
    const store = memorySqliteStore();
    await store.ensureTables(listTables);
    const { lists } = featuresOver(store);
    const applier = new ListApplier(store);
    const { listId } = await lists.create('bench', '00000000-0000-4000-8000-000000000001');
    const order: string[] = [];
    for (let i = 0; i < ITEMS; i++) order.push((await lists.add(listId, `item ${i}`)).itemId);
    await applier.drain(listId);
    return new MovingList(lists, applier, listId, order);
  }

  /** Move the last item to second place and apply it. */
  async move(): Promise<void> {
    const last = this.order.pop()!;
    await this.lists.move(this.listId, last, { afterItemId: this.order[0]! });
    this.order.splice(1, 0, last);
    await this.applier.drain(this.listId);
    if (++this.moves % TIMER_EVERY === 0) await this.applier.runOnce();
  }

  async firstPage(): Promise<void> {
    const page = await this.lists.items(this.listId, { first: 20 });
    if (page.edges.length !== 20) throw new Error(`a first page of 20 items, got ${page.edges.length}`);
  }
}

export const listsBench: HistoryBench = {
  name: 'lists',
  async run(progress) {
    // Warm the code up on a list of its own, so the fresh figure is not the JIT's.
    const warm = await MovingList.create();
    for (let i = 0; i < 300; i++) await warm.move().then(() => warm.firstPage());
    const list = await MovingList.create();
    const moveTimes: Array<{ label: string; value: number }> = [];
    const readTimes: Array<{ label: string; value: number }> = [];
    for (const stage of STAGES) {
      // The history: moves up to the stage (the measured moves of earlier stages count).
      while (list.moves < stage) await list.move();
      const label = stage === 0 ? '0 moves' : `${stage.toLocaleString('en')} moves`;
      progress(`measuring after ${list.moves.toLocaleString('en')} moves`);
      moveTimes.push({ label, value: await medianMicrosPerCall(() => list.move(), { calls: 100, rounds: 5, warmup: 20 }) });
      readTimes.push({ label, value: await medianMicrosPerCall(() => list.firstPage(), { calls: 200, rounds: 5 }) });
    }
    const figure = (measure: string, values: typeof moveTimes): HistoryFigure => ({
      measure,
      unit: 'µs',
      fresh: values[0]!,
      grown: values.slice(1),
    });
    return [
      figure('time per list move (append, then applied), last item to second place', moveTimes),
      figure('time per first-page list read (first: 20)', readTimes),
    ];
  },
};
