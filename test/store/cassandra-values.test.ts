import cassandra from 'cassandra-driver';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { boundUuid, fromDriver, rowReader, toDriver, uuidBytes, uuidText } from '../../src/store/cassandra/cassandra-values.js';
import { validateValue } from '../../src/store/values.js';

const { types } = cassandra;

describe('Cassandra value conversion', () => {
  it('prints any 16 bytes as the driver prints them (lowercase, dashed)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), (bytes) => {
        expect(uuidText(bytes)).toBe(new types.Uuid(Buffer.from(bytes)).toString());
      }),
      { numRuns: 500 },
    );
    expect(uuidText(new Uint8Array(16))).toBe('00000000-0000-0000-0000-000000000000');
    expect(uuidText(new Uint8Array(16).fill(0xff))).toBe('ffffffff-ffff-ffff-ffff-ffffffffffff');
  });

  it('reads uuids and timeuuids back as the text they were bound from', () => {
    const timeuuid = types.TimeUuid.now().toString();
    const uuid = types.Uuid.random().toString();
    expect(fromDriver('timeuuid', toDriver('timeuuid', timeuuid))).toBe(timeuuid);
    expect(fromDriver('uuid', toDriver('uuid', uuid))).toBe(uuid);
    // Text the driver hands back as a string is lower-cased, as it always was.
    expect(fromDriver('uuid', uuid.toUpperCase())).toBe(uuid);
    expect(fromDriver('uuid', null)).toBeNull();
  });

  it('makes a new string each time, not one that changes under an earlier caller', () => {
    const a = types.Uuid.random();
    const b = types.Uuid.random();
    const first = fromDriver('uuid', a);
    fromDriver('uuid', b);
    expect(first).toBe(a.toString());
  });
});

describe('reading rows', () => {
  it("reads a driver row as one object of the table's columns, in declaration order, each converted as fromDriver converts it", () => {
    const columns = [
      ['user_id', 'uuid'],
      ['name_ts', 'bigint'],
      ['rank', 'int'],
      ['note', 'text'],
      ['at', 'timestamp'],
      ['missing', 'timeuuid'],
    ] as const;
    const id = types.Uuid.random();
    const at = new Date(1_700_000_000_000);
    const cells: Record<string, unknown> = { user_id: id, name_ts: 7n, rank: 3, note: 'n', at };
    const row = rowReader(columns)({ get: (column) => cells[column] });
    expect(row).toStrictEqual({ user_id: id.toString(), name_ts: 7n, rank: 3, note: 'n', at, missing: null });
    expect(Object.keys(row)).toEqual(columns.map(([name]) => name));
  });

  it('takes the columns a statement did not select from the key it read, in the same shape, uuids lower-cased and dates copied', () => {
    const columns = [
      ['bucket', 'text'],
      ['user_id', 'uuid'],
      ['at', 'timestamp'],
      ['reason', 'text'],
    ] as const;
    const read = rowReader(columns, new Set(['bucket', 'user_id', 'at']));
    const at = new Date(1_700_000_000_000);
    const key = { bucket: '2026-11', user_id: '0F8FAD5B-D9CB-469F-A165-70867728950E', at };
    const asked: string[] = [];
    const row = read({ get: (column) => (asked.push(column), column === 'reason' ? 'spam' : 'not selected') }, key);
    expect(row).toStrictEqual({ bucket: '2026-11', user_id: '0f8fad5b-d9cb-469f-a165-70867728950e', at, reason: 'spam' });
    expect(Object.keys(row)).toEqual(columns.map(([name]) => name));
    expect(asked).toEqual(['reason']);
    expect(row.at).not.toBe(at);
    expect(row.bucket).toBe(key.bucket);
  });
});

describe('binding uuids', () => {
  it('binds any uuid text to the bytes the driver parses from it, upper or lower case', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.boolean(), (uuid, upper) => {
        const text = upper ? uuid.toUpperCase() : uuid;
        expect(uuidBytes(text)).toEqual(types.Uuid.fromString(text).getBuffer());
        expect((toDriver('uuid', text) as InstanceType<typeof types.Uuid>).toString()).toBe(uuid);
        expect(toDriver('timeuuid', text)).toBeInstanceOf(types.TimeUuid);
      }),
      { numRuns: 500 },
    );
  });

  it('binds a key uuid at once exactly when the port accepts it, to the value it accepts', () => {
    const accepted = (type: 'uuid' | 'timeuuid', text: string) => {
      try {
        return validateValue(type, text, 'k') as string;
      } catch {
        return null;
      }
    };
    const text = fc.oneof(
      fc.uuid().map((u) => u),
      fc.uuid().map((u) => u.toUpperCase()),
      fc.uuid().map((u) => `${u.slice(0, 14)}1${u.slice(15)}`),
      fc.uuid().map((u) => u.replace(/-/g, '_')),
      fc.string({ minLength: 36, maxLength: 36 }),
      fc.string(),
    );
    fc.assert(
      fc.property(text, fc.constantFrom('uuid' as const, 'timeuuid' as const), (t, type) => {
        const bound = boundUuid(type, t);
        expect(bound?.toString() ?? null).toBe(accepted(type, t));
        if (bound) expect(bound).toBeInstanceOf(type === 'uuid' ? types.Uuid : types.TimeUuid);
      }),
      { numRuns: 2000 },
    );
  });

  it('leaves text that is not a dashed uuid to the driver, which refuses it', () => {
    for (const bad of ['', 'not a uuid', '0123456789abcdef0123456789abcdef0123', 'g0000000-0000-0000-0000-000000000000', '00000000-0000-0000-0000-00000000000', '00000000_0000-0000-0000-000000000000']) {
      expect(uuidBytes(bad)).toBeNull();
    }
    expect(() => toDriver('uuid', 'not a uuid')).toThrow(/Invalid string representation of Uuid/);
  });
});
