/**
 * Connection counts on a simulated cluster: instances with clocks up to ±1 s apart post
 * and delete posts (the same post deleted on two servers at once), add and remove list
 * items, and suspend and unsuspend users (sagas, recovered after a crash), while others
 * read the counts; writes land late and out of order, some batches minutes past their
 * window (their callers told the outcome is unknown), an instance may crash. Every
 * count read is never negative; after settling and the trailing passes, every count
 * equals what its connection holds.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { itemsCountKey } from '../../src/features/lists/lists.js';
import { SUSPENSIONS_COUNT_KEY } from '../../src/features/suspensions/suspension-sagas.js';
import { postsCountKey } from '../../src/features/timeline/timeline.js';
import { timelineTable } from '../../src/features/timeline/timeline-tables.js';
import { aUser } from '../../src/features/users/user-mother.js';
import type { RequestContext } from '../../src/graphql/context.js';
import type { Page, PageArgs } from '../../src/paging/types.js';
import { armCrash, assertSim, crashPoint, lateLanding, offsets, runAll, scheduled } from '../support/sim-arbitraries.js';
import { SimCluster } from '../support/sim-cluster.js';

const AUTHORS = 2;
const POSTS = 4;
const ITEMS = 4;
const SUSPENDABLE = 3;

/** How many nodes a connection holds, paged to its end. */
async function sizeOf<N>(read: (args: PageArgs) => Promise<Page<N>>): Promise<number> {
  let n = 0;
  let page = await read({ first: 50 });
  n += page.edges.length;
  while (page.pageInfo.hasNextPage) {
    page = await read({ first: 50, after: page.pageInfo.endCursor });
    n += page.edges.length;
  }
  return n;
}

const op = fc.record({
  ...scheduled,
  kind: fc.constantFrom('post', 'delete', 'add', 'remove', 'suspend', 'unsuspend', 'read'),
  who: fc.nat(AUTHORS - 1),
  pick: fc.nat(POSTS - 1),
});

describe('connection counts on a simulated cluster', () => {
  it('are never negative, and equal what each connection holds after settling', async () => {
    await assertSim(
      'counts',
      fc.asyncProperty(fc.integer(), offsets, crashPoint, fc.array(op, { minLength: 4, maxLength: 24 }), lateLanding, async (seed, offsetsMs, crash, ops, lateLandingMs) => {
        const cluster = await SimCluster.create({ seed, offsetsMs, lateLandingMs });
        try {
          const setUp = await cluster.at(0).run(async (ctx) => {
            const authors = [];
            for (let i = 0; i < AUTHORS; i++) authors.push((await ctx.users.create(aUser())).id);
            const posts = [];
            for (let i = 0; i < POSTS; i++) posts.push(await ctx.timeline.createPost(authors[i % AUTHORS]!, `post ${i}`));
            const list = await ctx.lists.create('sim', authors[0]!);
            const items = [];
            for (let i = 0; i < ITEMS; i++) items.push((await ctx.lists.add(list.listId, `item ${i}`)).itemId);
            const people = [];
            for (let i = 0; i < SUSPENDABLE; i++) people.push((await ctx.users.create(aUser())).id);
            await ctx.suspensions.suspend({ userId: people[0]!, reason: 'before' }, new Date(cluster.time.now()));
            return { authors, posts, listId: list.listId, items, people };
          });
          if (setUp.kind !== 'ok') throw new Error('setup failed');
          const { authors, posts, listId, items, people } = setUp.value;
          const keys = [...authors.map(postsCountKey), itemsCountKey(listId), SUSPENSIONS_COUNT_KEY];
          const seen: number[] = [];
          armCrash(cluster, crash);
          cluster.armLate();
          await runAll(cluster, ops, (o, instance) =>
            instance.run(async (ctx: RequestContext) => {
              const person = people[o.pick % SUSPENDABLE]!;
              switch (o.kind) {
                case 'post':
                  return void (await ctx.timeline.createPost(authors[o.who]!, `by ${instance.name}`));
                case 'delete': {
                  const post = posts[o.pick]!;
                  return ctx.timeline.deletePost(post.authorId, post);
                }
                case 'add':
                  return void (await ctx.lists.add(listId, `from ${instance.name}`));
                case 'remove':
                  return ctx.lists.remove(listId, items[o.pick % ITEMS]!);
                case 'suspend':
                  return void (await ctx.suspensions.suspend({ userId: person, reason: instance.name }, new Date(cluster.time.now())));
                case 'unsuspend':
                  return ctx.suspensions.unsuspend(person);
                default:
                  seen.push(...(await Promise.all(keys.map((k) => ctx.loaders.connectionCount.load(k)))));
              }
            }),
          );
          for (const n of seen) expect(n).toBeGreaterThanOrEqual(0);
          await cluster.settle({ rounds: 5 });
          // Batches held back land minutes past their windows; the trailing passes find them.
          await cluster.settleLate();
          const reader = cluster.at(0);
          const actual = await reader.run(async (ctx) => [
            ...(await Promise.all(
              authors.map(async (a) => (await cluster.base.slice(timelineTable, { partition: { user_id: a }, limit: 1_000 })).length),
            )),
            await sizeOf((args) => ctx.lists.items(listId, args)),
            await sizeOf((args) => ctx.suspensions.page(args)),
          ]);
          if (actual.kind !== 'ok') throw new Error('reading the connections failed');
          const counted = await Promise.all(keys.map((k) => cluster.count(k)));
          expect(counted, `counts of ${keys.join(', ')}`).toEqual(actual.value);
          // Every instance's own reads (with its verifier's progress) agree.
          for (const instance of cluster.instances) {
            const shown = await instance.run((ctx) => Promise.all(keys.map((k) => ctx.loaders.connectionCount.load(k))));
            expect(shown.kind === 'ok' && shown.value).toEqual(actual.value);
          }
        } finally {
          await cluster.close();
        }
      }),
    );
  }, 120_000);
});
