/**
 * The process logger: JSON lines (for log collectors) everywhere except an interactive
 * development terminal, where pino-pretty prints one readable, coloured line per entry.
 * Credentials never reach a line: pino's `redact` replaces the values of the fields
 * named in REDACTED_PATHS, wherever a logged object (an error's options, a request's
 * headers) carries them, down to three levels.
 */
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';

/** Field names whose values are credentials, in any case a header or option spells them. */
const SECRET_FIELDS = ['authorization', 'Authorization', 'cookie', 'password', 'token', 'accessToken', 'secret', 'credentials'];

/** What `redact` hides: each secret field at the top of a line's object, and one or two levels in. */
export const REDACTED_PATHS: readonly string[] = SECRET_FIELDS.flatMap((f) => [f, `*.${f}`, `*.*.${f}`]);

/** What a redacted value prints as. */
export const REDACTED = '[redacted]';

/**
 * Build the logger of a server process from its level and mode. `fields` adds to every
 * line (tracing's `trace_id` and `span_id`); without it pino calls nothing per line.
 */
export function createLogger(options: {
  level: string;
  production: boolean;
  stream?: NodeJS.WriteStream;
  fields?: () => Record<string, unknown>;
}): Logger {
  const stream = options.stream ?? process.stdout;
  const redact = { paths: [...REDACTED_PATHS], censor: REDACTED };
  const settings = options.fields ? { level: options.level, redact, mixin: options.fields } : { level: options.level, redact };
  if (!options.production && stream.isTTY) {
    return pino(settings, pretty({ destination: stream, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }));
  }
  return pino(settings, stream);
}
