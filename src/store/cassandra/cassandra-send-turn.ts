/**
 * Reads leave on the event loop's next check phase, together.
 *
 * The driver coalesces what is queued on a connection before its `process.nextTick`
 * into one socket write (`WriteQueue` in cassandra-driver's writers.js). In process, 32
 * pages in flight ask for their next statements from one socket read's callback, so
 * they share a write (0.22 writes a timeline page, the driver alone 0.17). A server's
 * requests arrive on 32 sockets, each in a callback of its own with its own tick queue:
 * each request's first read was a write of its own, and Cassandra woke for each (1.28
 * writes to Cassandra a timeline request over HTTP; docs/benchmarks-history.md, issue 39).
 * Holding a read until `setImmediate` lets every callback of the poll phase ask first:
 * the reads of all requests that arrived together leave in one write. The wait is the
 * rest of one loop turn, with no timer; a read's timeout starts when it is sent.
 */
export class SendTurn {
  private turn: Promise<void> | null = null;

  /** Resolves in the loop's next check phase, the same promise for everyone who asks before it. */
  next(): Promise<void> {
    return (this.turn ??= new Promise((resolve) =>
      setImmediate(() => {
        this.turn = null;
        resolve();
      }),
    ));
  }
}
