/**
 * Value conversion between the port's plain values and the driver's types. The SQLite
 * adapter's counterpart is `sqlite-values.ts`.
 */
import cassandra from 'cassandra-driver';
import type { CqlType, CqlValue } from '../table.js';

const { types } = cassandra;

/** A port value as the driver binds it. */
export function toDriver(type: CqlType, value: CqlValue): unknown {
  if (value === null) return null;
  switch (type) {
    case 'uuid':
      return types.Uuid.fromString(value as string);
    case 'timeuuid':
      return types.TimeUuid.fromString(value as string);
    default:
      return value;
  }
}

/** A driver value as the port returns it. */
export function fromDriver(type: CqlType, raw: unknown): CqlValue {
  if (raw === null || raw === undefined) return null;
  switch (type) {
    case 'uuid':
    case 'timeuuid':
      return typeof raw === 'string' ? raw.toLowerCase() : uuidText((raw as cassandra.types.Uuid).getBuffer());
    case 'bigint':
    case 'counter':
      return BigInt(raw as bigint);
    case 'int':
      return Number(raw);
    default:
      return raw as CqlValue;
  }
}

const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
/** Where `uuidText` writes: one buffer, reused (the process is single-threaded). */
const uuidScratch = Buffer.alloc(36);

/**
 * The lowercase text of a uuid's 16 bytes, made as one flat string. The driver's own
 * `Uuid.toString` joins nine pieces, which V8 keeps as a rope of about ten objects until
 * something flattens it. Every uuid of every row read comes through here, and rows live
 * while their page is in flight, so those objects are what the young generation's
 * scavenges copy (BENCHMARKS, "Cassandra").
 */
export function uuidText(bytes: Uint8Array): string {
  let at = 0;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) uuidScratch[at++] = 0x2d; // '-'
    const b = bytes[i]!;
    uuidScratch[at++] = HEX_DIGITS[b >> 4]!;
    uuidScratch[at++] = HEX_DIGITS[b & 0x0f]!;
  }
  return uuidScratch.toString('latin1', 0, 36);
}
