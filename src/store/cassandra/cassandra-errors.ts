/**
 * Every driver error becomes a store error, here and only here: the caller's mistake
 * (`StoreRequestError`, as the embedded store throws for the same request), a read the
 * replicas refused to finish (`StoreReadFailureError`: too many tombstones, as the
 * embedded store throws above its failure threshold), or the cluster's state. For the
 * cluster's state, a write is told apart by what is known of its outcome: nothing was
 * written (`StoreUnavailableError`: unavailable replicas, overload, no host, a request
 * never sent, a batch the batchlog refused), or it may have been
 * (`StoreOutcomeUnknownError`: a write timeout of any other write type, a client timeout
 * or a connection lost after sending). The SQLite adapter has no counterpart: its errors
 * are its own.
 */
import cassandra from 'cassandra-driver';
import { StoreOutcomeUnknownError, StoreReadFailureError, StoreRequestError, StoreUnavailableError } from '../port.js';

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

/**
 * The store error a driver error stands for (store errors pass through unchanged).
 * `write`: the statement was a write, whose outcome the error may leave unknown.
 */
export function storeErrorFrom(err: unknown, options: { readonly write?: boolean } = {}): Error {
  if (err instanceof StoreRequestError || err instanceof StoreUnavailableError || err instanceof StoreReadFailureError) return err;
  const message = oneLine(err);
  if (isInvalidRequest(err)) return new StoreRequestError(message, { cause: err });
  // A replica gave up on the read (TombstoneOverwhelmingException, above all): the same
  // read fails again, so it is not "unavailable" and must not be retried.
  if (err instanceof errors.ResponseError && err.code === codes.readFailure) {
    return new StoreReadFailureError(`Cassandra failed the read: ${message}`, { cause: err });
  }
  if (options.write && mayHaveBeenApplied(err)) {
    return new StoreOutcomeUnknownError(`Cassandra may or may not have applied the write: ${message}`, { cause: err, timedOut: isTimeout(err) });
  }
  return new StoreUnavailableError(`Cassandra could not answer: ${message}`, { cause: err, timedOut: isTimeout(err) });
}

/**
 * True for a write timeout whose write type says the batch was never applied: the
 * coordinator could not write the batchlog, so nothing of the batch reached a replica
 * and it may be sent again at once.
 */
export function isBatchlogTimeout(err: unknown): boolean {
  return err instanceof errors.ResponseError && err.code === codes.writeTimeout && (err as { writeType?: unknown }).writeType === 'BATCH_LOG';
}

/**
 * Whether a write that failed with `err` may have been applied, now or later. A write
 * timeout says so by its write type: `BATCH_LOG`, nothing was applied; `SIMPLE`, `BATCH`,
 * `UNLOGGED_BATCH`, `CAS`, `COUNTER` (and any other), unknown. A write failure reached
 * some replicas. A client timeout or a connection lost after the request was written
 * leaves the coordinator free to go on. Nothing was written for an unavailable or
 * overloaded coordinator, a request the driver never wrote to a socket, or no host at
 * all; "no host available" is unknown when one of the hosts it tried is.
 */
function mayHaveBeenApplied(err: unknown): boolean {
  if (err instanceof errors.NoHostAvailableError) {
    return Object.values((err.innerErrors ?? {}) as Record<string, unknown>).some(mayHaveBeenApplied);
  }
  if (err instanceof errors.OperationTimedOutError) return true;
  if (err instanceof errors.ResponseError) {
    if (err.code === codes.writeTimeout) return !isBatchlogTimeout(err);
    return err.code === codes.writeFailure || err.code === codes.readTimeout || err.code === codes.serverError;
  }
  const socket = err as { isSocketError?: boolean; requestNotWritten?: boolean } | null;
  return socket?.isSocketError === true && socket.requestNotWritten !== true;
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

/**
 * Why a connection to the cluster failed, in one line naming what to fix, and whether
 * trying again can help: an unreachable node may come up, a refused password or an
 * untrusted certificate will not.
 */
export interface ConnectFailure {
  readonly reason: string;
  readonly retry: boolean;
}

const CREDENTIALS = 'CASSANDRA_USERNAME and CASSANDRA_PASSWORD (or CASSANDRA_PASSWORD_FILE)';

/** Node's certificate verification codes that mean "no trusted CA signed this chain". */
const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_CHAIN_TOO_LONG',
]);

