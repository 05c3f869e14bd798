/**
 * A request's deadline for the store: once it has passed, no new store call starts
 * (calls already running finish). `REQUEST_TIMEOUT_MS` thereby bounds what a request
 * does, not only how long the server waits for it. The request's `CountingStore`
 * enforces it, so a request's store calls pass one wrapper, not two. The same wrapper
 * stops a request whose client has gone (its `AbortSignal`): `RequestAbortedError`.
 */

/** When a request's store calls must stop. */
export interface RequestDeadline {
  /** Epoch milliseconds after which no call starts. */
  readonly at: number;
  /** The configured timeout, for the message. */
  readonly timeoutMs: number;
}

/** Raised instead of a store call made after the deadline. */
export class DeadlineExceededError extends Error {
  override readonly name = 'DeadlineExceededError';
  constructor(readonly timeoutMs: number) {
    super(`the request took longer than ${timeoutMs} ms (REQUEST_TIMEOUT_MS) and was stopped; no further reads or writes were started`);
  }
}

/** Raised instead of a store call made after the request's client went away (its signal aborted). */
export class RequestAbortedError extends Error {
  override readonly name = 'RequestAbortedError';
  constructor() {
    super('the client closed the connection; the request was stopped and no further reads or writes were started');
  }
}

/** Throw `RequestAbortedError` when `signal` has aborted: a loader or the paging engine asks before each read. */
export function stopIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new RequestAbortedError();
}
