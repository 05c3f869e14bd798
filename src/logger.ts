/**
 * The process logger: JSON lines (for log collectors) everywhere except an interactive
 * development terminal, where pino-pretty prints one readable, coloured line per entry.
 */
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';

/** Build the logger of a server process from its level and mode. */
export function createLogger(options: { level: string; production: boolean; stream?: NodeJS.WriteStream }): Logger {
  const stream = options.stream ?? process.stdout;
  if (!options.production && stream.isTTY) {
    return pino({ level: options.level }, pretty({ destination: stream, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }));
  }
  return pino({ level: options.level }, stream);
}
