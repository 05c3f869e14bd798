/** The DateTime scalar's output: `toISOString`'s text, written without the runtime call. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DateTimeScalar, isoOf } from '../../src/graphql/scalars.js';

describe('DateTime output', () => {
  it("gives toISOString's text for every instant a Date holds", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ min: 0, max: 253_402_300_799_999 }), fc.integer({ min: -8.64e15, max: 8.64e15 }), fc.constantFrom(0, 951_782_400_000, 4_107_542_400_000, 253_402_300_799_999, 253_402_300_800_000, -1)),
        (ms) => {
          expect(isoOf(ms)).toBe(new Date(ms).toISOString());
          expect(DateTimeScalar.serialize(new Date(ms))).toBe(new Date(ms).toISOString());
        },
      ),
      { numRuns: 20_000 },
    );
  });

  it('refuses what is not a valid date', () => {
    expect(() => DateTimeScalar.serialize(new Date(Number.NaN))).toThrow('DateTime cannot represent a non-date value');
    expect(() => DateTimeScalar.serialize('2026-01-01T00:00:00Z')).toThrow('DateTime cannot represent a non-date value');
  });
});
