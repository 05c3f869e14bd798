/**
 * The cursor of a change: where a subscriber stands in a feed, so that resuming after
 * it, on any server, delivers every later change once, in order.
 *
 * A feed is read in id order, but a change can land behind ids already delivered (its
 * writer's clock was behind, or its write was slow), so "the last id delivered" is not
 * a position. A position is a floor and a set: every change with an id below the floor
 * was delivered (or never will be to a subscription resumed from it: a change landing
 * that far behind, past the window, reaches by a trailing pass only the subscriptions
 * open from below it, live-hub.ts), and the set holds
 * the changes at or above the floor that were delivered too. Resuming re-reads the feed
 * from the floor and skips the set. The floor trails the newest change by the bound on
 * lateness (clock skew plus write timeout), so the set holds only the changes of those
 * few seconds.
 *
 * Packed small: the floor in µs, then each change of the set as the µs after the one
 * before (a varint) and four bytes of its random part, so a set of a hundred changes
 * costs some 700 bytes; for a feed that says when its changes were made (a list's),
 * also where the subscription from now it descends from started (`madeFrom`), so that a
 * resumed subscription leaves out what that one did. Signed and bound to its feed by the
 * cursor codec, like every connection cursor.
 */
import type { CursorCodec } from '../paging/cursor.js';
import { microsOfTimeuuid } from '../store/timeuuid.js';

/** Where a subscriber stands in a feed. */
export interface FeedPosition {
  /** Every change with an id below this (µs) was delivered, or never will be. */
  readonly floor: bigint;
  /** The changes at or above the floor that were delivered, as `changeKey`s. */
  readonly received: readonly string[];
  /**
   * Changes made before this (µs, the feed's `madeAt`) are not given: the start of the
   * subscription from now this position descends from, kept so that resuming leaves out
   * what it left out. Absent for a feed without `madeAt`, or a position from a connection's cursor.
   */
  readonly madeFrom?: bigint;
}

/** The longest change cursor accepted (characters): some 7,000 changes in the set. */
export const MAX_FEED_CURSOR_LENGTH = 65_536;

/** The tag a cursor keeps of a change id: its µs and the last four bytes of its random part. */
export function changeKey(id: string): string {
  return `${microsOfTimeuuid(id)}:${id.slice(-8)}`;
}

function micros(key: string): bigint {
  return BigInt(key.slice(0, key.indexOf(':')));
}

/** The connection id a feed's cursors are bound to. */
function connectionOf(feed: string): string {
  return `live:${feed}`;
}

const TAG = 'c';

/** The cursor text of a position in `feed`. */
export function encodeFeedCursor(codec: CursorCodec, feed: string, position: FeedPosition): string {
  const keys = [...position.received].sort((a, b) => {
    const d = micros(a) - micros(b);
    return d < 0n ? -1 : d > 0n ? 1 : a < b ? -1 : a > b ? 1 : 0;
  });
  const bytes: number[] = [];
  const varint = (n: bigint) => {
    while (n >= 0x80n) {
      bytes.push(Number(n & 0x7fn) | 0x80);
      n >>= 7n;
    }
    bytes.push(Number(n));
  };
  varint(BigInt(keys.length));
  let previous = position.floor;
  for (const key of keys) {
    const at = micros(key);
    if (at < previous) throw new Error(`a received change (${key}) lies below the cursor's floor`);
    varint(at - previous);
    previous = at;
    for (const b of Buffer.from(key.slice(key.indexOf(':') + 1), 'hex')) bytes.push(b);
  }
  const parts = [TAG, position.floor.toString(), Buffer.from(bytes).toString('base64url')];
  if (position.madeFrom !== undefined) parts.push(position.madeFrom.toString());
  return codec.encodeCursor(connectionOf(feed), parts);
}

/** Whether `cursor` is a genuine change cursor of `feed` in a retired format (CursorCodec.isOutdated). */
export function isOutdatedFeedCursor(codec: CursorCodec, feed: string, cursor: string): boolean {
  return codec.isOutdated(connectionOf(feed), cursor);
}

/** The position inside a change cursor of `feed`, or null when it is malformed, forged or another feed's. */
export function decodeFeedCursor(codec: CursorCodec, feed: string, cursor: string): FeedPosition | null {
  const key = codec.decodeCursor(connectionOf(feed), cursor, { maxLength: MAX_FEED_CURSOR_LENGTH });
  if (!key || (key.length !== 3 && key.length !== 4) || key[0] !== TAG || typeof key[1] !== 'string' || typeof key[2] !== 'string') return null;
  if (!/^\d{1,19}$/.test(key[1])) return null;
  const madeFrom = key[3];
  if (madeFrom !== undefined && (typeof madeFrom !== 'string' || !/^\d{1,19}$/.test(madeFrom))) return null;
  const floor = BigInt(key[1]);
  const bytes = Buffer.from(key[2], 'base64url');
  let at = 0;
  const varint = (): bigint | null => {
    let n = 0n;
    for (let shift = 0n; shift < 64n; shift += 7n) {
      if (at >= bytes.length) return null;
      const b = bytes[at++]!;
      n |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return n;
    }
    return null;
  };
  const count = varint();
  if (count === null || count > BigInt(bytes.length)) return null;
  const received: string[] = [];
  let previous = floor;
  for (let i = 0n; i < count; i++) {
    const delta = varint();
    if (delta === null || at + 4 > bytes.length) return null;
    previous += delta;
    received.push(`${previous}:${bytes.toString('hex', at, at + 4)}`);
    at += 4;
  }
  if (at !== bytes.length) return null;
  return madeFrom === undefined ? { floor, received } : { floor, received, madeFrom: BigInt(madeFrom) };
}
