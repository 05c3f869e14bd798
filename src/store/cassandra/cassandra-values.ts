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
      // The driver's Uuid prints lowercase hex already.
      return typeof raw === 'string' ? raw.toLowerCase() : String(raw);
    case 'bigint':
    case 'counter':
      return BigInt(raw as bigint);
    case 'int':
      return Number(raw);
    default:
      return raw as CqlValue;
  }
}
