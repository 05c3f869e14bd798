/**
 * The driver policies that keep writes on a bounded path: a write is never sent again
 * once it may have reached a coordinator (a client timeout, a connection lost after
 * sending, a write timeout: the adapter itself re-sends a batch the batchlog refused,
 * within its write budget), and never speculatively. Reads keep the driver's retries and
 * speculation. The late-write window (CLOCK_SKEW_MS + STORE_WRITE_TIMEOUT_MS) relies on it:
 * the driver's default policy re-sends an idempotent write to the next host after its
 * 12 s timeout, with its original timestamp.
 */
import cassandra from 'cassandra-driver';

const { policies } = cassandra;

/** The statement text (or a batch's statements) the driver hands its policies. */
type QueryInfo = unknown;

/** Whether the driver's query info is a write: a batch (an array, or no single text), or INSERT, UPDATE, DELETE. */
export function isWriteQuery(query: QueryInfo): boolean {
  if (typeof query !== 'string') return true;
  return /^\s*(INSERT|UPDATE|DELETE|BEGIN)\b/i.test(query);
}

/**
 * The driver's retry policy for reads; for writes, only retries that cannot apply a write
 * twice or late: an unavailable coordinator (nothing was written) is tried once on the next
 * host, as the driver does. (A request never written to its socket is retried by the
 * driver itself, before any policy.)
 */
export class BoundedWriteRetryPolicy extends policies.retry.RetryPolicy {
  override onWriteTimeout(info: cassandra.policies.retry.OperationInfo): cassandra.policies.retry.DecisionInfo {
    // Unknown outcome, or a batchlog timeout the adapter re-sends within its budget.
    void info;
    return this.rethrowResult();
  }

  override onRequestError(
    info: cassandra.policies.retry.OperationInfo,
    consistency: cassandra.types.consistencies,
    err: Error,
  ): cassandra.policies.retry.DecisionInfo {
    // A client timeout or a lost connection: a write may be applying; never send it again.
    if (isWriteQuery(info.query)) return this.rethrowResult();
    return super.onRequestError(info, consistency, err);
  }
}

/** A speculative execution policy that speculates on reads only, as `inner` says; a write runs once. */
export class ReadOnlySpeculation implements cassandra.policies.speculativeExecution.SpeculativeExecutionPolicy {
  constructor(private readonly inner: cassandra.policies.speculativeExecution.SpeculativeExecutionPolicy) {}

  init(client: cassandra.Client): void {
    this.inner.init(client);
  }

  newPlan(keyspace: string, queryInfo: string | Array<object>): { nextExecution: Function } {
    if (isWriteQuery(queryInfo)) return { nextExecution: () => -1 };
    return this.inner.newPlan(keyspace, queryInfo);
  }

  getOptions(): Map<string, object> {
    return this.inner.getOptions();
  }

  shutdown(): void {
    this.inner.shutdown();
  }
}
