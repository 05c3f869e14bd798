/**
 * Serialises work per key inside one process (for example, sagas on the same user),
 * so two requests in this process never interleave their steps. Across processes the
 * sagas' own claims (insert-if-not-exists) and idempotent steps keep data consistent.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  /** Run `fn` after every earlier holder of `key` has finished. */
  async with<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const current = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => current);
    this.tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
