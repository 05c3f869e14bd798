/**
 * The timeline's deletions against write times another server's clock chose: a post
 * written before posts were stamped with their own id's time carries its batch's time,
 * which a server ahead made later than the id; a deletion must still hide it, whatever
 * the deleting server's clock says.
 */
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { ALL_TABLES, createRequestContext, createServices } from '../../src/composition-root.js';
import { timelineTable } from '../../src/features/timeline/timeline-tables.js';
import { MonotonicClock } from '../../src/store/clock.js';
import { microsOfTimeuuid, newTimeuuid } from '../../src/store/timeuuid.js';
import { describeEachStore, StorePool } from '../support/stores.js';

const AUTHOR = '00000000-0000-4000-8000-00000000cccc';

describeEachStore('timeline deletions', (target) => {
  const pool = new StorePool(target);
  afterEach(() => pool.disposeAll());

  it('hide a post whose write time is above its id, written by a server ahead, from a server behind', async () => {
    const { store } = await pool.create();
    await store.ensureTables(ALL_TABLES);
    const behind = createServices(
      { cursorSecret: 'timeline-test-secret', suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins' },
      { store, logger: pino({ level: 'silent' }), clock: new MonotonicClock({ now: () => Date.now() - 300 }) },
    );
    // As the old layout wrote it: the id of now, the batch's time of a server 300 ms ahead.
    const postId = newTimeuuid();
    const key = { user_id: AUTHOR, post_id: postId };
    await store.upsert(timelineTable, { ...key, content: 'old layout' }, { timestamp: microsOfTimeuuid(postId) + 300_000n });
    await createRequestContext(behind, { username: 'root', isAdmin: true }).timeline.deletePost(AUTHOR, { authorId: AUTHOR, postId });
    expect(await store.get(timelineTable, key)).toBeNull();
  });
});
