/**
 * Cursors: opaque (base64url), versioned, bound to their connection, and signed with
 * an HMAC so a forged or edited cursor is refused. The same row always encodes to the
 * same text (no timestamp, no nonce): Apollo Client's relayStylePagination matches
 * cursors by string equality.
 *
 * Layout (version 2): `[version][MAC, 16 bytes][key]`, the key in a compact binary
 * form (a tag byte per part; UUIDs as their 16 bytes). The connection's identity is
 * not written into the cursor at all: it is part of what the MAC covers
 * (`version, length of the id, id, key`), so a cursor of another connection fails the
 * MAC exactly as a forged one does. The MAC is HMAC-SHA256 truncated to 128 bits
 * (RFC 2104 section 5 allows truncation to half the output and no less than 80 bits),
 * computed from the key's two padded blocks prepared once: two one-shot hashes per
 * cursor, no HMAC object (building one was most of a cursor's cost in the profile).
 * Cursors of version 1 (a MAC over JSON holding the connection id) are still read, so
 * cursors handed out before an upgrade keep working.
 */
import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import type { CursorKey, CursorKeyPart } from './types.js';

const VERSION = 2;
const LEGACY_VERSION = 1;
const MAC_BYTES = 16;
/** The longest connection cursor accepted, in characters. */
export const MAX_CURSOR_LENGTH = 4096;

// One tag byte per key part.
const NULL = 0;
const FALSE = 1;
const TRUE = 2;
const UUID = 3;
const STRING = 4;
const UINT = 5;
const NEGATIVE_INT = 6;
const FLOAT = 7;

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** Encodes and decodes cursors under one secret. */
export interface CursorCodec {
  /** The cursor text for `key` in connection `connectionId`. */
  encodeCursor(connectionId: string, key: CursorKey): string;
  /**
   * The key inside `cursor`, or null when it is malformed, forged or from another
   * connection. `maxLength` raises the length accepted (MAX_CURSOR_LENGTH) for cursors
   * that carry more than a row's key (a live feed's position).
   */
  decodeCursor(connectionId: string, cursor: string, options?: { maxLength?: number }): CursorKey | null;
}

/** A growable scratch buffer: cursors are built in place, then copied out once. */
class Writer {
  buf = Buffer.allocUnsafe(256);
  at = 0;

  /** `prefix` stays at the start of the buffer: the HMAC's inner key block. */
  constructor(readonly prefix: Buffer) {
    prefix.copy(this.buf);
  }

  room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + n));
    this.buf.copy(bigger, 0, 0, this.at);
    this.buf = bigger;
  }

  byte(b: number): void {
    this.room(1);
    this.buf[this.at++] = b;
  }

  /** An unsigned integer up to 2^53, 7 bits a byte (arithmetic, not bitwise: above 2^31). */
  varint(n: number): void {
    this.room(8);
    while (n >= 0x80) {
      this.buf[this.at++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.buf[this.at++] = n;
  }

  text(s: string): void {
    const length = Buffer.byteLength(s, 'utf8');
    this.varint(length);
    this.room(length);
    this.at += this.buf.write(s, this.at, 'utf8');
  }

  part(p: CursorKeyPart): void {
    if (p === null) this.byte(NULL);
    else if (p === false) this.byte(FALSE);
    else if (p === true) this.byte(TRUE);
    else if (typeof p === 'string') {
      if (p.length === 36 && UUID_TEXT.test(p)) {
        this.byte(UUID);
        this.room(16);
        // Lowercase hex (the pattern above), pairs of digits between the dashes.
        for (let i = 0; i < 36; i += i === 6 || i === 11 || i === 16 || i === 21 ? 3 : 2) {
          this.buf[this.at++] = (nibble(p.charCodeAt(i)) << 4) | nibble(p.charCodeAt(i + 1));
        }
      } else {
        this.byte(STRING);
        this.text(p);
      }
    } else if (Number.isSafeInteger(p) && !Object.is(p, -0)) {
      this.byte(p < 0 ? NEGATIVE_INT : UINT);
      this.varint(Math.abs(p));
    } else {
      this.byte(FLOAT);
      this.room(8);
      this.at = this.buf.writeDoubleBE(p, this.at);
    }
  }
}

/** The value of a lowercase hex digit. */
function nibble(c: number): number {
  return c <= 57 ? c - 48 : c - 87;
}

const BLOCK = 64;

/** HMAC-SHA256 (RFC 2104) with its key blocks prepared once. */
function hmacSha256(secret: Buffer) {
  const key = Buffer.alloc(BLOCK);
  (secret.length > BLOCK ? hash('sha256', secret, 'buffer') : secret).copy(key);
  const inner = Buffer.from(key.map((b) => b ^ 0x36));
  const outer = Buffer.alloc(BLOCK + 32);
  Buffer.from(key.map((b) => b ^ 0x5c)).copy(outer);
  return {
    inner,
    /** The MAC of `message`, given as a buffer that starts with `inner`. */
    macOfPrefixed(prefixed: Buffer): Buffer {
      hash('sha256', prefixed, 'buffer').copy(outer, BLOCK);
      return hash('sha256', outer, 'buffer');
    },
  };
}

/** Reads a key back; any malformation (unknown tag, truncation, trailing bytes) gives null. */
function readKey(buf: Buffer, start: number): CursorKey | null {
  const key: CursorKeyPart[] = [];
  let at = start;
  const varint = (): number => {
    let n = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      if (at >= buf.length) return -1;
      const b = buf[at++]!;
      n += (b & 0x7f) * scale;
      if (b < 0x80) return n <= Number.MAX_SAFE_INTEGER ? n : -1;
      scale *= 0x80;
    }
    return -1;
  };
  while (at < buf.length) {
    const tag = buf[at++]!;
    if (tag === NULL) key.push(null);
    else if (tag === FALSE) key.push(false);
    else if (tag === TRUE) key.push(true);
    else if (tag === UUID) {
      if (at + 16 > buf.length) return null;
      const hex = buf.toString('hex', at, at + 16);
      at += 16;
      key.push(`${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`);
    } else if (tag === STRING) {
      const length = varint();
      if (length < 0 || at + length > buf.length) return null;
      key.push(buf.toString('utf8', at, at + length));
      at += length;
    } else if (tag === UINT || tag === NEGATIVE_INT) {
      const n = varint();
      if (n < 0) return null;
      key.push(tag === UINT ? n : -n);
    } else if (tag === FLOAT) {
      if (at + 8 > buf.length) return null;
      key.push(buf.readDoubleBE(at));
      at += 8;
    } else return null;
  }
  return key;
}

