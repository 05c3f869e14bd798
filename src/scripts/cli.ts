/**
 * What every command-line script shares: `--help` prints the usage, a bad option prints
 * the usage and exits 2, and a failure prints one clear line (no stack trace) and
 * exits 1, or 2 for a configuration error.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError } from '../config.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** Parse the command line of a script, answering `--help` and refusing bad options. */
export function parseCli<O extends Options>(usage: string, options: O, allowPositionals = false) {
  try {
    const parsed = parseArgs({ options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals, strict: true });
    if ((parsed.values as { help?: boolean }).help) {
      console.log(usage);
      process.exit(0);
    }
    return parsed as ReturnType<typeof parseArgs<{ options: O; allowPositionals: boolean; strict: true }>>;
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${usage}`);
    process.exit(2);
  }
}

/** Stop with a usage error: the message, then the usage, exit code 2. */
export function usageError(message: string, usage: string): never {
  console.error(`${message}\n\n${usage}`);
  process.exit(2);
}

/**
 * Run a script's main function; a failure prints `<name> failed: <message>` (and a hint
 * when one helps) instead of a stack trace. `DEBUG_STACK=1` shows the stack too.
 */
export function runScript(name: string, main: () => Promise<void>, hint?: (err: unknown) => string | undefined): void {
  main().catch((err: unknown) => {
    if (err instanceof ConfigError) {
      console.error(`configuration error: ${err.message}`);
      process.exit(2);
    }
    const message = err instanceof Error ? err.message : String(err);
    const advice = hint?.(err);
    console.error(`${name} failed: ${message}${advice ? ` (${advice})` : ''}`);
    if (process.env.DEBUG_STACK) console.error(err);
    process.exit(1);
  });
}
