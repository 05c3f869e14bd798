/**
 * A request's view of the store that stops at the request's deadline: once it has
 * passed, no new call starts (calls already running finish). `REQUEST_TIMEOUT_MS`
 * thereby bounds what a request does, not only how long the server waits for it.
 */
import { StoreDecorator, type StoreCall } from './store-decorator.js';
import type { Store } from './port.js';

/** Raised instead of a store call made after the deadline. */
export class DeadlineExceededError extends Error {
  override readonly name = 'DeadlineExceededError';
  constructor(readonly timeoutMs: number) {
    super(`the request took longer than ${timeoutMs} ms (REQUEST_TIMEOUT_MS) and was stopped; no further reads or writes were started`);
  }
}

/** Refuses every call that would start after `deadline` (epoch milliseconds). */
export class DeadlineStore extends StoreDecorator {
  constructor(
    inner: Store,
    private readonly deadline: number,
    private readonly timeoutMs: number,
  ) {
    super(inner);
  }

  protected around<T>(_call: StoreCall, run: () => Promise<T>): Promise<T> {
    if (Date.now() >= this.deadline) return Promise.reject(new DeadlineExceededError(this.timeoutMs));
    return run();
  }
}
