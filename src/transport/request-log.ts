/**
 * One log line per HTTP request at debug level: method, path, status and duration.
 * Costs nothing when debug logging is off.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';

type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/** Wrap an HTTP handler so each finished request logs one debug line. */
export function withRequestLog(handler: Handler, logger: Logger): Handler {
  if (!logger.isLevelEnabled('debug')) return handler;
  return (req, res) => {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const ms = Math.round(Number(process.hrtime.bigint() - started) / 1e5) / 10;
      // The path only: query strings may carry a whole GraphQL document.
      const path = (req.url ?? '/').split('?')[0];
      logger.debug({ method: req.method, path, status: res.statusCode, ms }, `${req.method} ${path} ${res.statusCode} ${ms} ms`);
    });
    return handler(req, res);
  };
}
