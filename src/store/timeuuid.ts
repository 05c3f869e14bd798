/**
 * Version 1 (time-based) uuids, as Cassandra's `timeuuid`: 100 ns intervals since
 * 1582-10-15 in the time fields, a random clock sequence and node per uuid so two
 * servers never collide. `at` lets seeding and imports create historical ids.
 */
import { randomBytes } from 'node:crypto';

const GREGORIAN_OFFSET_MS = 12_219_292_800_000n;
let lastMs = -1;
let sequence = 0;

/** A new timeuuid for `at` (default now); successive calls in one ms stay ordered. */
export function newTimeuuid(at: Date | number = Date.now(), random: (n: number) => Buffer = randomBytes): string {
  const ms = typeof at === 'number' ? at : at.getTime();
  if (!Number.isFinite(ms)) throw new Error(`timeuuid needs a valid time, got ${String(at)}`);
  // Up to 10,000 ids per millisecond keep their creation order through the 100 ns field.
  sequence = ms === lastMs ? (sequence + 1) % 10_000 : 0;
  lastMs = ms;
  const ticks = (BigInt(ms) + GREGORIAN_OFFSET_MS) * 10_000n + BigInt(sequence);
  const timeLow = ticks & 0xffffffffn;
  const timeMid = (ticks >> 32n) & 0xffffn;
  const timeHi = ((ticks >> 48n) & 0x0fffn) | 0x1000n;
  const rand = random(8);
  const clockSeq = ((rand[0]! << 8) | rand[1]!) & 0x3fff | 0x8000;
  rand[2]! |= 0x01; // multicast bit: a random node, not a MAC address
  const hex = (v: bigint | number, width: number) => v.toString(16).padStart(width, '0');
  return `${hex(timeLow, 8)}-${hex(timeMid, 4)}-${hex(timeHi, 4)}-${hex(clockSeq, 4)}-${rand.subarray(2, 8).toString('hex')}`;
}

/**
 * The time a timeuuid was created, to the millisecond. Every row of a timeline page
 * comes through here, so it stays in exact double arithmetic rather than BigInt: with
 * `high` the 28 bits above the low 32 (`ticks = high * 2^32 + low`) and
 * 2^32 = 429,496 * 10,000 + 7,296, `ticks / 10,000 = high * 429,496 + (high * 7,296 + low) / 10,000`,
 * every term below 2^53.
 */
export function dateOfTimeuuid(id: string): Date {
  const low = parseInt(id.slice(0, 8), 16);
  const high = parseInt(id.slice(15, 18), 16) * 0x10000 + parseInt(id.slice(9, 13), 16);
  return new Date(high * 429_496 + Math.floor((high * 7_296 + low) / 10_000) - GREGORIAN_OFFSET_MS_NUMBER);
}

const GREGORIAN_OFFSET_MS_NUMBER = Number(GREGORIAN_OFFSET_MS);

/**
 * The time a timeuuid was created, in microseconds since the epoch: a write timestamp
 * every server derives alike from the id, for rows written and deleted by different
 * servers whose clocks differ.
 */
export function microsOfTimeuuid(id: string): bigint {
  return ticksOfTimeuuid(id) / 10n - GREGORIAN_OFFSET_MS * 1000n;
}

/** The time fields of a timeuuid for `ticks` (100 ns intervals since 1582-10-15), as hex. */
function timeFieldsHex(ticks: bigint): string {
  const hex = (v: bigint, width: number) => v.toString(16).padStart(width, '0');
  return `${hex(ticks & 0xffffffffn, 8)}-${hex((ticks >> 32n) & 0xffffn, 4)}-${hex(((ticks >> 48n) & 0x0fffn) | 0x1000n, 4)}`;
}

/** The 100 ns ticks of a time in microseconds since the epoch. */
function ticksOfMicros(micros: bigint): bigint {
  if (micros < -GREGORIAN_OFFSET_MS * 1000n || micros >= 1n << 56n) throw new Error(`timeuuid needs a time after 1582, got ${micros} µs`);
  return (micros + GREGORIAN_OFFSET_MS * 1000n) * 10n;
}

/**
 * A timeuuid for an exact microsecond (not a millisecond with a sequence, as
 * `newTimeuuid`): for ids taken from a microsecond clock, whose order they keep. Its
 * clock sequence and node are random, so two servers never make the same one.
 */
export function timeuuidOfMicros(micros: bigint, random: (n: number) => Buffer = randomBytes): string {
  const rand = random(8);
  const clockSeq = (((rand[0]! << 8) | rand[1]!) & 0x3fff) | 0x8000;
  rand[2]! |= 0x01; // multicast bit: a random node, not a MAC address
  return `${timeFieldsHex(ticksOfMicros(micros))}-${clockSeq.toString(16).padStart(4, '0')}-${rand.subarray(2, 8).toString('hex')}`;
}

/**
 * The lowest timeuuid of a microsecond in Cassandra's order (its `minTimeuuid`): the
 * time fields, then a clock sequence and node of 0x80 bytes, which Cassandra compares
 * as signed bytes. A clustering bound `>= minTimeuuidOfMicros(t)` takes every timeuuid
 * made at or after `t`, whatever its random part.
 */
export function minTimeuuidOfMicros(micros: bigint): string {
  return timeuuidBoundOfTicks(ticksOfMicros(micros), 'lowest');
}

/** The 100 ns ticks (since 1582-10-15) in a timeuuid's time fields: what Cassandra orders timeuuids by first. */
export function ticksOfTimeuuid(id: string): bigint {
  return (BigInt(`0x${id.slice(15, 18)}`) << 48n) | (BigInt(`0x${id.slice(9, 13)}`) << 32n) | BigInt(`0x${id.slice(0, 8)}`);
}

/**
 * The lowest or highest timeuuid of a tick in Cassandra's order: the time fields, then
 * a clock sequence and node compared as signed bytes, lowest 0x80 each, highest 0xbf
 * (the variant's bits kept) then 0x7f. A clustering bound at one of them takes every
 * timeuuid of that tick and those on one side of it.
 */
export function timeuuidBoundOfTicks(ticks: bigint, end: 'lowest' | 'highest'): string {
  return `${timeFieldsHex(ticks)}-${end === 'lowest' ? '8080-808080808080' : 'bf7f-7f7f7f7f7f7f'}`;
}
