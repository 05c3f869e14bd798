/**
 * The order-preserving key encoding, byte for byte, for the types whose encoding moves
 * bytes around (uuid, timeuuid): the embedded store looks rows up by these bytes, so an
 * encoding that differs between two calls for one value would lose rows.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { v1 as uuidv1 } from 'uuid';
import { describe, expect, it } from 'vitest';
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
