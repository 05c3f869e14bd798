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

/** A running count of the statements sent for one request. */
export interface StatementTally {
  statements: number;
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
  if (tally) tally.statements += n;
}
