/**
 * The keyed reads' routing tokens (`RoutedReads`), without a cluster: a partition's
 * options are made once and handed out again, its token from the driver's metadata over
 * the key's bytes; the cache holds two generations of partitions at most; with no
 * partitioner known the driver routes as it always does. That the token is the one
 * Cassandra computes is shown on a real node in cassandra-store.test.ts.
 */
import type cassandra from 'cassandra-driver';
import { describe, expect, it } from 'vitest';
import { RoutedReads } from '../../src/store/cassandra/cassandra-routing.js';
import { uuidBytes } from '../../src/store/cassandra/cassandra-values.js';

const BASE: cassandra.QueryOptions = { prepare: true, isIdempotent: true, fetchSize: 5_000 };
const ids = (n: number) => Array.from({ length: n }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);

/** Driver metadata whose token of a key is its bytes in hex, counting what it was asked. */
class HexTokens {
  readonly asked: string[] = [];
  newToken(bytes: Buffer): string {
    this.asked.push(bytes.toString('hex'));
    return `token:${bytes.toString('hex')}`;
  }
}

describe("keyed reads' routing tokens", () => {
  it("gives a partition's read the base options with the token of its key's bytes, made once and handed out again", () => {
    const metadata = new HexTokens();
    const routed = new RoutedReads(metadata, BASE, 10);
    const [a, b] = ids(2);
    const first = routed.optionsOf(a!, uuidBytes(a!)!);
    expect(first).toEqual({ ...BASE, routingKey: `token:${a!.replaceAll('-', '')}` });
    expect(routed.optionsOf(a!, uuidBytes(a!)!)).toBe(first);
    expect(routed.optionsOf(b!, uuidBytes(b!)!)).toEqual({ ...BASE, routingKey: `token:${b!.replaceAll('-', '')}` });
    expect(metadata.asked).toEqual([a, b].map((id) => id!.replaceAll('-', '')));
  });

  it('keeps at most two generations of partitions, those read again staying', () => {
    const metadata = new HexTokens();
    const routed = new RoutedReads(metadata, BASE, 3);
    const keys = ids(8);
    const read = (id: string) => routed.optionsOf(id, uuidBytes(id)!);
    // 0 1 2 fill the first generation; 3 starts a second; 0, read again, moves into it.
    for (const id of keys.slice(0, 4)) read(id);
    read(keys[0]!);
    expect(metadata.asked).toHaveLength(4);
    // 4 fills the second (3, 0, 4); 5 starts a third: 1 and 2 are gone, 3, 0 and 4 held.
    read(keys[4]!);
    read(keys[5]!);
    const before = metadata.asked.length;
    for (const id of [keys[3]!, keys[0]!, keys[4]!, keys[5]!]) read(id);
    expect(metadata.asked.length).toBe(before);
    read(keys[1]!);
    expect(metadata.asked.length).toBe(before + 1);
  });

  it('gives the base options, routing left to the driver, to a client without the metadata or while it knows no partitioner', () => {
    const [a] = ids(1);
    expect(new RoutedReads({}, BASE, 10).optionsOf(a!, uuidBytes(a!)!)).toBe(BASE);
    let connected = false;
    const metadata = {
      newToken(bytes: Buffer) {
        if (!connected) throw new Error('Partitioner not established.');
        return `token:${bytes.toString('hex')}`;
      },
    };
    const routed = new RoutedReads(metadata, BASE, 10);
    expect(routed.optionsOf(a!, uuidBytes(a!)!)).toBe(BASE);
    connected = true;
    expect(routed.optionsOf(a!, uuidBytes(a!)!)).toEqual({ ...BASE, routingKey: `token:${a!.replaceAll('-', '')}` });
  });
});
