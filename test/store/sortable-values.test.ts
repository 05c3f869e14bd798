/**
 * The order-preserving key encoding, byte for byte, for the types whose encoding moves
 * bytes around (uuid, timeuuid) and those written in place (integers, text without a
 * 0x00 byte): the embedded store looks rows up by these bytes, so an encoding that
 * differs between two calls for one value would lose rows.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { v1 as uuidv1 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { encodeClusteringPrefix } from '../../src/store/sqlite/sqlite-keys.js';
import { defineTable, type CqlValue } from '../../src/store/table.js';
import { encodeSortable } from '../../src/store/values.js';

describe('the sortable encoding of uuids', () => {
  it("puts a timeuuid's timestamp first (bytes 6-7, 4-5, 0-3), then its last eight bytes as signed bytes", () => {
    const id = '00112233-4455-1677-8899-aabbccddeeff';
    expect(encodeSortable('timeuuid', id).toString('hex')).toBe('1677445500112233' + '08192a3b4c5d6e7f');
  });

  it('puts a uuid\'s version first, then a time-based one\'s timestamp, or a random one\'s bytes as they are', () => {
    expect(encodeSortable('uuid', '00112233-4455-1677-8899-aabbccddeeff').toString('hex')).toBe('01' + '1677445500112233' + '8899aabbccddeeff');
    expect(encodeSortable('uuid', '00112233-4455-4677-8899-aabbccddeeff').toString('hex')).toBe('04' + '0011223344554677' + '8899aabbccddeeff');
  });

  it('gives the same bytes every time for the same value (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom('uuid' as const, 'timeuuid' as const), (type) => {
        const id = type === 'uuid' ? randomUUID() : uuidv1();
        const first = encodeSortable(type, id);
        // Fill the allocator's pool with garbage in between: nothing may depend on it.
        Buffer.allocUnsafe(64).fill(0xa5);
        expect(encodeSortable(type, id).equals(first)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});

describe('the sortable encoding of integers and text', () => {
  it('writes an int as 4 and a bigint or timestamp as 8 big-endian bytes with the sign bit flipped', () => {
    expect(encodeSortable('int', -1).toString('hex')).toBe('7fffffff');
    expect(encodeSortable('int', 0).toString('hex')).toBe('80000000');
    expect(encodeSortable('int', 2 ** 31 - 1).toString('hex')).toBe('ffffffff');
    expect(encodeSortable('int', -(2 ** 31)).toString('hex')).toBe('00000000');
    expect(encodeSortable('bigint', -(2n ** 63n)).toString('hex')).toBe('0000000000000000');
    expect(encodeSortable('bigint', 2n ** 63n - 1n).toString('hex')).toBe('ffffffffffffffff');
    expect(encodeSortable('bigint', 258n).toString('hex')).toBe('8000000000000102');
    expect(encodeSortable('timestamp', new Date(-1)).toString('hex')).toBe('7fffffffffffffff');
  });

  it('orders integers by value, byte for byte (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (a, b, x, y) => {
        expect(Math.sign(Buffer.compare(encodeSortable('int', a), encodeSortable('int', b)))).toBe(Math.sign(a - b));
        expect(Math.sign(Buffer.compare(encodeSortable('bigint', x), encodeSortable('bigint', y)))).toBe(x < y ? -1 : x > y ? 1 : 0);
      }),
      { numRuns: 500 },
    );
  });

  it('writes text as its UTF-8 bytes, each 0x00 escaped as 00 ff, then the terminator 00 01', () => {
    expect(encodeSortable('text', 'aé').toString('hex')).toBe('61c3a90001');
    expect(encodeSortable('text', 'a\u0000b').toString('hex')).toBe('6100ff620001');
    expect(encodeSortable('text', '').toString('hex')).toBe('0001');
  });
});

describe('a clustering key of several columns', () => {
  const mixed = defineTable({
    name: 'mixed',
    columns: { p: 'uuid', a: 'int', b: 'bigint', c: 'timeuuid', d: 'text' },
    partitionKey: ['p'],
    clustering: [
      { column: 'a', order: 'ASC' },
      { column: 'b', order: 'DESC' },
      { column: 'c', order: 'DESC' },
      { column: 'd', order: 'ASC' },
    ],
  });
  // Each column's encoding, complemented for a DESC column, one after the other.
  const byColumns = (values: readonly CqlValue[]) =>
    Buffer.concat(values.map((v, i) => {
      const bytes = Buffer.from(encodeSortable(mixed.columns[mixed.clustering[i]!.column]!, v));
      return mixed.clustering[i]!.order === 'DESC' ? Buffer.from(bytes.map((x) => 0xff - x)) : bytes;
    }));

  it('is each column\'s encoding in turn, a DESC column\'s complemented, for every prefix, written in one buffer or not (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
        fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n }),
        fc.string(),
        fc.integer({ min: 0, max: 4 }),
        (a, b, d, length) => {
          const values = [a, b, uuidv1(), d].slice(0, length);
          expect(encodeClusteringPrefix(mixed, values).toString('hex')).toBe(byColumns(values).toString('hex'));
        },
      ),
    );
  });
});
