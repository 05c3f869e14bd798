/**
 * Every GraphQL error leaves with an `extensions.code`. Refusals the caller can act on
 * keep their message; anything unexpected is masked to "Internal server error" and
 * logged (formatting fails closed, as Apollo Server's errorNormalize does).
 */
import { unwrapResolverError } from '@apollo/server/errors';
import type { GraphQLFormattedError } from 'graphql';
import { GraphQLError } from 'graphql';
import type { Logger } from 'pino';
import { DomainError, OutcomeUnknownError, SagaAbortedError, type DomainErrorCode } from '../errors.js';
import { PagingArgumentError } from '../paging/types.js';
import { DeadlineExceededError, RequestAbortedError } from '../store/deadline.js';
import { StoreOutcomeUnknownError, StoreUnavailableError } from '../store/port.js';
import { PresenceLapsedError } from '../background/presence.js';

/** What a client is told when the store could not answer: retryable, nothing half-done. */
const UNAVAILABLE_MESSAGE = 'The data store is unavailable right now; retry the request';
/** What a client is told when this server's presence lapsed: retryable (another server will serve it), nothing half-done. */
const LAPSED_MESSAGE = 'This server is not serving writes right now (it is rejoining its cluster); retry the request';

/**
 * What a client is told when a write may or may not have taken effect: retrying with the
 * same key makes it take effect once (docs/api.md, "Retries and idempotency keys").
 */
export const OUTCOME_UNKNOWN_MESSAGE =
  'The server cannot tell whether this mutation took effect; retry it with the same clientMutationId (it takes effect at most once)';

/** A GraphQL error with one of the API's codes. */
export function apiError(code: DomainErrorCode, message: string, argumentName?: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code, ...(argumentName ? { argumentName } : {}) } });
}

/** Codes Apollo Server itself attaches to request errors; passed through as they are. */
const REQUEST_CODES = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'BAD_REQUEST',
  'OPERATION_RESOLUTION_FAILURE',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'CONFLICT',
  'CURSOR_EXPIRED',
  'TOO_MANY_SUBSCRIPTIONS',
  // Over the principal's budget (rate-limit.ts) and the server busy (in-flight-gate.ts).
  'RATE_LIMITED',
  'UNAVAILABLE',
]);

/** Build Apollo Server's `formatError`: keep known refusals, mask the rest. */
export function createFormatError(logger: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = unwrapResolverError(error);
    const base = { message: formatted.message, locations: formatted.locations, path: formatted.path };
    if (original instanceof DomainError) {
      return {
        ...base,
        message: original.message,
        extensions: { code: original.code, ...(original.argument ? { argumentName: original.argument } : {}) },
      };
    }
    if (original instanceof PagingArgumentError) {
      return { ...base, message: original.message, extensions: { code: 'BAD_USER_INPUT', argumentName: original.argument } };
    }
    if (original instanceof DeadlineExceededError || (original instanceof SagaAbortedError && original.cause instanceof DeadlineExceededError)) {
      return { ...base, message: original.message, extensions: { code: 'TIMEOUT' } };
    }
    if (original instanceof PresenceLapsedError) {
      return { ...base, message: LAPSED_MESSAGE, extensions: { code: 'UNAVAILABLE' } };
    }
    if (original instanceof RequestAbortedError || (original instanceof SagaAbortedError && original.cause instanceof RequestAbortedError)) {
      // Nobody reads it (the client has gone), but every error has its code.
      return { ...base, message: original.message, extensions: { code: 'UNAVAILABLE' } };
    }
    if (original instanceof OutcomeUnknownError) {
      return { ...base, message: original.message, extensions: { code: 'OUTCOME_UNKNOWN' } };
    }
    if (original instanceof StoreOutcomeUnknownError) {
      logger.warn({ err: original, path: formatted.path }, 'write outcome unknown');
      return { ...base, message: OUTCOME_UNKNOWN_MESSAGE, extensions: { code: 'OUTCOME_UNKNOWN' } };
    }
    if (original instanceof StoreUnavailableError) {
      // Retryable: the store did not answer (a lightweight transaction's outcome included).
      logger.warn({ err: original, path: formatted.path }, 'store unavailable');
      return { ...base, message: UNAVAILABLE_MESSAGE, extensions: { code: 'UNAVAILABLE' } };
    }
    if (original instanceof SagaAbortedError) {
      // The cause is logged; the message only says what happened to the data. A store
      // that did not answer makes it retryable.
      logger.error({ err: original.cause, kind: original.kind, compensated: original.compensated }, 'saga aborted');
      // A store that failed makes it retryable. A write whose outcome is unknown, left to
      // recovery (not compensated), makes its outcome unknown too: recovery finishes or
      // rolls it back later, and a retry with the same key learns which.
      const storeFailed = original.cause instanceof StoreUnavailableError;
      const unknown = !original.compensated && original.cause instanceof StoreOutcomeUnknownError;
      const code = !storeFailed ? 'INTERNAL_SERVER_ERROR' : unknown ? 'OUTCOME_UNKNOWN' : 'UNAVAILABLE';
      const message = code === 'OUTCOME_UNKNOWN' ? `${original.message} Retry it with the same clientMutationId to learn its outcome.` : original.message;
      return { ...base, message, extensions: { code } };
    }
    const code = formatted.extensions?.code;
    if (typeof code === 'string' && REQUEST_CODES.has(code)) {
      const { stacktrace: _drop, ...extensions } = formatted.extensions ?? {};
      return { ...base, extensions };
    }
    // Apollo's refusals of a malformed persisted query ("provided sha does not match
    // query", an unsupported version) carry an HTTP 4xx status and no code: the client's
    // request is wrong, and the message says how.
    const status = original instanceof GraphQLError ? (original.extensions.http as { status?: unknown } | undefined)?.status : undefined;
    if (typeof status === 'number' && status >= 400 && status < 500 && formatted.path === undefined) {
      return { ...base, extensions: { code: 'BAD_REQUEST' } };
    }
    logger.error({ err: original, path: formatted.path }, 'internal error while executing a GraphQL request');
    return { ...base, message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } };
  };
}
