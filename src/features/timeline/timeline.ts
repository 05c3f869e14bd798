/**
 * The timeline (seed 000): posts per author, newest first, paged by the shared engine
 * as one partition slice from the cursor.
 */
import { countMarkTag, type Counted, type CountWriter } from '../../counts/connection-counts.js';
import { membershipsOfTable, type Membership } from '../../counts/recount.js';
import type { Change, ChangeWriter } from '../../live/change-log.js';
import type { FeedPosition } from '../../live/feed-cursor.js';
import type { FeedSpec } from '../../live/live-hub.js';
import type { CursorCodec } from '../../paging/cursor.js';
import { countedIndex } from '../../counts/count-ranks.js';
import { edgeFromNode, pageFromSource } from '../../paging/engine.js';
import { timeuuidDescending, type RankCache } from '../../paging/ranked-index.js';
import { sliceSource } from '../../paging/slice-source.js';
import type { Edge, OrderedSource, Page, PageArgs } from '../../paging/types.js';
import type { Store } from '../../store/port.js';
import type { Row } from '../../store/table.js';
import { dateOfTimeuuid, microsOfTimeuuid, newTimeuuid } from '../../store/timeuuid.js';
import { isTimeuuid } from '../../store/values.js';
import { DomainError, checkText } from '../../errors.js';
import type { KeyLoader } from '../key-loader.js';
import { timelineTable } from './timeline-tables.js';

/** A post as the API shows it; `authorId` + `postId` is its primary key. */
export interface Post {
  readonly authorId: string;
  readonly postId: string;
  readonly content: string;
  readonly createdAt: Date;
}

/** The longest post accepted, in characters. */
export const MAX_POST_LENGTH = 5_000;

function postFromRow(row: Row): Post {
  const postId = row.post_id as string;
  return { authorId: row.user_id as string, postId, content: row.content as string, createdAt: dateOfTimeuuid(postId) };
}

/** Posts by primary key, in the order asked, null for misses (one round trip). */
export async function readPosts(store: Store, keys: ReadonlyArray<{ authorId: string; postId: string }>): Promise<Array<Post | null>> {
  const rows = await store.getMany(
    timelineTable,
    keys.map((k) => ({ user_id: k.authorId, post_id: k.postId })),
  );
  return rows.map((r) => (r ? postFromRow(r) : null));
}

/** What the feature needs. */
export interface TimelineDeps {
  readonly store: Store;
  readonly codec: CursorCodec;
  /** The request's signal: a page stops reading once its client has gone (`PagingOptions.signal`). */
  readonly signal?: AbortSignal;
  readonly loaders: { readonly postByKey: KeyLoader<{ authorId: string; postId: string }, Post | null> };
  /** Appends the timeline's changes to the live change log. */
  readonly changes: ChangeWriter;
  /** Records posts added and deleted in the author's `posts` count. */
  readonly counts: CountWriter;
  /** The process's kept bucket lists of counted indexes (`offset`); without it, every page reads them. */
  readonly rankCache?: RankCache;
}

/** A page of an author's posts, with the key its `totalCount` is read by. */
export type PostPage = Page<Post> & Counted;

/** The count key of an author's posts (`User.posts.totalCount`). */
export function postsCountKey(authorId: string): string {
  return `posts:${authorId}`;
}

/**
 * The rank of a post in its author's timeline (newest first), by which the `posts`
 * count keeps its counted index (`offset`; counts/count-ranks.ts).
 */
export function postRank(postId: string): bigint {
  return timeuuidDescending.rankOf([postId]);
}

/** Every author's posts, for recounts: a scan of the timeline. */
export function postMemberships(store: Store): AsyncIterable<Membership> {
  return membershipsOfTable(store, timelineTable, (r) => postsCountKey(r.user_id as string), (r) => r.post_id as string);
}

/** A change to an author's timeline, as a subscriber sees it. */
export type TimelineChange = { readonly kind: 'added'; readonly post: Post } | { readonly kind: 'deleted'; readonly authorId: string; readonly postId: string };

/**
 * The live feed of an author's timeline: named as the author's `posts` count, whose mark
 * stands in for its changes' pointers (live/change-log.ts), tagged with the post and sign.
 */
export function postsFeedOf(authorId: string): FeedSpec {
  return { feed: postsCountKey(authorId), markTag: (change) => countMarkTag({ item: change.payload.postId as string, sign: change.kind === 'deleted' ? -1 : 1 }) };
}

/** A change read from an author's feed, as the timeline's own terms. */
export function timelineChangeFrom(authorId: string, change: Change): TimelineChange {
  const postId = change.payload.postId as string;
  if (change.kind === 'deleted') return { kind: 'deleted', authorId, postId };
  return { kind: 'added', post: { authorId, postId, content: change.payload.content as string, createdAt: dateOfTimeuuid(postId) } };
}

/** The timeline feature. */
export class Timeline {
  private readonly store: Store;
  private readonly codec: CursorCodec;

  constructor(private readonly deps: TimelineDeps) {
    this.store = deps.store;
    this.codec = deps.codec;
  }

