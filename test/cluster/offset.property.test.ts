/**
 * `offset` on a simulated cluster: instances with clocks up to ±1 s apart post (some
 * posts dated in the past, as an import makes them: late writes into the middle of a
 * timeline) and delete posts (the same post on two servers at once), their writes land
 * late and out of order, an instance may crash mid-write or mid-settlement. Once
 * settled, every offset page of every author's posts, from the start, the end or a
 * cursor, in both directions, equals the model's slice of what the timeline holds,
 * though every instance read the same pages before, keeping the index's lists under
 * the settlement then (paging/ranked-index.ts, `RankCache`).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { timelineTable } from '../../src/features/timeline/timeline-tables.js';
import { aUser } from '../../src/features/users/user-mother.js';
import type { RequestContext } from '../../src/graphql/context.js';
import { armCrash, assertSim, crashPoint, offsets, runAll, scheduled } from '../support/sim-arbitraries.js';
import { SimCluster } from '../support/sim-cluster.js';
import { modelOffsetPage } from '../support/paging-model.js';

const AUTHORS = 2;
const POSTS = 12;

const op = fc.record({
  ...scheduled,
  kind: fc.constantFrom('post', 'import', 'delete'),
  who: fc.nat(AUTHORS - 1),
  pick: fc.nat(POSTS - 1),
  daysAgo: fc.integer({ min: 1, max: 400 }),
});

// Newest first, as the timeline shows posts; timeuuids by time, then Cassandra's byte order is the source's business.
const query = fc.record({ backward: fc.boolean(), size: fc.integer({ min: 1, max: 5 }), offset: fc.nat(20), cursorAt: fc.option(fc.nat(30), { nil: undefined }) });

describe('offset on a simulated cluster', () => {
  it("gives every author's offset pages exactly once settled, with skewed clocks, late writes and crashes", async () => {
    await assertSim(
      'offset',
      fc.asyncProperty(
        fc.integer(),
        offsets,
        crashPoint,
        fc.array(op, { minLength: 4, maxLength: 24 }),
        fc.array(query, { minLength: 4, maxLength: 8 }),
        async (seed, offsetsMs, crash, ops, queries) => {
          const cluster = await SimCluster.create({ seed, offsetsMs });
          try {
            const setUp = await cluster.at(0).run(async (ctx) => {
              const authors = [];
              for (let i = 0; i < AUTHORS; i++) authors.push((await ctx.users.create(aUser())).id);
              const posts = [];
              for (let i = 0; i < POSTS; i++) posts.push(await ctx.timeline.createPost(authors[i % AUTHORS]!, `post ${i}`, new Date(cluster.time.now() - i * 3_600_000)));
              return { authors, posts };
            });
            if (setUp.kind !== 'ok') throw new Error('setup failed');
            const { authors, posts } = setUp.value;
            armCrash(cluster, crash);
            await runAll(cluster, ops, (o, instance) =>
              instance.run(async (ctx: RequestContext) => {
                switch (o.kind) {
                  case 'post':
                    return void (await ctx.timeline.createPost(authors[o.who]!, `by ${instance.name}`));
                  case 'import':
                    return void (await ctx.timeline.createPost(authors[o.who]!, 'imported', new Date(cluster.time.now() - o.daysAgo * 86_400_000)));
                  default: {
                    const post = posts[o.pick]!;
                    return ctx.timeline.deletePost(post.authorId, post);
                  }
                }
              }),
            );
            // The same pages before the writes settle: each instance keeps the lists it reads.
            const read = (instance: (typeof cluster.instances)[number], author: string, q: (typeof queries)[number], cursorPost: string | undefined) =>
              instance.run(async (ctx) => {
                const cursor = cursorPost === undefined ? undefined : ctx.timeline.postEdge({ authorId: author, postId: cursorPost, content: '', createdAt: new Date(0) }).cursor;
                return ctx.timeline.posts(author, q.backward ? { last: q.size, before: cursor, offset: q.offset } : { first: q.size, after: cursor, offset: q.offset });
              });
            for (const author of authors) for (const instance of cluster.instances) for (const q of queries) await read(instance, author, q, posts[(q.cursorAt ?? 0) % POSTS]!.postId);
            await cluster.settle({ rounds: 5 });
            for (const author of authors) {
              // What the timeline holds, newest first: the model's connection.
              const held = (await cluster.base.slice(timelineTable, { partition: { user_id: author }, limit: 1_000 })).map((r) => r.post_id as string);
              const order = (a: string, b: string) => held.indexOf(a) - held.indexOf(b);
              for (const instance of cluster.instances) {
                for (const q of queries) {
                  const cursorPost = q.cursorAt === undefined || held.length === 0 ? undefined : held[q.cursorAt % held.length];
                  const got = await read(instance, author, q, cursorPost);
                  if (got.kind !== 'ok') throw new Error('reading a page failed');
                  const page = got.value;
                  expect(
                    { nodes: page.edges.map((e) => e.node.postId), hasPreviousPage: page.pageInfo.hasPreviousPage, hasNextPage: page.pageInfo.hasNextPage },
                    `${instance.name}: ${JSON.stringify(q)} over ${held.length} posts`,
                  ).toEqual(modelOffsetPage(held, order, q.backward ? 'backward' : 'forward', q.size, q.offset, cursorPost));
                }
              }
            }
          } finally {
            await cluster.close();
          }
        },
      ),
    );
  }, 180_000);
});
