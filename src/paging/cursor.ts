/**
 * Cursors: opaque (base64url), versioned, bound to their connection, and signed so a
 * forged or edited cursor is refused. The same row always encodes to the same text (no
 * timestamp, no nonce): Apollo Client's relayStylePagination matches cursors by string
 * equality.
 *
 * Layout (version 3): `[version][tag, 8 bytes][key]`, the key in a compact binary form
 * (a tag byte per part; UUIDs as their 16 bytes). The connection's identity is not
 * written into the cursor: it is part of what the tag covers (`version, length of the
 * id, id, key`), so a cursor of another connection fails exactly as a forged one does.
 *
 * The tag is SipHash-2-4 (siphash.ts), a pseudo-random function keyed with 128 bits
 * derived from `CURSOR_SECRET` (the first 16 bytes of its HMAC-SHA256 over a fixed
 * label, computed once). Why that is safe: a PRF's output on a message nobody was
 * shown is unpredictable, so each guess at a tag succeeds with probability 2^-64 (the
 * tag's size), whatever number of cursors the guesser has seen, until the key itself
 * is found, which costs 2^128 work. 2^-64 a guess is far below what a client can
 * try: at a million forged cursors a second, one success is expected after some
 * 580,000 years. Tags are compared in constant time (two 32-bit XORs, one branch).
 * SipHash costs some 0.1 µs a cursor against 1-2.5 µs for the HMAC-SHA256 of version
 * 2, which signed every edge of every page (BENCHMARKS.md, "Cursor signing").
 *
 * Rotation: a codec holds the current secret and any number of previous ones
 * (`CURSOR_PREVIOUS_SECRETS`). It signs with the current one and accepts a cursor that
 * any of them signed, live resume cursors included, until that secret is dropped.
 *
 * Older formats: version 2 (`[2][HMAC-SHA256 of the same bytes, truncated to 128
 * bits][key]`) and version 1 (a MAC over JSON holding the connection id) are still read,
 * for one release: cursors handed out before an upgrade keep working. A codec made
 * with `retiredVersions` refuses a genuine cursor of those versions and says it is out
 * of date (`isOutdated`), which the next release does for 1 and 2 (docs/api.md).
 */
import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import { sipHash24, sipKeyOf, type SipKey } from './siphash.js';
import type { CursorKey, CursorKeyPart } from './types.js';

const VERSION = 3;
const HMAC_VERSION = 2;
const LEGACY_VERSION = 1;
/** The cursor formats a codec reads. */
export type CursorVersion = typeof LEGACY_VERSION | typeof HMAC_VERSION | typeof VERSION;
const TAG_BYTES = 8;
const MAC_BYTES = 16;
/** What the SipHash key is derived from: HMAC-SHA256(secret, this), first 16 bytes. */
const SIP_KEY_LABEL = 'cursor tag key, SipHash-2-4, version 3';
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

const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** Encodes cursors under one secret, and decodes those of it and of earlier secrets. */
export interface CursorCodec {
  /** The cursor text for `key` in connection `connectionId`. */
  encodeCursor(connectionId: string, key: CursorKey): string;
  /**
   * The key inside `cursor`, or null when it is malformed, forged or from another
   * connection. `maxLength` raises the length accepted (MAX_CURSOR_LENGTH) for cursors
   * that carry more than a row's key (a live feed's position).
   */
  decodeCursor(connectionId: string, cursor: string, options?: { maxLength?: number }): CursorKey | null;
  /**
   * Whether `cursor`, which `decodeCursor` refused, is a genuine cursor of
   * `connectionId` in a format this codec no longer reads (a retired version): the
   * client should start again from a fresh page rather than be told it forged one.
   */
  isOutdated(connectionId: string, cursor: string): boolean;
}

/**
 * A growable scratch buffer: cursors are built in place, then copied out once. Its
 * first BLOCK bytes are room for an HMAC's inner key block (version 2).
 */
class Writer {
  buf = Buffer.allocUnsafe(256);
  at = 0;

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

  /**
   * A uuid's text (lowercase hex, dashed: 8-4-4-4-12 digits) as its tag and 16 bytes,
   * checked as it is read; false, with nothing written, for any other text of 36
   * characters. One pass rather than a pattern's test and then the bytes: every edge's
   * cursor of a keyed connection holds one.
   */
  uuid(p: string): boolean {
    this.room(17);
    const start = this.at;
    this.buf[this.at++] = UUID;
    for (let i = 0; i < 36; i += 2) {
      if (i === 8 || i === 13 || i === 18 || i === 23) {
        if (p.charCodeAt(i) !== 45) break;
        i--;
        continue;
      }
      const high = nibble(p.charCodeAt(i));
      const low = nibble(p.charCodeAt(i + 1));
      if (high < 0 || low < 0) break;
      this.buf[this.at++] = (high << 4) | low;
    }
    if (this.at - start === 17) return true;
    this.at = start;
    return false;
  }

