/**
 * Statement accounting: how many statements a store call sent (a Cassandra `getMany`
 * of 20 keys is one round trip and 20 statements; every page of a paged read is one).
 *
 * A `CountingStore` makes its tally active while it starts a call; an adapter takes the
 * active tally at the start of each call, before its first await, and counts into it
 * every statement that call sends. The tally travels synchronously rather than through
 * AsyncLocalStorage, which would tax every promise of the process (measured: twice the
 * time per await on Node 20).
 */

/**
 * A running count of the statements sent for one request, or for one call (a
 * `StoreObserver`'s per-call tally, whose `parent` is the request's). An adapter also
 * notes here what only it can see of a call: a lightweight transaction whose outcome
 * was unknown, and the server's warnings about tombstones.
 */
export interface StatementTally {
  statements: number;
  /** The enclosing tally (the request's), counted into as well. */
  readonly parent?: StatementTally;
  /** A lightweight transaction's outcome was unknown, then learned by a serial read (`settled`) or not (`given-up`). */
  lwtUnknown?: 'settled' | 'given-up';
  /** Reads that passed over more tombstones than the warning threshold. */
  tombstoneWarnings?: number;
}

let active: StatementTally | undefined;

/** Run `start` (synchronously) with `tally` active; calls it starts count into `tally`. */
export function withTally<T>(tally: StatementTally | undefined, start: () => T): T {
  const previous = active;
  active = tally;
  try {
    return start();
  } finally {
    active = previous;
  }
}

/** The tally a store call starting now counts into; take it before the first await. */
export function activeTally(): StatementTally | undefined {
  return active;
}

/** Count `n` statements into `tally` (nothing when no one counts). */
export function countStatements(tally: StatementTally | undefined, n = 1): void {
  for (let t = tally; t; t = t.parent) t.statements += n;
}

/** Note that a lightweight transaction's outcome was unknown, and whether a serial read settled it. */
export function noteLwtUnknown(tally: StatementTally | undefined, how: 'settled' | 'given-up'): void {
  if (tally) tally.lwtUnknown = how;
}

/** Note one read that passed over more tombstones than the warning threshold. */
export function noteTombstoneWarning(tally: StatementTally | undefined): void {
  if (tally) tally.tombstoneWarnings = (tally.tombstoneWarnings ?? 0) + 1;
}
