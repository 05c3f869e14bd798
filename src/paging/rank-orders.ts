/**
 * Ranks of clustering values (ranked-index.ts's `RankOrder`): 60-bit numbers that never
 * decrease in the store's clustering order, for the connections whose keys are not one
 * timeuuid. A rank keeps the top bits of a value's sort key; values that share them
 * share a rank, and the source itself tells them apart (a leaf's edges are read), so a
 * rank need only be monotone, never unique. The fewer values share a rank, the fewer
 * edges a jump reads past in its leaf.
 */
import { RANK_BITS, type RankOrder } from './ranked-index.js';

/** The highest rank. */
export const RANK_TOP = (1n << BigInt(RANK_BITS)) - 1n;

/** Which end of the values of one rank a key built from it stands at. */
export type RankFill = 'lowest' | 'highest';

/** The mask of the low `bits` bits. */
export const lowBits = (bits: number): bigint => (1n << BigInt(bits)) - 1n;

/** A uuid's 16 bytes. */
function bytesOf(uuid: string): Buffer {
  return Buffer.from(uuid.replace(/-/g, ''), 'hex');
}

function uuidText(b: Buffer): string {
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const readBig = (b: Buffer, from: number, to: number) => {
  let v = 0n;
  for (let i = from; i < to; i++) v = (v << 8n) | BigInt(b[i]!);
  return v;
};

const writeBig = (b: Buffer, from: number, to: number, value: bigint) => {
  let v = value;
  for (let i = to - 1; i >= from; i--) {
    b[i] = Number(v & 0xffn);
    v >>= 8n;
  }
};

/**
 * A uuid's rank in Cassandra's UUIDType order (store/values.ts, `encodeSortable`): its
 * version (4 bits), then the top 56 of the 60 bits it is ordered by after the version
 * (a time-based uuid's timestamp; any other's first 8 bytes, version nibble left out).
 */
export function uuidRank(uuid: string): bigint {
  const b = bytesOf(uuid);
  const version = BigInt(b[6]! >> 4);
  const next =
    version === 1n
      ? (BigInt(b[6]! & 0x0f) << 56n) | (BigInt(b[7]!) << 48n) | (readBig(b, 4, 6) << 32n) | readBig(b, 0, 4)
      : (readBig(b, 0, 6) << 12n) | (BigInt(b[6]! & 0x0f) << 8n) | BigInt(b[7]!);
  return (version << 56n) | (next >> 4n);
}

/** The lowest (or highest) uuid of rank `rank` (`uuidRank`): where a read of that rank starts. */
export function uuidAtRank(rank: bigint, fill: RankFill): string {
  const version = Number(rank >> 56n) & 0x0f;
  const next = ((rank & lowBits(56)) << 4n) | (fill === 'lowest' ? 0n : 0xfn);
  const b = Buffer.alloc(16, fill === 'lowest' ? 0 : 0xff);
  if (version === 1) {
    b[6] = 0x10 | Number(next >> 56n);
    b[7] = Number((next >> 48n) & 0xffn);
    writeBig(b, 4, 6, (next >> 32n) & 0xffffn);
    writeBig(b, 0, 4, next & 0xffffffffn);
  } else {
    writeBig(b, 0, 6, next >> 12n);
    b[6] = (version << 4) | Number((next >> 8n) & 0xfn);
    b[7] = Number(next & 0xffn);
  }
  return uuidText(b);
}

/** The offset of a signed 64-bit value from the lowest one: its order as an unsigned number. */
const BIAS = 1n << 63n;

/** The rank of a CQL bigint (its top 60 bits, as an unsigned order): 16 values share one. */
export function bigintRank(value: bigint): bigint {
  return (value + BIAS) >> 4n;
}

/** The lowest (or highest) bigint of rank `rank` (`bigintRank`). */
export function bigintAtRank(rank: bigint, fill: RankFill): bigint {
  return (rank << 4n) - BIAS + (fill === 'lowest' ? 0n : 15n);
}

/** The lowest and highest bigint. */
export const BIGINT_BOUNDS = { lowest: -BIAS, highest: BIAS - 1n } as const;

/**
 * The ranks of a connection ordered by one uuid, ascending (a meeting's acceptors by
 * user id). Users' ids are random (version 4), so their ranks are too.
 */
export const uuidAscending: RankOrder = {
  rankOf: (key) => uuidRank(key[0] as string),
  edgeKey: (rank, direction) => [uuidAtRank(rank, direction === 'forward' ? 'lowest' : 'highest')],
  random: true,
};
