/**
 * The store's warnings in the log without personal data, and without flooding it. A
 * warning is logged with its table, its kind and a hash of its key values (an HMAC, so
 * the same key gives the same hash on every server of a cluster, and a short key such
 * as a name prefix cannot be found again by trying them all), never the values. Each
 * table and kind logs at most one line per interval; the next line says how many were
 * left out meanwhile.
 */
import { createHmac } from 'node:crypto';
import type { Logger } from 'pino';
import type { StoreWarning } from '../store/port.js';

/** At most one line per table and kind of warning this often. */
export const STORE_WARNING_INTERVAL_MS = 60_000;

/** A key value as text for the hash (bytes as hex, anything else as it prints). */
function keyText(value: unknown): string {
  return value instanceof Uint8Array ? Buffer.from(value).toString('hex') : String(value);
}

/**
 * Where the store's warnings go (`createStore`'s `warn`): `hashKey` keys the hash of key
 * values (derive it from a secret the servers share).
 */
export function storeWarningLog(
  logger: Pick<Logger, 'warn'>,
  options: { hashKey: string; intervalMs?: number; now?: () => number },
): (warning: StoreWarning) => void {
  const interval = options.intervalMs ?? STORE_WARNING_INTERVAL_MS;
  const now = options.now ?? Date.now;
  const last = new Map<string, { at: number; left: number }>();
  return (warning) => {
    const key = `${warning.table ?? ''}|${warning.kind}`;
    const at = now();
    const seen = last.get(key);
    if (seen && at - seen.at < interval) {
      seen.left++;
      return;
    }
    last.set(key, { at, left: 0 });
    const keyHash = createHmac('sha256', options.hashKey).update(warning.keyValues.map(keyText).join('\u0000')).digest('hex').slice(0, 16);
    logger.warn(
      {
        table: warning.table,
        kind: warning.kind,
        keyHash,
        ...(warning.tombstones !== undefined ? { tombstones: warning.tombstones } : {}),
        ...(seen && seen.left > 0 ? { leftOut: seen.left } : {}),
      },
      `store warning: ${warning.message}`,
    );
  };
}
