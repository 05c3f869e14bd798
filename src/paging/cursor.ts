/**
 * Cursors: opaque (base64url), versioned, bound to their connection, and signed with
 * an HMAC so a forged or edited cursor is refused. The same row always encodes to the
 * same text (no timestamp, no nonce): Apollo Client's relayStylePagination matches
 * cursors by string equality.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { CursorKey } from './types.js';

const VERSION = 1;
const MAC_BYTES = 16;

/** Encodes and decodes cursors under one secret. */
export interface CursorCodec {
  /** The cursor text for `key` in connection `connectionId`. */
  encodeCursor(connectionId: string, key: CursorKey): string;
  /** The key inside `cursor`, or null when it is malformed, forged or from another connection. */
  decodeCursor(connectionId: string, cursor: string): CursorKey | null;
}

/** Create a codec; the secret must be at least 16 bytes. */
export function createCursorCodec(secret: string): CursorCodec {
  if (typeof secret !== 'string' || Buffer.byteLength(secret) < 16) {
    throw new Error('the cursor secret must be at least 16 bytes long');
  }
  const mac = (payload: Buffer) => createHmac('sha256', secret).update(payload).digest().subarray(0, MAC_BYTES);
  return Object.freeze({
    encodeCursor(connectionId: string, key: CursorKey): string {
      const payload = Buffer.from(JSON.stringify([VERSION, connectionId, key]), 'utf8');
      return Buffer.concat([mac(payload), payload]).toString('base64url');
    },
    decodeCursor(connectionId: string, cursor: string): CursorKey | null {
      if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > 4096) return null;
      if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
      const raw = Buffer.from(cursor, 'base64url');
      // Re-encoding must give the same text: refuses non-canonical base64.
      if (raw.toString('base64url') !== cursor || raw.length <= MAC_BYTES) return null;
      const payload = raw.subarray(MAC_BYTES);
      if (!timingSafeEqual(raw.subarray(0, MAC_BYTES), mac(payload))) return null;
      let parsed: unknown;
      try {
        parsed = JSON.parse(payload.toString('utf8'));
      } catch {
        return null;
      }
      if (!Array.isArray(parsed) || parsed.length !== 3) return null;
      const [version, id, key] = parsed as [unknown, unknown, unknown];
      if (version !== VERSION || id !== connectionId || !Array.isArray(key)) return null;
      const ok = key.every((k) => k === null || ['string', 'number', 'boolean'].includes(typeof k));
      return ok ? (key as CursorKey) : null;
    },
  });
}
