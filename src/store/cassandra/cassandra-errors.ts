/**
 * Every driver error becomes a store error, here and only here: the caller's mistake
 * (`StoreRequestError`, as the embedded store throws for the same request), a read the
 * replicas refused to finish (`StoreReadFailureError`: too many tombstones, as the
 * embedded store throws above its failure threshold), or the cluster's state
 * (`StoreUnavailableError`: unavailable replicas, timeouts, no host, overload). The SQLite adapter has no counterpart: its errors are its own.
 */
import cassandra from 'cassandra-driver';
import { StoreReadFailureError, StoreRequestError, StoreUnavailableError } from '../port.js';

const { errors, types } = cassandra;
const codes = types.responseErrorCodes;

/** Response codes that say the statement itself is wrong: retrying cannot help. */
const INVALID_REQUEST = new Set<number>([
  codes.syntaxError,
  codes.unauthorized,
  codes.invalid,
  codes.configError,
  codes.alreadyExists,
  codes.functionFailure,
  codes.clientWriteFailure,
]);

/** The store error a driver error stands for (store errors pass through unchanged). */
export function storeErrorFrom(err: unknown): Error {
  if (err instanceof StoreRequestError || err instanceof StoreUnavailableError || err instanceof StoreReadFailureError) return err;
  const message = oneLine(err);
  if (isInvalidRequest(err)) return new StoreRequestError(message, { cause: err });
  // A replica gave up on the read (TombstoneOverwhelmingException, above all): the same
  // read fails again, so it is not "unavailable" and must not be retried.
  if (err instanceof errors.ResponseError && err.code === codes.readFailure) {
    return new StoreReadFailureError(`Cassandra failed the read: ${message}`, { cause: err });
  }
  return new StoreUnavailableError(`Cassandra could not answer: ${message}`, { cause: err, timedOut: isTimeout(err) });
}

/** True when the driver or the replicas gave up waiting (as opposed to refusing: unavailable, overloaded, no host). */
function isTimeout(err: unknown): boolean {
  if (err instanceof errors.OperationTimedOutError) return true;
  return err instanceof errors.ResponseError && (err.code === codes.readTimeout || err.code === codes.writeTimeout);
}

/** True when the statement itself is wrong (the server or the driver refused it before running it). */
function isInvalidRequest(err: unknown): boolean {
  if (err instanceof errors.ResponseError) return INVALID_REQUEST.has(err.code);
  // Parameters the driver could not encode never left the process.
  return err instanceof errors.ArgumentError || err instanceof errors.NotSupportedError || err instanceof TypeError;
}

/** The first line of an error's message, for logs and one-line exit reasons. */
export function oneLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n')[0]!.trim();
}
