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
      if (type === 'timeuuid' && !isTimeuuid(lower)) return invalid(column, value, 'a version 1 (time-based) uuid');
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

function uuidBytes(text: string): Buffer {
  return Buffer.from(text.replace(/-/g, ''), 'hex');
}

/** Copy bytes 6-7, 4-5, 0-3 of uuid `b` (a v1 uuid's timestamp, high part first) into `out` at `at`. */
function copyReorderedTimestamp(b: Buffer, out: Buffer, at: number): void {
  b.copy(out, at, 6, 8);
  b.copy(out, at + 2, 4, 6);
  b.copy(out, at + 4, 0, 4);
}

// Flip the sign bit so two's complement sorts as unsigned big-endian.
function fixedInt32(value: number): Buffer {
  const out = Buffer.allocUnsafe(4);
  out.writeUInt32BE((value + 0x8000_0000) >>> 0);
  return out;
}

function fixedInt64(value: bigint): Buffer {
  const out = Buffer.allocUnsafe(8);
  out.writeBigUInt64BE(BigInt.asUintN(64, value + SIGN_64));
  return out;
}

/** The sign bit of a 64-bit value. */
const SIGN_64 = 1n << 63n;

/**
 * Order-preserving, prefix-free encoding of one value in ascending CQL order:
 * Buffer.compare on two encodings equals Cassandra's comparison of the values.
 */
export function encodeSortable(type: CqlType, value: CqlValue): Buffer {
  if (value === null) throw new StoreRequestError('a key column cannot be null');
  switch (type) {
    case 'text': {
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
    case 'timeuuid': {
      // One buffer, written in place: keys are encoded on every keyed call.
      const b = uuidBytes(value as string);
      const out = Buffer.allocUnsafe(16);
      copyReorderedTimestamp(b, out, 0);
      for (let i = 8; i < 16; i++) out[i] = b[i]! ^ 0x80;
      return out;
    }
    case 'uuid': {
      // UUIDType: version first; time-based uuids by timestamp; then unsigned bytes.
      const b = uuidBytes(value as string);
      const out = Buffer.allocUnsafe(17);
      out[0] = (b[6]! >> 4) & 0x0f;
      if (out[0] === 1) copyReorderedTimestamp(b, out, 1);
      else b.copy(out, 1, 0, 8);
      b.copy(out, 9, 8, 16);
      return out;
    }
    case 'int':
      return fixedInt32(value as number);
    case 'bigint':
    case 'counter':
      return fixedInt64(value as bigint);
    case 'timestamp':
      return fixedInt64(BigInt((value as Date).getTime()));
    case 'boolean':
      return Buffer.from([value ? 1 : 0]);
  }
}

/** Complement every byte: reverses the order of a prefix-free encoding (DESC columns). */
export function invertBytes(b: Buffer): Buffer {
  const out = Buffer.allocUnsafe(b.length);
  for (let i = 0; i < b.length; i++) out[i] = 0xff - b[i]!;
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
