/** Entry point: serve with the configuration from the environment; `--help` prints the usage. */
import { parseCli } from './scripts/cli.js';
import { StoreStartupError } from './store/port.js';
import { startTracingFromEnv } from './observability/tracing/tracing-switch.js';

const USAGE = `usage: node dist/main.js      (npm start builds first; npm run dev watches src/)

Starts the GraphQL server on http://HOST:PORT/graphql (default 0.0.0.0:4000), with
/livez, /readyz and, with METRICS=true, /metrics. Everything is configured through environment variables (STORE,
SQLITE_PATH, CASSANDRA_*, AUTH_SECRET, CURSOR_SECRET, CORS_ORIGINS, LOG_LEVEL,
OTEL_EXPORTER_OTLP_ENDPOINT for traces, ...): see the configuration table in docs/operations.md.`;

parseCli(USAGE, {});
// Tracing (when OTEL_EXPORTER_OTLP_ENDPOINT is set) patches node:http and cassandra-driver,
// so it starts before the server's modules are imported.
const tracing = await startTracingFromEnv();
const { serve } = await import('./serve.js');
serve({ tracing }).catch((err: unknown) => {
  // A store that cannot serve (unreachable, schema missing) is a reason, not a crash.
  if (err instanceof StoreStartupError) console.error(`cannot start: ${err.message}`);
  else console.error(err);
  process.exit(1);
});