  /**
   * Publish a post as `authorId` (who must exist: the caller checks), and announce it
   * to the author's live feed in the same logged batch. A post made now takes its id
   * from the change clock, and the change the same id: a `posts` cursor is then also a
   * position in the feed ("everything newer than this post"). A post dated in the past
   * (an import) keeps its date, and its change an id of now.
   */
  async createPost(authorId: string, content: string, at?: Date): Promise<Post> {
    const text = checkText('content', content, 1, MAX_POST_LENGTH, { multiline: true });
    const { changes } = this.deps;
    const changeId = changes.nextId();
    const postId = at === undefined ? changeId : newTimeuuid(at);
    // The count, in the same batch: the post counts if and only if it lands. Drawn after
    // the change's id, its mark stands in for the change's pointer (live/change-log.ts).
    const counted = this.deps.counts.mutations({ key: postsCountKey(authorId), item: postId, sign: 1 });
    await this.store.batch([
      // Stamped with the post's own time, not the batch's, so that its deletion, made on
      // any server whatever its clock, can be stamped alike and hide it (deletePost).
      { kind: 'upsert', table: timelineTable, row: { user_id: authorId, post_id: postId, content: text }, options: { timestamp: microsOfTimeuuid(postId) } },
      ...changes.mutations({ feed: postsFeedOf(authorId).feed, id: changeId, kind: 'added', item: `${postId}+`, payload: { postId, content: text } }, counted),
      ...counted,
    ]);
    const post: Post = { authorId, postId, content: text, createdAt: dateOfTimeuuid(postId) };
    this.deps.loaders.postByKey.prime(post, post);
    return post;
  }

  /**
   * Delete a post; only its author may. NOT_FOUND when it does not exist. The deletion
   * is announced in the same batch, with a change id above the post's own, so the two
   * reach subscribers in that order whichever servers made them.
   */
  async deletePost(viewerId: string, key: { authorId: string; postId: string }): Promise<void> {
    // The row with its write time (one round trip, as the loader's read): the tombstone goes at or above it.
    const cells = await this.store.readCells(timelineTable, { user_id: key.authorId, post_id: key.postId }, ['content']);
    const post = cells.row && postFromRow(cells.row);
    if (!post) throw new DomainError('NOT_FOUND', 'no such post', 'id');
    if (post.authorId !== viewerId) throw new DomainError('FORBIDDEN', 'only the author may delete a post', 'id');
    const { changes } = this.deps;
    // The tombstone must beat the post's write, which another server may have made with a
    // clock ahead of ours (DESIGN.md: no decision rests on one server's clock beating
    // another's): a post is written at its own id's time (createPost), so a tombstone at
    // that time hides it (a deletion wins a tie). Posts written before they were stamped
    // so carry their batch's time, a moment after their id's: the tombstone then goes at
    // the write time read, whatever the clock of the server that wrote it.
    const written = cells.writetime.content ?? null;
    const postMicros = microsOfTimeuuid(key.postId);
    const timestamp = written !== null && written > postMicros ? written : postMicros;
    const changeId = changes.nextId(key.postId);
    // Two deletes of one post (two servers, a retry) record two attempts; only the
    // first removes it from the count (counts/connection-counts.ts). Drawn after the
    // change's id: its mark stands in for the change's pointer (live/change-log.ts).
    const counted = this.deps.counts.mutations({ key: postsCountKey(key.authorId), item: key.postId, sign: -1 });
    await this.store.batch([
      { kind: 'delete', table: timelineTable, key: { user_id: key.authorId, post_id: key.postId }, options: { timestamp } },
      ...changes.mutations({ feed: postsFeedOf(key.authorId).feed, id: changeId, kind: 'deleted', item: `${key.postId}-`, payload: { postId: key.postId } }, counted),
      ...counted,
    ]);
    this.deps.loaders.postByKey.clear(key);
    this.deps.loaders.postByKey.prime(key, null);
  }

  /** The connection of an author's posts (`User.posts`). */
  private source(authorId: string): OrderedSource<Post> {
    return sliceSource<Post>({
      id: `User.posts:${authorId}`,
      store: this.store,
      table: timelineTable,
      partition: { user_id: authorId },
      toNode: postFromRow,
      rowOf: (p) => ({ post_id: p.postId }),
    });
  }

  /** The `User.posts` edge of a post, cursor and all, as a page of that connection gives it. */
  postEdge(post: Post): Edge<Post> {
    return edgeFromNode(this.source(post.authorId), post, this.codec);
  }

  /**
   * The feed position a `User.posts` cursor stands for: just after that post, so a
   * subscription from a page's `startCursor` gets everything newer than the page
   * shows. Null when `cursor` is not one of this author's `posts` cursors.
   */
  positionAfterPostCursor(authorId: string, cursor: string): FeedPosition | null {
    const key = this.codec.decodeCursor(this.source(authorId).id, cursor);
    const postId = key?.length === 1 ? key[0] : undefined;
    if (typeof postId !== 'string' || !isTimeuuid(postId)) return null;
    return { floor: microsOfTimeuuid(postId) + 1n, received: [] };
  }

  /**
   * One page of an author's posts, newest first, with its count's key; an `offset` is
   * found through the count's counted index.
   */
  async posts(authorId: string, args: PageArgs): Promise<PostPage> {
    const countKey = postsCountKey(authorId);
    // Only a page with an offset looks anything up in the index: none is made for the others.
    const index = args.offset ? countedIndex(this.store, countKey, timeuuidDescending, this.deps.rankCache) : undefined;
    const page = await pageFromSource(this.source(authorId), args, { connectionName: 'posts', codec: this.codec, index, signal: this.deps.signal });
    return { ...page, countKey };
  }
}
