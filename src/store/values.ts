/**
 * CQL values: validation, and an order-preserving byte encoding that reproduces
 * Cassandra's clustering order per type (seed 000's tables rely on it). The SQLite
 * adapter stores clustering keys in this encoding; the Cassandra adapter uses the same
 * comparator when it splits bounds, so "clustering order" is defined in one place.
 */
import { StoreRequestError } from './port.js';
import type { CqlType, CqlValue } from './table.js';

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The UUID rule: true for a uuid in canonical lower-case text form (how the port carries uuids). */
export function isUuid(text: string): boolean {
  return UUID_TEXT.test(text);
}

/** True for a lower-case version 1 (time-based) uuid, the only kind a `timeuuid` column holds. */
export function isTimeuuid(text: string): boolean {
  return isUuid(text) && text[14] === '1';
}
const INT_MIN = -(2 ** 31);
const INT_MAX = 2 ** 31 - 1;
const BIGINT_MIN = -(1n << 63n);
const BIGINT_MAX = (1n << 63n) - 1n;

/** Check a value against its CQL type; returns it normalised (uuids lower-cased). */
export function validateValue(type: CqlType, value: CqlValue, column: string): CqlValue {
  if (value === null) return null;
  // `invalid` is a function of its own, not a closure over the arguments: every key read
  // or written comes through here (101 of a 50-edge suspendedUsers page's statements).
  switch (type) {
    case 'uuid':
    case 'timeuuid': {
      if (typeof value !== 'string') return invalid(column, value, `a ${type} string`);
      const lower = value.toLowerCase();
      if (!isUuid(lower)) return invalid(column, value, `a ${type} string`);
      // (isTimeuuid without matching the pattern a second time.)
      if (type === 'timeuuid' && lower[14] !== '1') return invalid(column, value, 'a version 1 (time-based) uuid');
      return lower;
    }
    case 'text':
      return typeof value === 'string' ? value : invalid(column, value, 'a string');
    case 'int':
      return typeof value === 'number' && Number.isInteger(value) && value >= INT_MIN && value <= INT_MAX
        ? value
        : invalid(column, value, 'a 32-bit integer');
    case 'bigint':
    case 'counter':
      return typeof value === 'bigint' && value >= BIGINT_MIN && value <= BIGINT_MAX
        ? value
        : invalid(column, value, 'a 64-bit bigint');
    case 'timestamp':
      return value instanceof Date && !Number.isNaN(value.getTime()) ? value : invalid(column, value, 'a valid Date');
    case 'boolean':
      return typeof value === 'boolean' ? value : invalid(column, value, 'a boolean');
  }
}

/** The error of a value that does not fit its column's type. */
function invalid(column: string, value: CqlValue, expected: string): never {
  throw new StoreRequestError(`column "${column}" expects ${expected}, got ${describe(value)}`);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'bigint') return `${value}n`;
  if (value instanceof Date) return `Date(${value.toISOString?.() ?? 'invalid'})`;
  return `${typeof value} ${String(value)}`;
}

/** Where byte j of a uuid's 16 starts in its canonical text (8-4-4-4-12 hex digits). */
const UUID_BYTE_AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

/** The value of a lower-case hex digit's character code. */
function hexDigit(code: number): number {
  return code <= 57 ? code - 48 : code - 87;
}

/**
 * Byte j of a uuid in canonical text, read from its two digits: every keyed call encodes
 * a uuid or two, and a pattern replace and a hex decode made a string and a buffer each.
 */
function uuidByte(text: string, j: number): number {
  const at = UUID_BYTE_AT[j]!;
  return (hexDigit(text.charCodeAt(at)) << 4) | hexDigit(text.charCodeAt(at + 1));
}

/** Write bytes 6-7, 4-5, 0-3 of `uuid` (a v1 uuid's timestamp, high part first) into `out` at `at`. */
function writeReorderedTimestamp(uuid: string, out: Buffer, at: number): void {
  out[at] = uuidByte(uuid, 6);
  out[at + 1] = uuidByte(uuid, 7);
  out[at + 2] = uuidByte(uuid, 4);
  out[at + 3] = uuidByte(uuid, 5);
  for (let j = 0; j < 4; j++) out[at + 4 + j] = uuidByte(uuid, j);
}

/** The sign bit of a 64-bit value. */
const SIGN_64 = 1n << 63n;

/**
 * The width of a type's sortable encoding when it has one width (every type but text):
 * several such values are written into one buffer (`writeSortable`), not concatenated.
 */
