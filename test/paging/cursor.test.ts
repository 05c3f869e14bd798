/**
 * The cursor codec: every key round-trips, the same row gives the same text, and a
 * forged, edited, truncated or foreign cursor is refused. Cursors are short (a binary
 * key, a 64-bit SipHash-2-4 tag, no connection id inside) and versioned; cursors of
 * versions 1 and 2 handed out before still decode, under the current secret and every
 * previous one, until a release retires them and says they are out of date.
 */
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCursorCodec } from '../../src/paging/cursor.js';
import { sipHash24, sipKeyOf } from '../../src/paging/siphash.js';
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
/** Keys the version-1 format can hold: JSON has no NaN, infinities or -0. */
const jsonKey = key.filter((k) => k.every((p) => typeof p !== 'number' || (Number.isFinite(p) && !Object.is(p, -0))));

/** The version-2 format: `[2][HMAC-SHA256 of version, id length, id, key; 16 bytes][key]`, the key as version 3 writes it. */
function version2Cursor(connectionId: string, k: CursorKey, secret = SECRET): string {
  const keyBytes = Buffer.from(createCursorCodec(secret).encodeCursor(connectionId, k), 'base64url').subarray(9);
  const signed = Buffer.concat([Buffer.from([2, Buffer.byteLength(connectionId)]), Buffer.from(connectionId), keyBytes]);
  const mac = createHmac('sha256', secret).update(signed).digest().subarray(0, 16);
  return Buffer.concat([Buffer.from([2]), mac, keyBytes]).toString('base64url');
}

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

  it('writes the version, a 64-bit tag and a 16-byte timeuuid: 35 characters for a post', () => {
    const cursor = codec.encodeCursor(CONNECTION, POST_KEY);
    const raw = Buffer.from(cursor, 'base64url');
    expect(raw[0]).toBe(3);
    expect(raw.length).toBe(1 + 8 + 1 + 16);
    expect(cursor).toHaveLength(35);
    // The connection id is bound by the tag, not written out.
    expect(raw.includes(Buffer.from('User.posts'))).toBe(false);
  });

  it('writes a lowercase dashed uuid as its 16 bytes, and any other text of 36 characters as text, each decoding to itself', () => {
    const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    // A uuid with one character replaced (upper case, a dash, a digit beyond f, anything).
    const nearUuid = fc
      .tuple(fc.uuid(), fc.nat(35), fc.constantFrom('A', 'F', 'a', '0', '9', '-', 'g', '/', ':', '`', '{', 'é', ' '))
      .map(([u, at, c]) => u.slice(0, at) + c + u.slice(at + 1));
    fc.assert(
      fc.property(fc.oneof(fc.uuid(), nearUuid, fc.string({ minLength: 36, maxLength: 36 })), (text) => {
        const raw = Buffer.from(codec.encodeCursor(CONNECTION, [text]), 'base64url');
        if (UUID_TEXT.test(text)) {
          expect(raw.length).toBe(1 + 8 + 1 + 16);
          expect(raw.subarray(10).toString('hex')).toBe(text.replaceAll('-', ''));
        } else {
          // The text tag, its length, its UTF-8 bytes.
          expect(raw[9]).toBe(4);
          expect(raw.subarray(11).toString('utf8')).toBe(text);
        }
        expect(codec.decodeCursor(CONNECTION, codec.encodeCursor(CONNECTION, [text]))).toEqual([text]);
      }),
      { numRuns: 1000 },
    );
  });

  it('tags with SipHash-2-4 of version, connection id and key, keyed by 128 bits of HMAC-SHA256(secret, label)', () => {
    for (const secret of [SECRET, 'x'.repeat(64), 'a much longer secret than one SHA-256 block of sixty-four bytes, so it is hashed first']) {
      const raw = Buffer.from(createCursorCodec(secret).encodeCursor(CONNECTION, POST_KEY), 'base64url');
      // version 3, the id's length and bytes, then the key as written in the cursor.
      const signed = Buffer.concat([Buffer.from([3, CONNECTION.length]), Buffer.from(CONNECTION), raw.subarray(9)]);
      const key = sipKeyOf(createHmac('sha256', secret).update('cursor tag key, SipHash-2-4, version 3').digest().subarray(0, 16));
      const tag = new Uint32Array(2);
      sipHash24(key, signed, 0, signed.length, tag);
      expect([raw.readUInt32BE(1), raw.readUInt32BE(5)]).toEqual([tag[0], tag[1]]);
    }
  });

  it('still reads version-2 and version-1 cursors of the same connection, and refuses forged or foreign ones', () => {
    fc.assert(
      fc.property(key, (k) => {
        expect(codec.decodeCursor(CONNECTION, version2Cursor(CONNECTION, k))).toEqual(k);
        expect(codec.decodeCursor('User.posts:other', version2Cursor(CONNECTION, k))).toBeNull();
        expect(codec.decodeCursor(CONNECTION, version2Cursor(CONNECTION, k, 'not-the-secret-0123456789'))).toBeNull();
      }),
      { numRuns: 200 },
    );
    expect(codec.decodeCursor(CONNECTION, legacyCursor(CONNECTION, POST_KEY))).toEqual(POST_KEY);
    expect(codec.decodeCursor('User.posts:other', legacyCursor(CONNECTION, POST_KEY))).toBeNull();
    expect(codec.decodeCursor(CONNECTION, legacyCursor(CONNECTION, POST_KEY, 'not-the-secret-0123456789'))).toBeNull();
    // An edited version-2 cursor fails like an edited version-3 one.
    const raw = Buffer.from(version2Cursor(CONNECTION, POST_KEY), 'base64url');
    for (let i = 0; i < raw.length; i++) {
      const edited = Buffer.from(raw);
      edited[i]! ^= 0x01;
      expect(codec.decodeCursor(CONNECTION, edited.toString('base64url'))).toBeNull();
    }
  });

  it('accepts what a previous secret signed, in every format, until that secret is dropped; signs with the current one', () => {
    const OLD = 'the-secret-before-rotation-0123';
    const before = createCursorCodec(OLD);
    const rotated = createCursorCodec(SECRET, { previousSecrets: [OLD] });
    const dropped = createCursorCodec(SECRET);
    fc.assert(
      fc.property(jsonKey, (k) => {
        for (const cursor of [before.encodeCursor(CONNECTION, k), version2Cursor(CONNECTION, k, OLD), legacyCursor(CONNECTION, k, OLD)]) {
          expect(rotated.decodeCursor(CONNECTION, cursor)).toEqual(k);
          expect(dropped.decodeCursor(CONNECTION, cursor)).toBeNull();
        }
        // New cursors are the current secret's: the same text as a codec without previous secrets.
        expect(rotated.encodeCursor(CONNECTION, k)).toBe(dropped.encodeCursor(CONNECTION, k));
        expect(before.decodeCursor(CONNECTION, rotated.encodeCursor(CONNECTION, k))).toBeNull();
      }),
      { numRuns: 100 },
    );
    expect(() => createCursorCodec(SECRET, { previousSecrets: ['short'] })).toThrow('at least 16 bytes');
  });

  it('says a genuine cursor of a retired format is out of date, and a forged one is not', () => {
    const retiring = createCursorCodec(SECRET, { retiredVersions: [1, 2] });
    for (const old of [version2Cursor(CONNECTION, POST_KEY), legacyCursor(CONNECTION, POST_KEY)]) {
      expect(retiring.decodeCursor(CONNECTION, old)).toBeNull();
      expect(retiring.isOutdated(CONNECTION, old)).toBe(true);
      // Today's codec retires nothing: the same cursor still reads.
      expect(codec.isOutdated(CONNECTION, old)).toBe(false);
      expect(codec.decodeCursor(CONNECTION, old)).toEqual(POST_KEY);
    }
    expect(retiring.isOutdated(CONNECTION, version2Cursor(CONNECTION, POST_KEY, 'not-the-secret-0123456789'))).toBe(false);
    expect(retiring.isOutdated('User.posts:other', version2Cursor(CONNECTION, POST_KEY))).toBe(false);
    const current = retiring.encodeCursor(CONNECTION, POST_KEY);
    expect(retiring.decodeCursor(CONNECTION, current)).toEqual(POST_KEY);
    expect(retiring.isOutdated(CONNECTION, current)).toBe(false);
  });

  it('refuses a secret shorter than 16 bytes', () => {
    expect(() => createCursorCodec('short')).toThrow('at least 16 bytes');
  });
});
