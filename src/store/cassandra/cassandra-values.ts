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
      return boundUuid(type, value as string) ?? types.Uuid.fromString(value as string);
    case 'timeuuid':
      return boundUuid(type, value as string) ?? types.TimeUuid.fromString(value as string);
    default:
      return value;
  }
}

/**
 * A uuid's text bound as the driver takes it, checked as it is read: null when it is not
 * a dashed uuid (upper or lower case), or for a timeuuid not one of version 1. What it
 * binds is what `validateValue` accepts, so a key bound here needs no other check (the
 * pattern test and the lower-cased copy `validateValue` makes are a third of a uuid's
 * binding; a 50-edge suspendedUsers page binds 101).
 */
export function boundUuid(type: 'uuid' | 'timeuuid', text: string): InstanceType<typeof types.Uuid> | null {
  if (type === 'timeuuid' && text.charCodeAt(14) !== 0x31) return null;
  const bytes = uuidBytes(text);
  if (bytes === null) return null;
  return type === 'uuid' ? new types.Uuid(bytes) : new types.TimeUuid(bytes);
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

/** One row of a driver result, read by column name (`CassandraRowLike`). */
interface DriverRow {
  get(column: string): unknown;
}

/**
 * A reader of one table's rows: a driver row as a port row, made as one object literal
 * of the table's columns in declaration order, each converted by `fromDriver` with its
 * type written in. Built once per table. A row made by adding its columns one by one
 * to `{}` keeps four of them in the object and the rest in a properties array that
 * grows (and is copied) as they come, then changes shape at every column: every row
 * read comes through here (101 of a 50-edge suspendedUsers page's 103 statements answer
 * one each), so a literal of the exact shape is one allocation and no transitions
 * (docs/benchmarks-history.md, issue 39: the keyed reads). Column names are checked
 * identifiers (`checkIdentifier`), and quoted besides.
 *
 * The columns in `given` are not read from the driver's row: the statement did not
 * select them, and the reader takes them from its second argument, the key or
 * partition the statement named, validated and bound already (a keyed read's key
 * columns, a slice's partition key). A row then shares the key's own strings rather
 * than a fresh copy of each (and the driver decodes no uuid object for it): a page's
 * rows live until its response is sent, and what lives through its waves is what the
 * young generation's scavenges copy and promote (issue 39, round three).
 */
export function rowReader(
  columns: ReadonlyArray<readonly [string, CqlType]>,
  given: ReadonlySet<string> = new Set(),
): (raw: DriverRow, key?: Readonly<Record<string, CqlValue>>) => Record<string, CqlValue> {
  const cell = ([name, type]: readonly [string, CqlType]) => {
    const [n, t] = [JSON.stringify(name), JSON.stringify(type)];
    return `${n}: ${given.has(name) ? `known(${t}, key[${n}])` : `from(${t}, raw.get(${n}))`}`;
  };
  return new Function('from', 'known', `return function readRow(raw, key) { return { ${columns.map(cell).join(', ')} }; };`)(fromDriver, knownValue);
}

/**
 * A known key value as a row carries it: as it is, but a uuid in its lower-case form (a
 * validated key's is already; `toLowerCase` then returns the string itself) and a
 * timestamp as a Date of its own (a row's Date is the caller's to keep).
 */
export function knownValue(type: CqlType, value: CqlValue): CqlValue {
  if (value === null) return null;
  if (type === 'uuid' || type === 'timeuuid') return (value as string).toLowerCase();
  if (type === 'timestamp') return new Date((value as Date).getTime());
  return value;
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

/** A hex digit's value, or -1. */
function hexValue(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  const lower = code | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

/**
 * The 16 bytes of a uuid's dashed text, or null when it is not one (the driver's own
 * parser then says why). The driver's `Uuid.fromString` strips the dashes into a new
 * string and decodes that as hex; every key bound (101 of a 50-edge suspendedUsers
 * page's 103 statements bind one) comes through here, so it is read in one pass.
 */
export function uuidBytes(text: string): Buffer | null {
  if (text.length !== 36) return null;
  const out = Buffer.allocUnsafe(16);
  let at = 0;
  for (let i = 0; i < 36; i += 2) {
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (text.charCodeAt(i) !== 0x2d) return null;
      i--;
      continue;
    }
    const high = hexValue(text.charCodeAt(i));
    const low = hexValue(text.charCodeAt(i + 1));
    if (high < 0 || low < 0) return null;
    out[at++] = (high << 4) | low;
  }
  return out;
}