export function sortableWidth(type: CqlType): number | null {
  switch (type) {
    case 'text':
      return null;
    case 'timeuuid':
      return 16;
    case 'uuid':
      return 17;
    case 'int':
      return 4;
    case 'boolean':
      return 1;
    default:
      return 8;
  }
}

/** Write the sortable encoding (`encodeSortable`) of a value of a type with a `sortableWidth` into `out` at `at`. */
export function writeSortable(type: CqlType, value: CqlValue, out: Buffer, at: number): void {
  if (value === null) throw new StoreRequestError('a key column cannot be null');
  switch (type) {
    case 'timeuuid': {
      const uuid = value as string;
      writeReorderedTimestamp(uuid, out, at);
      for (let j = 8; j < 16; j++) out[at + j] = uuidByte(uuid, j) ^ 0x80;
      return;
    }
    case 'uuid': {
      // UUIDType: version first; time-based uuids by timestamp; then unsigned bytes.
      const uuid = value as string;
      const version = (uuidByte(uuid, 6) >> 4) & 0x0f;
      out[at] = version;
      if (version === 1) writeReorderedTimestamp(uuid, out, at + 1);
      else for (let j = 0; j < 8; j++) out[at + 1 + j] = uuidByte(uuid, j);
      for (let j = 8; j < 16; j++) out[at + 1 + j] = uuidByte(uuid, j);
      return;
    }
    // Integers: the sign bit flipped, so two's complement sorts as unsigned big-endian.
    case 'int':
      out.writeUInt32BE(((value as number) + 0x8000_0000) >>> 0, at);
      return;
    case 'bigint':
    case 'counter':
      out.writeBigUInt64BE(BigInt.asUintN(64, (value as bigint) + SIGN_64), at);
      return;
    case 'timestamp':
      out.writeBigUInt64BE(BigInt.asUintN(64, BigInt((value as Date).getTime()) + SIGN_64), at);
      return;
    case 'boolean':
      out[at] = value ? 1 : 0;
      return;
    case 'text':
      throw new Error('text has no fixed width: encode it with encodeSortable');
  }
}

/**
 * Order-preserving, prefix-free encoding of one value in ascending CQL order:
 * Buffer.compare on two encodings equals Cassandra's comparison of the values.
 */
export function encodeSortable(type: CqlType, value: CqlValue): Buffer {
  if (value === null) throw new StoreRequestError('a key column cannot be null');
  if (type === 'text') {
    // UTF8Type compares raw UTF-8 bytes. Escape 0x00 so the terminator sorts first.
    const text = value as string;
    if (!text.includes('\u0000')) {
      // No 0x00 byte to escape (UTF-8 writes one only for U+0000): the bytes, then the terminator.
      const length = Buffer.byteLength(text, 'utf8');
      const out = Buffer.allocUnsafe(length + 2);
      out.write(text, 0, 'utf8');
      out[length] = 0;
      out[length + 1] = 1;
      return out;
    }
    const raw = Buffer.from(text, 'utf8');
    const parts: number[] = [];
    for (const byte of raw) {
      if (byte === 0) parts.push(0, 0xff);
      else parts.push(byte);
    }
    parts.push(0, 1);
    return Buffer.from(parts);
  }
  // One buffer, written in place: keys are encoded on every keyed call.
  const out = Buffer.allocUnsafe(sortableWidth(type)!);
  writeSortable(type, value, out, 0);
  return out;
}

/** Complement bytes `from` to `to` of `b` in place (a DESC column's part of a key being built). */
export function invertBytesIn(b: Buffer, from: number, to: number): void {
  for (let i = from; i < to; i++) b[i] = 0xff - b[i]!;
}

/** Complement every byte: reverses the order of a prefix-free encoding (DESC columns). */
export function invertBytes(b: Buffer): Buffer {
  const out = Buffer.from(b);
  invertBytesIn(out, 0, out.length);
  return out;
}

/** Compare two values of one CQL type in ascending Cassandra order. */
export function compareValues(type: CqlType, a: CqlValue, b: CqlValue): number {
  return Buffer.compare(encodeSortable(type, a), encodeSortable(type, b));
}

/** Equality of two values of one type (dates by time, bigints by value). */
export function sameValue(type: CqlType, a: CqlValue, b: CqlValue): boolean {
  if (a === null || b === null) return a === b;
  return compareValues(type, a, b) === 0;
}
