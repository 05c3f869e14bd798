/**
 * Subscribing on behalf of one caller: `after` read as a change cursor of the feed (or,
 * where the feature offers it, a cursor of the connection itself), refused with a code
 * the API shows when it is neither or too old, then handed to the process's hub.
 */
import { DomainError, badInput } from '../errors.js';
import type { CursorCodec } from '../paging/cursor.js';
import { decodeFeedCursor, isOutdatedFeedCursor, type FeedPosition } from './feed-cursor.js';
import { CursorExpiredError, type Delivery, type FeedSpec, type LiveHub } from './live-hub.js';

/** What subscribing needs. */
export interface LiveSubscriptionsDeps {
  readonly hub: LiveHub;
  readonly codec: CursorCodec;
  /** Called when the subscriber falls too far behind and is dropped (the transport closes its connection). */
  readonly onSlowConsumer?: () => void;
}

/** Subscriptions of one caller (one GraphQL operation's context). */
export class LiveSubscriptions {
  constructor(private readonly deps: LiveSubscriptionsDeps) {}

  /**
   * Follow `spec` from `after` (a change cursor of this feed, or whatever
   * `connectionPosition` accepts), or from now. BAD_USER_INPUT for a cursor that is
   * neither, CURSOR_EXPIRED for one older than the retention; nothing is read then.
   */
  subscribe(
    spec: FeedSpec,
    after: string | null | undefined,
    connectionPosition?: (cursor: string) => FeedPosition | null,
  ): AsyncIterableIterator<Delivery> {
    let position: FeedPosition | null = null;
    if (after !== null && after !== undefined) {
      position = decodeFeedCursor(this.deps.codec, spec.feed, after) ?? connectionPosition?.(after) ?? null;
      if (!position && isOutdatedFeedCursor(this.deps.codec, spec.feed, after)) {
        throw badInput('after', '`after` is a change cursor in a format this release no longer reads: it is out of date; subscribe again without `after`');
      }
      if (!position) {
        throw badInput(
          'after',
          connectionPosition
            ? '`after` must be a `cursor` of this subscription\'s changes, or a cursor of the connection it follows'
            : '`after` must be a `cursor` of this subscription\'s changes',
        );
      }
    }
    try {
      return this.deps.hub.subscribe(spec, position ? { kind: 'after', position } : { kind: 'now' }, this.deps.onSlowConsumer);
    } catch (err) {
      if (err instanceof CursorExpiredError) throw new DomainError('CURSOR_EXPIRED', err.message, 'after');
      throw err;
    }
  }
}
