/**
 * Value conversion between the port's plain values and what SQLite stores. The
 * Cassandra adapter's counterpart is `cassandra-values.ts`.
 */
import type { CqlType, CqlValue } from '../table.js';

/** The SQLite column type holding each CQL type. */
export const SQL_TYPE: Readonly<Record<CqlType, string>> = {
  uuid: 'TEXT',
  timeuuid: 'TEXT',
  text: 'TEXT',
  int: 'INTEGER',
  bigint: 'INTEGER',
  timestamp: 'INTEGER',
  boolean: 'INTEGER',
  counter: 'INTEGER',
};

/** A value as SQLite stores it. */
export function toSql(type: CqlType, value: CqlValue): unknown {
  if (value === null) return null;
  switch (type) {
    case 'timestamp':
      return BigInt((value as Date).getTime());
    case 'boolean':
      return value ? 1n : 0n;
    case 'int':
      return BigInt(value as number);
    default:
      return value;
  }
}

/** A value read back from SQLite (the database returns integers as bigint). */
export function fromSql(type: CqlType, raw: unknown): CqlValue {
  if (raw === null || raw === undefined) return null;
  switch (type) {
    case 'timestamp':
      return new Date(Number(raw));
    case 'boolean':
      return raw === 1n || raw === 1;
    case 'int':
      return Number(raw);
    case 'bigint':
    case 'counter':
      return BigInt(raw as bigint);
    default:
      return raw as string;
  }
}

/** The CQL wire serialization of a stored value, for Cassandra's tie-break by bytes. */
export function serializedSql(type: CqlType, raw: unknown): Buffer {
  switch (type) {
    case 'text':
      return Buffer.from(raw as string, 'utf8');
    case 'uuid':
    case 'timeuuid':
      return Buffer.from((raw as string).replace(/-/g, ''), 'hex');
    case 'int': {
      const b = Buffer.alloc(4);
      b.writeInt32BE(Number(raw));
      return b;
    }
    case 'boolean':
      return Buffer.from([Number(raw)]);
    default: {
      const b = Buffer.alloc(8);
      b.writeBigInt64BE(BigInt(raw as bigint));
      return b;
    }
  }
}

/**
 * The SQL expression reading a stored value for the row path: integers come back as
 * numbers (the statement reads without safe integers); bigint and counter values too
 * where a double holds them exactly, else as their exact decimal text (a counted
 * index's list row holds two: turning each into text in SQLite and parsing it back
 * cost more than the list's lookup).
 */
export function readExpression(type: CqlType, expression: string): string {
  return type === 'bigint' || type === 'counter'
    ? `CASE WHEN ${expression} BETWEEN ${-Number.MAX_SAFE_INTEGER} AND ${Number.MAX_SAFE_INTEGER} THEN ${expression} ELSE CAST(${expression} AS TEXT) END`
    : expression;
}

/** The port value of what `readExpression` read (null for SQL NULL). */
export function readerOf(type: CqlType): (raw: unknown) => CqlValue {
  switch (type) {
    case 'timestamp':
      return (raw) => (raw === null ? null : new Date(raw as number));
    case 'boolean':
      return (raw) => (raw === null ? null : raw === 1);
    case 'bigint':
    case 'counter':
      return (raw) => (raw === null ? null : BigInt(raw as number | string));
    default:
      return (raw) => (raw ?? null) as CqlValue;
  }
}