/** OpenSSL alerts a node sends when it wants (or refuses) the client's certificate. */
const CLIENT_CERTIFICATE_ALERTS = /ALERT_(CERTIFICATE_REQUIRED|BAD_CERTIFICATE|UNKNOWN_CA|HANDSHAKE_FAILURE|CERTIFICATE_UNKNOWN|ACCESS_DENIED|DECRYPT_ERROR)/;

/**
 * What a failed `connect` of the driver says, per node (a NoHostAvailableError holds one
 * error per contact point tried). A failure retrying cannot fix on any node wins over
 * "unreachable" elsewhere: credentials and certificates are the same for every node.
 * The text quotes the driver and the nodes, which never repeat a password or a key.
 */
export function connectFailureOf(err: unknown): ConnectFailure {
  const inner = innerErrorsOf(err);
  const failures = inner.map(([host, e]) => ({ host, ...nodeFailureOf(e) }));
  const final = failures.find((f) => !f.retry);
  if (final) return { reason: hostPrefix(final.host, inner.length) + final.reason, retry: false };
  if (failures.length === 0) return { reason: oneLine(err), retry: true };
  return { reason: failures.map((f) => (f.host === null ? f.reason : `${f.host}: ${f.reason}`)).join('; '), retry: true };
}

/**
 * A secure connect bundle the driver could not use: unreadable, not a zip, or without
 * the files a bundle holds (the driver reads it before any node); null for every other
 * failure, which `connectFailureOf` explains.
 */
export function bundleFailureOf(err: unknown, bundle: string): ConnectFailure | null {
  if (err instanceof errors.DriverError) return null;
  const code = (err as { code?: unknown } | null)?.code;
  const what = typeof code === 'string' && code.startsWith('E') ? `cannot be read (${code})` : `is not a usable secure connect bundle (${oneLine(err)})`;
  return {
    reason: `the secure connect bundle ${bundle} ${what}: set CASSANDRA_SECURE_CONNECT_BUNDLE to the zip file downloaded from the Astra console`,
    retry: false,
  };
}

function hostPrefix(host: string | null, nodes: number): string {
  return host === null || nodes <= 1 ? '' : `${host}: `;
}

/** The per-node errors of a NoHostAvailableError, or the error itself. */
function innerErrorsOf(err: unknown): Array<[string | null, unknown]> {
  if (err instanceof errors.NoHostAvailableError) return Object.entries((err.innerErrors ?? {}) as Record<string, unknown>);
  return [[null, err]];
}

/** One node's error, explained. */
function nodeFailureOf(err: unknown): { reason: string; retry: boolean } {
  if (err instanceof errors.AuthenticationError) {
    // The driver's two wordings for a node that asks for credentials the client lacks.
    if (/provider not set|no authenticator found/i.test(err.message)) {
      return { reason: `the cluster requires authentication and no credentials are set: set ${CREDENTIALS}`, retry: false };
    }
    return { reason: `authentication refused (${oneLine(err)}): check ${CREDENTIALS}`, retry: false };
  }
  const code = String((err as { code?: unknown } | null)?.code ?? '');
  if (UNTRUSTED.has(code)) {
    return {
      reason: `the node's TLS certificate is not trusted (${code}): set CASSANDRA_TLS_CA_FILE to the PEM of the CA that signed the nodes' certificates`,
      retry: false,
    };
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return {
      reason: `the node's TLS certificate does not carry the name verified (${oneLine(err)}): set CASSANDRA_TLS_SERVER_NAME to a name the certificate carries`,
      retry: false,
    };
  }
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') {
    return { reason: `the node's TLS certificate is not valid now (${code}): renew the nodes' certificates`, retry: false };
  }
  if (CLIENT_CERTIFICATE_ALERTS.test(code)) {
    return {
      reason: `the node refused the TLS handshake (${code}): it wants a client certificate it trusts; set CASSANDRA_TLS_CERT_FILE and CASSANDRA_TLS_KEY_FILE`,
      retry: false,
    };
  }
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG') {
    return { reason: `the node does not speak TLS on this port (${code}): unset CASSANDRA_TLS, or connect to its TLS port`, retry: false };
  }
  // Reset before a word was exchanged: a node that requires TLS does this to plain TCP.
  if (code === 'ECONNRESET') return { reason: `${oneLine(err)} (a node that requires TLS resets plain connections: set CASSANDRA_TLS=true?)`, retry: true };
  return { reason: oneLine(err), retry: true };
}