  part(p: CursorKeyPart): void {
    if (p === null) this.byte(NULL);
    else if (p === false) this.byte(FALSE);
    else if (p === true) this.byte(TRUE);
    else if (typeof p === 'string') {
      if (p.length !== 36 || !this.uuid(p)) {
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

/** The value of a lowercase hex digit, or -1. */
function nibble(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  return c >= 97 && c <= 102 ? c - 87 : -1;
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

/** What one secret signs with: the SipHash key (version 3) and the HMAC blocks (version 2). */
interface SecretKeys {
  readonly secret: string;
  readonly sip: SipKey;
  readonly hmac: ReturnType<typeof hmacSha256>;
}

function keysOf(secret: string): SecretKeys {
  if (typeof secret !== 'string' || Buffer.byteLength(secret) < 16) {
    throw new Error('the cursor secret must be at least 16 bytes long');
  }
  const bytes = Buffer.from(secret, 'utf8');
  return { secret, sip: sipKeyOf(createHmac('sha256', bytes).update(SIP_KEY_LABEL).digest().subarray(0, 16)), hmac: hmacSha256(bytes) };
}

/** How a codec reads: the secrets it also accepts, the versions it no longer reads. */
export interface CursorCodecOptions {
  /** Earlier secrets whose cursors still verify (`CURSOR_PREVIOUS_SECRETS`), each 16+ bytes. */
  readonly previousSecrets?: readonly string[];
  /** Formats refused as out of date (the release after version 3 came: 1 and 2). */
  readonly retiredVersions?: readonly CursorVersion[];
}

/** Create a codec; every secret must be at least 16 bytes. */
export function createCursorCodec(secret: string, options: CursorCodecOptions = {}): CursorCodec {
  const current = keysOf(secret);
  const all = [current, ...(options.previousSecrets ?? []).map(keysOf)];
  const retired = new Set<number>(options.retiredVersions ?? []);
  const w = new Writer();
  const tag = new Uint32Array(2);
  // What a cursor signs: version, connection id, key (built in `w` after the key block).
  const signed = (version: number, connectionId: string, cursorKey: CursorKey): number => {
    w.at = BLOCK;
    w.byte(version);
    w.text(connectionId);
    const keyStart = w.at;
    for (const part of cursorKey) w.part(part);
    return keyStart;
  };
  // The version-2 MAC of what `signed` wrote, under `keys`.
  const hmacOf = (keys: SecretKeys) => {
    keys.hmac.inner.copy(w.buf, 0);
    return keys.hmac.macOfPrefixed(w.buf.subarray(0, w.at)).subarray(0, MAC_BYTES);
  };
  // Whether the version-3 tag at raw[1..9) is the one of what `signed` wrote, under any secret.
  const tagMatches = (raw: Buffer): boolean => {
    const high = raw.readUInt32BE(1);
    const low = raw.readUInt32BE(5);
    let match = 0;
    for (const keys of all) {
      sipHash24(keys.sip, w.buf, BLOCK, w.at, tag);
      // Constant time: the whole tag is compared whatever the first difference.
      match |= (((tag[0]! ^ high) | (tag[1]! ^ low)) === 0 ? 1 : 0);
    }
    return match === 1;
  };

  /** The key of a genuine cursor of `connectionId` in any format, and its version; null otherwise. */
  const verify = (connectionId: string, cursor: string, maxLength: number): { key: CursorKey; version: CursorVersion } | null => {
    if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > maxLength) return null;
    if (!BASE64URL.test(cursor)) return null;
    const raw = Buffer.from(cursor, 'base64url');
    // Re-encoding must give the same text: refuses non-canonical base64.
    if (raw.toString('base64url') !== cursor || raw.length <= TAG_BYTES) return null;
    if (raw[0] === VERSION || raw[0] === HMAC_VERSION) {
      const version = raw[0];
      const keyOffset = 1 + (version === VERSION ? TAG_BYTES : MAC_BYTES);
      const parsed = raw.length >= keyOffset ? readKey(raw, keyOffset) : null;
      if (parsed) {
        const keyStart = signed(version, connectionId, parsed);
        // The key re-encodes to the same bytes (canonical), and the tag matches.
        if (w.buf.subarray(keyStart, w.at).equals(raw.subarray(keyOffset))) {
          if (version === VERSION ? tagMatches(raw) : all.some((keys) => timingSafeEqual(raw.subarray(1, 1 + MAC_BYTES), hmacOf(keys)))) {
            return { key: parsed, version };
          }
        }
      }
    }
    // A version-1 cursor starts with its MAC, so any first byte is possible: try it too.
    if (raw.length <= MAC_BYTES) return null;
    for (const keys of all) {
      const key = decodeLegacy(keys.secret, connectionId, raw);
      if (key) return { key, version: LEGACY_VERSION };
    }
    return null;
  };

  return Object.freeze({
    encodeCursor(connectionId: string, cursorKey: CursorKey): string {
      const keyStart = signed(VERSION, connectionId, cursorKey);
      sipHash24(current.sip, w.buf, BLOCK, w.at, tag);
      // The cursor goes in front of the key in the scratch buffer: version and tag.
      const start = keyStart - 1 - TAG_BYTES;
      w.buf[start] = VERSION;
      w.buf.writeUInt32BE(tag[0]!, start + 1);
      w.buf.writeUInt32BE(tag[1]!, start + 5);
      return w.buf.toString('base64url', start, w.at);
    },
    decodeCursor(connectionId: string, cursor: string, options?: { maxLength?: number }): CursorKey | null {
      const found = verify(connectionId, cursor, options?.maxLength ?? MAX_CURSOR_LENGTH);
      return found && !retired.has(found.version) ? found.key : null;
    },
    isOutdated(connectionId: string, cursor: string): boolean {
      if (retired.size === 0) return false;
      const found = verify(connectionId, cursor, Number.MAX_SAFE_INTEGER);
      return found !== null && retired.has(found.version);
    },
  });
}

/** The key of a version-1 cursor signed with `secret`, or null. */
function decodeLegacy(secret: string, connectionId: string, raw: Buffer): CursorKey | null {
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
}
