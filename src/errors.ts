/**
 * Errors a feature raises for its callers, with the code the API shows. Features know
 * no GraphQL: the GraphQL layer turns `code` into `extensions.code`.
 */

/** The codes a feature may raise. */
export type DomainErrorCode = 'BAD_USER_INPUT' | 'UNAUTHENTICATED' | 'FORBIDDEN' | 'NOT_FOUND' | 'CONFLICT';

/** A refusal the caller can act on; `argument` names the offending input when there is one. */
export class DomainError extends Error {
  override readonly name = 'DomainError';
  constructor(
    readonly code: DomainErrorCode,
    message: string,
    readonly argument?: string,
  ) {
    super(message);
  }
}

/** Shorthand for a `BAD_USER_INPUT` naming its argument. */
export function badInput(argument: string, message: string): DomainError {
  return new DomainError('BAD_USER_INPUT', message, argument);
}

/** Check a free-text input: trimmed length within bounds, no control characters. */
export function checkText(argument: string, value: string, min: number, max: number): string {
  const trimmed = value.trim();
  if (trimmed.length < min || trimmed.length > max) {
    throw badInput(argument, `\`${argument}\` must be ${min} to ${max} characters long, got ${trimmed.length}`);
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(trimmed)) {
    throw badInput(argument, `\`${argument}\` must not contain control characters`);
  }
  return trimmed;
}

/**
 * A saga stopped on an error; `compensated` says whether everything was undone already.
 * Raised by the saga runner; the GraphQL layer reports it without knowing the runner.
 */
export class SagaAbortedError extends Error {
  override readonly name = 'SagaAbortedError';
  constructor(
    readonly kind: string,
    readonly compensated: boolean,
    override readonly cause: unknown,
  ) {
    super(
      compensated
        ? `${kind} could not be completed and was rolled back; nothing changed. Retry later.`
        : `${kind} could not be completed; it will be finished or rolled back automatically.`,
    );
  }
}
