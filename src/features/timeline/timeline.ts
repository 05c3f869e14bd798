/**
 * The timeline (seed 000): posts per author, newest first, paged by the shared engine
 * as one partition slice from the cursor.
 */
import type { CursorCodec } from '../../paging/cursor.js';
import { pageFromSource } from '../../paging/engine.js';
import { sliceSource } from '../../paging/slice-source.js';
import type { Page, PageArgs } from '../../paging/types.js';
import type { Store } from '../../store/port.js';
import type { Row } from '../../store/table.js';
import { dateOfTimeuuid, newTimeuuid } from '../../store/timeuuid.js';
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
  readonly loaders: { readonly postByKey: KeyLoader<{ authorId: string; postId: string }, Post | null> };
}

/** The timeline feature. */
export class Timeline {
  private readonly store: Store;
  private readonly codec: CursorCodec;

  constructor(private readonly deps: TimelineDeps) {
    this.store = deps.store;
    this.codec = deps.codec;
  }

  /** Publish a post as `authorId` (who must exist: the caller checks). */
  async createPost(authorId: string, content: string, at: Date = new Date()): Promise<Post> {
    const text = checkText('content', content, 1, MAX_POST_LENGTH, { multiline: true });
    const postId = newTimeuuid(at);
    await this.store.upsert(timelineTable, { user_id: authorId, post_id: postId, content: text });
    const post: Post = { authorId, postId, content: text, createdAt: dateOfTimeuuid(postId) };
    this.deps.loaders.postByKey.prime(post, post);
    return post;
  }

  /** Delete a post; only its author may. NOT_FOUND when it does not exist. */
  async deletePost(viewerId: string, key: { authorId: string; postId: string }): Promise<void> {
    const post = await this.deps.loaders.postByKey.load(key);
    if (!post) throw new DomainError('NOT_FOUND', 'no such post', 'id');
    if (post.authorId !== viewerId) throw new DomainError('FORBIDDEN', 'only the author may delete a post', 'id');
    await this.store.delete(timelineTable, { user_id: key.authorId, post_id: key.postId });
    this.deps.loaders.postByKey.clear(key);
    this.deps.loaders.postByKey.prime(key, null);
  }

  /** One page of an author's posts, newest first. */
  posts(authorId: string, args: PageArgs): Promise<Page<Post>> {
    const source = sliceSource<Post>({
      id: `User.posts:${authorId}`,
      store: this.store,
      table: timelineTable,
      partition: { user_id: authorId },
      toNode: postFromRow,
      rowOf: (p) => ({ post_id: p.postId }),
    });
    return pageFromSource(source, args, { connectionName: 'posts', codec: this.codec });
  }
}