/** Create a codec; the secret must be at least 16 bytes. */
export function createCursorCodec(secret: string): CursorCodec {
  if (typeof secret !== 'string' || Buffer.byteLength(secret) < 16) {
    throw new Error('the cursor secret must be at least 16 bytes long');
  }
  const hmac = hmacSha256(Buffer.from(secret, 'utf8'));
  const w = new Writer(hmac.inner);
  // What the MAC of version 2 covers: version, connection id, key (built in `w` after the key block).
  const signed = (connectionId: string, cursorKey: CursorKey): number => {
    w.at = BLOCK;
    w.byte(VERSION);
    w.text(connectionId);
    const keyStart = w.at;
    for (const part of cursorKey) w.part(part);
    return keyStart;
  };
  // The MAC of what `signed` wrote.
  const mac = () => hmac.macOfPrefixed(w.buf.subarray(0, w.at)).subarray(0, MAC_BYTES);

  const decodeLegacy = (connectionId: string, raw: Buffer): CursorKey | null => {
    const payload = raw.subarray(MAC_BYTES);
    const legacyMac = createHmac('sha256', secret).update(payload).digest().subarray(0, MAC_BYTES);
    if (!timingSafeEqual(raw.subarray(0, MAC_BYTES), legacyMac)) return null;
    let parsed: unknown;
    try {
      parsed = JSON.parse(payload.toString('utf8'));
    } catch {
      return null;
    }
    if (!Array.isArray(parsed) || parsed.length !== 3) return null;
    const [version, id, parts] = parsed as [unknown, unknown, unknown];
    if (version !== LEGACY_VERSION || id !== connectionId || !Array.isArray(parts)) return null;
    const ok = parts.every((k) => k === null || ['string', 'number', 'boolean'].includes(typeof k));
    return ok ? (parts as CursorKey) : null;
  };

  return Object.freeze({
    encodeCursor(connectionId: string, cursorKey: CursorKey): string {
      const keyStart = signed(connectionId, cursorKey);
      const keyLength = w.at - keyStart;
      const out = Buffer.allocUnsafe(1 + MAC_BYTES + keyLength);
      out[0] = VERSION;
      mac().copy(out, 1);
      w.buf.copy(out, 1 + MAC_BYTES, keyStart, w.at);
      return out.toString('base64url');
    },
    decodeCursor(connectionId: string, cursor: string, options?: { maxLength?: number }): CursorKey | null {
      if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > (options?.maxLength ?? MAX_CURSOR_LENGTH)) return null;
      if (!BASE64URL.test(cursor)) return null;
      const raw = Buffer.from(cursor, 'base64url');
      // Re-encoding must give the same text: refuses non-canonical base64.
      if (raw.toString('base64url') !== cursor || raw.length <= MAC_BYTES) return null;
      if (raw[0] === VERSION) {
        const parsed = readKey(raw, 1 + MAC_BYTES);
        if (parsed) {
          const keyStart = signed(connectionId, parsed);
          // The key re-encodes to the same bytes (canonical), and the MAC matches.
          const body = w.buf.subarray(keyStart, w.at);
          if (body.equals(raw.subarray(1 + MAC_BYTES)) && timingSafeEqual(raw.subarray(1, 1 + MAC_BYTES), mac())) {
            return parsed;
          }
        }
      }
      // A version-1 cursor starts with its MAC, so any first byte is possible: try it too.
      return decodeLegacy(connectionId, raw);
    },
  });
}
