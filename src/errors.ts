/**
 * Errors a feature raises for its callers, with the code the API shows. Features know
 * no GraphQL: the GraphQL layer turns `code` into `extensions.code`.
 */

/** The codes a feature may raise. */
export type DomainErrorCode = 'BAD_USER_INPUT' | 'UNAUTHENTICATED' | 'FORBIDDEN' | 'NOT_FOUND' | 'CONFLICT' | 'CURSOR_EXPIRED';

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

/** Characters refused in any text input, each with why, as `[pattern, rule]`. */
const REFUSED: ReadonlyArray<readonly [RegExp, string]> = [
  // C0 controls other than \n and \t, DEL and the C1 controls (U+0080-U+009F).
  // eslint-disable-next-line no-control-regex
  [/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/u, 'control characters'],
  // Trojan Source (CVE-2021-42574): embeddings, overrides and isolates reorder what a reader sees.
  [/[\u202a-\u202e\u2066-\u2069]/u, 'bidirectional override or isolate characters (U+202A-U+202E, U+2066-U+2069)'],
  // Zero-width and invisible characters with no use in running text. Zero-width joiner
  // and non-joiner (U+200C, U+200D) stay allowed: emoji sequences and Persian and Indic
  // scripts need them.
  [/[\u200b\u2060-\u2064\ufeff\u180e]/u, 'zero-width characters (U+200B, U+2060-U+2064, U+FEFF, U+180E)'],
];

/** A character that shows: not whitespace, not default-ignorable, not a control or format character. */
const VISIBLE = /[^\p{White_Space}\p{Default_Ignorable_Code_Point}\p{Cc}\p{Cf}\u2800]/u;

/** Names a code point for an error message: "U+202E at position 3". */
function describeAt(value: string, index: number): string {
  const cp = value.codePointAt(index)!;
  return `U+${cp.toString(16).toUpperCase().padStart(4, '0')} at position ${index}`;
}

/**
 * Check the characters of a text input, refusing rather than altering: lone
 * surrogates (which storage would turn into U+FFFD), control characters (`\n` and
 * `\t` only where `multiline`), bidirectional overrides and zero-width characters.
 */
export function checkCharacters(argument: string, value: string, options: { multiline?: boolean } = {}): string {
  if (!value.isWellFormed()) {
    const index = value.search(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
    throw badInput(argument, `\`${argument}\` must not contain lone surrogates (unpaired UTF-16 halves), got ${describeAt(value, index)}`);
  }
  const rules: ReadonlyArray<readonly [RegExp, string]> = options.multiline
    ? REFUSED
    : [...REFUSED, [/[\n\t]/u, 'line breaks or tabs']];
  for (const [pattern, rule] of rules) {
    const index = value.search(pattern);
    if (index >= 0) throw badInput(argument, `\`${argument}\` must not contain ${rule}, got ${describeAt(value, index)}`);
  }
  return value;
}

/**
 * Check a free-text input: its characters (see `checkCharacters`), at least one
 * visible character, and a trimmed length within bounds. Returns the trimmed text.
 */
export function checkText(argument: string, value: string, min: number, max: number, options: { multiline?: boolean } = {}): string {
  checkCharacters(argument, value, options);
  const trimmed = value.trim();
  if (trimmed.length < min || trimmed.length > max) {
    throw badInput(argument, `\`${argument}\` must be ${min} to ${max} characters long, got ${trimmed.length}`);
  }
  if (min > 0 && !VISIBLE.test(trimmed)) {
    throw badInput(argument, `\`${argument}\` must contain at least one visible character`);
  }
  return trimmed;
}

/**
 * The server cannot tell whether a mutation took effect (its write's outcome is unknown,
 * or the first attempt under the same `clientMutationId` is still running): the client
 * retries with the same `clientMutationId`, which takes effect at most once.
 */
export class OutcomeUnknownError extends Error {
  override readonly name = 'OutcomeUnknownError';
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
