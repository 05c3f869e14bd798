/**
 * The process logger: JSON lines (for log collectors) everywhere except an interactive
 * development terminal, where pino-pretty prints one readable, coloured line per entry.
 */
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';

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
  const settings = options.fields ? { level: options.level, mixin: options.fields } : { level: options.level };
  if (!options.production && stream.isTTY) {
    return pino(settings, pretty({ destination: stream, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }));
  }
  return pino(settings, stream);
}
