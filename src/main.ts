/**
 * Entry point: read the configuration, start the server, seed the demo data on first
 * start, and shut down gracefully on SIGTERM/SIGINT.
 */
import pino from 'pino';
import { createApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { listGlobalId, meetingGlobalId } from './graphql/ids.js';
import { seedDemoData } from './seed/demo.js';

async function main(): Promise<void> {
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
  const logger = pino({ level: config.logLevel });
  const app = await createApp(config, { logger });
  const demo = config.seedDemo ? await seedDemoData(app.services) : null;
  if (demo) {
    logger.info(
      { meeting: meetingGlobalId(demo.meetingId), list: listGlobalId(demo.listId) },
      'seeded the demo data set (users alice, bob, carol, dave); run `npm run token -- alice` for a token',
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
    app.close().then(
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

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
