/**
 * The cursor codec: every key round-trips, the same row gives the same text, and a
 * forged, edited, truncated or foreign cursor is refused. Cursors are short (a binary
 * key, a 128-bit MAC, no connection id inside) and versioned; version-1 cursors handed
 * out before the compact format still decode.
 */
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCursorCodec } from '../../src/paging/cursor.js';
import type { CursorKey } from '../../src/paging/types.js';

const SECRET = 'cursor-test-secret-0123456789';
const codec = createCursorCodec(SECRET);
const CONNECTION = 'User.posts:6f1e2f4a-1c2d-4e5f-8a9b-0c1d2e3f4a5b';
const POST_KEY: CursorKey = ['a1b2c3d4-0000-11f0-8000-0123456789ab'];

const part = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.uuid(),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.integer(),
  fc.maxSafeInteger(),
  fc.double(),
);
const key = fc.array(part, { maxLength: 5 });

/** The version-1 format: base64url(MAC over the JSON, then the JSON). */
function legacyCursor(connectionId: string, k: CursorKey, secret = SECRET): string {
  const payload = Buffer.from(JSON.stringify([1, connectionId, k]), 'utf8');
  const mac = createHmac('sha256', secret).update(payload).digest().subarray(0, 16);
  return Buffer.concat([mac, payload]).toString('base64url');
}

describe('cursor codec', () => {
  it('decodes every key it encodes, exactly, and encodes the same key to the same text', () => {
    fc.assert(
      fc.property(key, fc.string({ maxLength: 60 }), (k, connection) => {
        const cursor = codec.encodeCursor(connection, k);
        expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(codec.encodeCursor(connection, [...k])).toBe(cursor);
        expect(codec.decodeCursor(connection, cursor)).toEqual(k);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses a cursor of another connection, or signed with another secret', () => {
    fc.assert(
      fc.property(key, fc.string({ maxLength: 60 }), fc.string({ maxLength: 60 }), (k, a, b) => {
        fc.pre(a !== b);
        expect(codec.decodeCursor(b, codec.encodeCursor(a, k))).toBeNull();
      }),
    );
    const other = createCursorCodec('another-secret-0123456789');
    expect(codec.decodeCursor(CONNECTION, other.encodeCursor(CONNECTION, POST_KEY))).toBeNull();
  });

  it('refuses a cursor with any one byte changed, or cut short, or lengthened', () => {
    const raw = Buffer.from(codec.encodeCursor(CONNECTION, ['some text', 42, -7, 1.5, true, null]), 'base64url');
    for (let i = 0; i < raw.length; i++) {
      for (const flip of [0x01, 0x80, 0xff]) {
        const edited = Buffer.from(raw);
        edited[i]! ^= flip;
        expect(codec.decodeCursor(CONNECTION, edited.toString('base64url'))).toBeNull();
      }
      expect(codec.decodeCursor(CONNECTION, raw.subarray(0, i).toString('base64url'))).toBeNull();
    }
    expect(codec.decodeCursor(CONNECTION, Buffer.concat([raw, Buffer.from([0])]).toString('base64url'))).toBeNull();
  });

  it('refuses text that is not canonical base64url, empty, or too long', () => {
    const good = codec.encodeCursor(CONNECTION, POST_KEY);
    for (const bad of ['', `${good}=`, `${good} `, good.replace(/.$/, '+'), 'A'.repeat(5000)]) {
      expect(codec.decodeCursor(CONNECTION, bad)).toBeNull();
    }
  });

  it('writes the version, a 128-bit MAC and a 16-byte timeuuid: 46 characters for a post', () => {
    const cursor = codec.encodeCursor(CONNECTION, POST_KEY);
    const raw = Buffer.from(cursor, 'base64url');
    expect(raw[0]).toBe(2);
    expect(raw.length).toBe(1 + 16 + 1 + 16);
    expect(cursor).toHaveLength(46);
    // The connection id is bound by the MAC, not written out.
    expect(raw.includes(Buffer.from('User.posts'))).toBe(false);
  });

  it('signs with HMAC-SHA256 of version, connection id and key, truncated to 128 bits, for short and long secrets', () => {
    for (const secret of [SECRET, 'x'.repeat(64), 'a much longer secret than one SHA-256 block of sixty-four bytes, so it is hashed first']) {
      const raw = Buffer.from(createCursorCodec(secret).encodeCursor(CONNECTION, POST_KEY), 'base64url');
      // version 2, the id's length and bytes, then the key as written in the cursor.
      const signed = Buffer.concat([Buffer.from([2, CONNECTION.length]), Buffer.from(CONNECTION), raw.subarray(17)]);
      expect(raw.subarray(1, 17)).toEqual(createHmac('sha256', secret).update(signed).digest().subarray(0, 16));
    }
  });

  it('still reads version-1 cursors of the same connection, and refuses forged or foreign ones', () => {
    expect(codec.decodeCursor(CONNECTION, legacyCursor(CONNECTION, POST_KEY))).toEqual(POST_KEY);
    expect(codec.decodeCursor('User.posts:other', legacyCursor(CONNECTION, POST_KEY))).toBeNull();
    expect(codec.decodeCursor(CONNECTION, legacyCursor(CONNECTION, POST_KEY, 'not-the-secret-0123456789'))).toBeNull();
  });

  it('refuses a secret shorter than 16 bytes', () => {
    expect(() => createCursorCodec('short')).toThrow('at least 16 bytes');
  });
});
