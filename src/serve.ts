/**
 * Serve: read the configuration, start the server, seed the demo data into an empty store,
 * and shut down gracefully on SIGTERM/SIGINT. `main.ts` runs it as it is; a test entry
 * may wrap the store (a fault-injecting or slowing decorator) first.
 */
import { createApp } from './app.js';
import { createStore, demoSeeding, storeLogging } from './composition-root.js';
import { ConfigError, loadConfig } from './config.js';
import { listGlobalId, meetingGlobalId } from './graphql/ids.js';
import { createLogger } from './observability/logger.js';
import { demoIds, seedDemoData } from './seed/demo.js';
import { MonotonicClock } from './store/clock.js';
import type { Store } from './store/port.js';
import type { Tracing } from './observability/tracing/tracing.js';

/** What a caller of `serve` may change. */
export interface ServeOptions {
  /** Decorate the configured store (tests only). */
  readonly wrapStore?: (store: Store) => Store;
  /** Tracing, when `startTracingFromEnv` started it (before this module was imported). */
  readonly tracing?: Tracing | null;
}

/** Start the configured server and keep it running until a signal stops it. */
export async function serve(options: ServeOptions = {}): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`configuration error: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const tracing = options.tracing ?? undefined;
  // With tracing on, every line logged inside a request carries its trace id.
  const logger = createLogger({ level: config.logLevel, production: config.production, fields: tracing?.logFields });
  // The process clock goes to the store too: its default timestamps carry this server's node bits.
  const clock = new MonotonicClock();
  const store = options.wrapStore ? options.wrapStore(createStore(config, { clock, ...storeLogging(config, logger) })) : undefined;
  const app = await createApp(config, {
    logger,
    store,
    clock,
    tracing,
    // Two live servers must never share a clock node: one whose node another took exits (its orchestrator restarts it).
    onPresenceLost: () => {
      logger.fatal('exiting: another server holds this server\'s clock node');
      process.exit(1);
    },
  });
  const seeded = config.seedDemo ? await seedDemoData(demoSeeding(app.services)) : null;
  // On every start, not only the first: the ids to try in the playground.
  const demo = seeded ?? (await demoIds(app.store));
  if (demo) {
    logger.info(
      { meeting: meetingGlobalId(demo.meetingId), list: listGlobalId(demo.listId) },
      `${seeded ? 'seeded the' : 'serving the'} demo data set (users alice, bob, carol, dave); run \`npm run -s token -- alice\` for a token`,
    );
  }
  const port = await app.listen();
  logger.info({ port, store: config.store }, `GraphQL server ready at http://localhost:${port}/graphql`);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      logger.error('shutdown took longer than 10 s; exiting');
      process.exit(1);
    }, 10_000);
    force.unref();
    app
      .close()
      // The spans still buffered leave before the process does.
      .then(() => tracing?.shutdown())
      .then(
        () => {
          logger.info('stopped');
          process.exit(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'error during shutdown');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
