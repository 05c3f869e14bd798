/**
 * A reference model for the paging engine: an ordered source over a plain sorted
 * array of integer keys that tests mutate between pages.
 */
import type { CursorKey, Direction, OrderedSource } from '../../src/paging/types.js';

/** A mutable sorted set of integers exposed as a connection. */
export class ArraySource implements OrderedSource<number> {
  readonly reads: Array<{ from: CursorKey | undefined; direction: Direction; limit: number }> = [];
  private keys: number[];

  constructor(
    keys: Iterable<number>,
    readonly id = 'test:numbers',
  ) {
    this.keys = [...new Set(keys)].sort((a, b) => a - b);
  }

  /** Current contents, in order. */
  get all(): readonly number[] {
    return this.keys;
  }

  insert(k: number): void {
    if (!this.keys.includes(k)) this.keys = [...this.keys, k].sort((a, b) => a - b);
  }

  remove(k: number): void {
    this.keys = this.keys.filter((x) => x !== k);
  }

  async read(from: CursorKey | undefined, direction: Direction, limit: number): Promise<number[]> {
    this.reads.push({ from, direction, limit });
    const f = from?.[0] as number | undefined;
    if (direction === 'forward') return this.keys.filter((k) => f === undefined || k >= f).slice(0, limit);
    return this.keys
      .filter((k) => f === undefined || k <= f)
      .reverse()
      .slice(0, limit);
  }

  keyOf(n: number): CursorKey {
    return [n];
  }

  compare(a: CursorKey, b: CursorKey): number {
    return (a[0] as number) - (b[0] as number);
  }

  isKey(key: CursorKey): boolean {
    return key.length === 1 && Number.isInteger(key[0]);
  }
}
