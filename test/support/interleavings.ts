/**
 * Every interleaving of a few actors' store calls, explored exhaustively: each actor
 * talks to the store through its own `TurnStore`, whose calls wait for their turn; a
 * scheduler lets one call run at a time and, whenever several actors wait, picks one by
 * the next entry of a choice vector. `forEachInterleaving` enumerates the vectors depth
 * first, so every order of the actors' calls is run exactly once.
 */
import type { Store } from '../../src/store/port.js';
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';

/** Lets one store call run at a time, in the order a choice vector says. */
class Scheduler {
  private readonly waiting = new Map<number, () => void>();
  private readonly alive = new Set<number>();
  private busy = false;
  private position = 0;
  /** At each decision, how many actors were waiting. */
  readonly arities: number[] = [];
  /** The calls in the order they ran, for the failure message. */
  readonly trace: string[] = [];

  constructor(
    private readonly choices: readonly number[],
    actors: number,
  ) {
    for (let a = 0; a < actors; a++) this.alive.add(a);
  }

  turn(actor: number, call: StoreCall): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.set(actor, () => {
        this.trace.push(`${actor}:${call.operation} ${call.table}`);
        resolve();
      });
      this.schedule();
    });
  }

  done(): void {
    this.busy = false;
    this.schedule();
  }

  finished(actor: number): void {
    this.alive.delete(actor);
    this.schedule();
  }

  /** Once every live actor waits (after their synchronous work has run), start one call. */
  private schedule(): void {
    setImmediate(() => {
      if (this.busy || this.waiting.size === 0 || this.waiting.size < this.alive.size) return;
      const ready = [...this.waiting.keys()].sort((a, b) => a - b);
      let pick = 0;
      if (ready.length > 1) {
        pick = this.choices[this.position++] ?? 0;
        this.arities.push(ready.length);
      }
      const actor = ready[pick]!;
      const go = this.waiting.get(actor)!;
      this.waiting.delete(actor);
      this.busy = true;
      go();
    });
  }
}

/** The store as one actor sees it: every call waits for its turn. */
class TurnStore extends StoreDecorator {
  constructor(
    inner: Store,
    private readonly scheduler: Scheduler,
    private readonly actor: number,
  ) {
    super(inner);
  }

  protected async around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    await this.scheduler.turn(this.actor, call);
    try {
      return await run();
    } finally {
      this.scheduler.done();
    }
  }
}

/** Actors, each given its own view of the store. */
export type Actor = (store: Store) => Promise<void>;

/**
 * Run `actors` over a fresh world (`setUp`) once per interleaving of their store calls,
 * then `check` the world; returns how many interleavings ran. `check` gets the calls in
 * the order they ran, to name the interleaving in its messages.
 */
export async function forEachInterleaving(
  setUp: () => Promise<Store>,
  actors: readonly Actor[],
  check: (store: Store, trace: readonly string[]) => Promise<void>,
): Promise<number> {
  let runs = 0;
  const stack: number[][] = [[]];
  while (stack.length > 0) {
    const choices = stack.pop()!;
    const store = await setUp();
    const scheduler = new Scheduler(choices, actors.length);
    await Promise.all(
      actors.map(async (actor, i) => {
        try {
          await actor(new TurnStore(store, scheduler, i));
        } finally {
          scheduler.finished(i);
        }
      }),
    );
    await check(store, scheduler.trace);
    runs++;
    // Branch on every decision past the prefix this run was given.
    for (let d = scheduler.arities.length - 1; d >= choices.length; d--) {
      const prefix = [...choices, ...Array<number>(d - choices.length).fill(0)];
      for (let c = 1; c < scheduler.arities[d]!; c++) stack.push([...prefix, c]);
    }
  }
  return runs;
}
