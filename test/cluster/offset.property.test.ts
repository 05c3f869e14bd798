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
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { timelineTable } from '../../src/features/timeline/timeline-tables.js';
import { aUser } from '../../src/features/users/user-mother.js';
import type { RequestContext } from '../../src/graphql/context.js';
import { armCrash, assertSim, crashPoint, offsets, runAll, scheduled } from '../support/sim-arbitraries.js';
import { SimCluster } from '../support/sim-cluster.js';
import { modelOffsetPage } from '../support/paging-model.js';
import type { Page, PageArgs } from '../../src/paging/types.js';
import { plainEdges } from '../support/offset-pages.js';

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

type Query = { backward: boolean; size: number; offset: number; cursorAt?: number };

/**
 * On every instance, every query's page of a connection equals the model's slice of
 * what its plain pages show (read on the first instance), flags included.
 */
async function expectOffsetPages<N>(cluster: SimCluster, read: (ctx: RequestContext, args: PageArgs) => Promise<Page<N>>, idOf: (node: N) => string, queries: readonly Query[]): Promise<void> {
  const on = async (instance: SimCluster['instances'][number], args: PageArgs) => {
    const got = await instance.run((ctx) => read(ctx, args));
    if (got.kind !== 'ok') throw new Error(`reading a page failed: ${String((got as { error?: unknown }).error)}`);
    return got.value;
  };
  const edges = await plainEdges({ page: (args) => on(cluster.instances[0]!, args), idOf });
  const held = edges.map((e) => e.id);
  const order = (a: string, b: string) => held.indexOf(a) - held.indexOf(b);
  for (const instance of cluster.instances) {
    for (const q of queries) {
      const at = q.cursorAt === undefined || held.length === 0 ? undefined : q.cursorAt % held.length;
      const cursor = at === undefined ? undefined : edges[at]!.cursor;
      const page = await on(instance, q.backward ? { last: q.size, before: cursor, offset: q.offset } : { first: q.size, after: cursor, offset: q.offset });
      expect(
        { nodes: page.edges.map((e) => idOf(e.node)), hasPreviousPage: page.pageInfo.hasPreviousPage, hasNextPage: page.pageInfo.hasNextPage },
        `${instance.name}: ${JSON.stringify(q)} over ${held.length} edges`,
      ).toEqual(modelOffsetPage(held, order, q.backward ? 'backward' : 'forward', q.size, q.offset, at === undefined ? undefined : held[at]));
    }
  }
}

/** Run a set-up step on the first instance; it must succeed. */
async function setUp<T>(cluster: SimCluster, step: (ctx: RequestContext) => Promise<T>): Promise<T> {
  const done = await cluster.at(0).run(step);
  if (done.kind !== 'ok') throw new Error('setup failed');
  return done.value;
}

const ITEMS = 10;
const listOp = fc.record({ ...scheduled, kind: fc.constantFrom('add', 'move', 'move', 'remove'), pick: fc.nat(ITEMS - 1), anchor: fc.nat(ITEMS - 1), end: fc.boolean() });
const USERS = 8;
const suspensionOp = fc.record({ ...scheduled, user: fc.nat(USERS - 1), lift: fc.boolean(), daysAgo: fc.option(fc.integer({ min: 1, max: 90 }), { nil: undefined }) });
const acceptanceOp = fc.record({ ...scheduled, user: fc.nat(19) });

/**
 * The same for the other three counted connections: a list's items added, moved (one
 * item by several servers at once) and removed; suspensions made (some in the past),
 * lifted and made again; a meeting's acceptances, some repeated. Their model is what
 * their plain pages show once settled.
 */
describe('offset on the other counted connections on a simulated cluster', () => {
  it("gives a list's offset pages exactly once settled: adds, moves (one item by several servers at once) and removals, skewed clocks, late writes, crashes", async () => {
    await assertSim(
      'offset-lists',
      fc.asyncProperty(fc.integer(), offsets, crashPoint, fc.array(listOp, { minLength: 4, maxLength: 20 }), fc.array(query, { minLength: 4, maxLength: 8 }), async (seed, offsetsMs, crash, ops, queries) => {
        const cluster = await SimCluster.create({ seed, offsetsMs });
        try {
          const { listId, items } = await setUp(cluster, async (ctx) => {
            const owner = await ctx.users.create(aUser());
            const list = await ctx.lists.create('numbered', owner.id);
            const items = [];
            for (let i = 0; i < ITEMS; i++) items.push((await ctx.lists.add(list.listId, `item ${i}`)).itemId);
            return { listId: list.listId, items };
          });
          armCrash(cluster, crash);
          await runAll(cluster, ops, (o, instance) =>
            instance.run(async (ctx) => {
              if (o.kind === 'add') return void (await ctx.lists.add(listId, `by ${instance.name}`, o.end ? undefined : items[o.anchor]));
              if (o.kind === 'remove') return ctx.lists.remove(listId, items[o.pick]!);
              if (o.pick === o.anchor) return void (await ctx.lists.move(listId, items[o.pick]!, { toEnd: o.end ? 'TOP' : 'BOTTOM' }));
              return void (await ctx.lists.move(listId, items[o.pick]!, o.end ? { beforeItemId: items[o.anchor] } : { afterItemId: items[o.anchor] }));
            }),
          );
          await cluster.settle({ rounds: 5 });
          await expectOffsetPages(cluster, (ctx, args) => ctx.lists.items(listId, args), (i) => i.itemId, queries);
        } finally {
          await cluster.close();
        }
      }),
    );
  }, 180_000);

  it('gives the suspended users\' offset pages exactly once settled: suspensions (some in the past), lifts and new suspensions, skewed clocks, late writes, crashes', async () => {
    await assertSim(
      'offset-suspensions',
      fc.asyncProperty(fc.integer(), offsets, crashPoint, fc.array(suspensionOp, { minLength: 4, maxLength: 16 }), fc.array(query, { minLength: 4, maxLength: 8 }), async (seed, offsetsMs, crash, ops, queries) => {
        const cluster = await SimCluster.create({ seed, offsetsMs });
        try {
          const ids = await setUp(cluster, async (ctx) => {
            const ids = [];
            for (let i = 0; i < USERS; i++) ids.push((await ctx.users.create(aUser())).id);
            for (let i = 0; i < USERS; i += 2) await ctx.suspensions.suspend({ userId: ids[i]!, reason: 'before', suspendedAt: new Date(cluster.time.now() - i * 86_400_000) }, new Date(cluster.time.now()));
            return ids;
          });
          armCrash(cluster, crash);
          await runAll(cluster, ops, (o, instance) =>
            instance.run(async (ctx) => {
              if (o.lift) return ctx.suspensions.unsuspend(ids[o.user]!);
              const suspendedAt = o.daysAgo === undefined ? undefined : new Date(cluster.time.now() - o.daysAgo * 86_400_000);
              return void (await ctx.suspensions.suspend({ userId: ids[o.user]!, reason: `by ${instance.name}`, suspendedAt }, new Date(cluster.time.now())));
            }),
          );
          await cluster.settle({ rounds: 5 });
          await expectOffsetPages(cluster, (ctx, args) => ctx.suspensions.page(args), (s) => s.userId, queries);
        } finally {
          await cluster.close();
        }
      }),
    );
  }, 180_000);

  it("gives a meeting's acceptors' offset pages exactly once settled: acceptances on several servers at once, repeats, skewed clocks, late writes, crashes", async () => {
    await assertSim(
      'offset-acceptances',
      fc.asyncProperty(fc.integer(), offsets, crashPoint, fc.array(acceptanceOp, { minLength: 4, maxLength: 24 }), fc.array(query, { minLength: 4, maxLength: 8 }), async (seed, offsetsMs, crash, ops, queries) => {
        const cluster = await SimCluster.create({ seed, offsetsMs });
        try {
          const { meetingId, users } = await setUp(cluster, async (ctx) => {
            const owner = await ctx.users.create(aUser());
            const meeting = await ctx.meetings.create({ title: 'all hands' }, owner.id);
            return { meetingId: meeting.meetingId, users: Array.from({ length: 20 }, () => randomUUID()) };
          });
          armCrash(cluster, crash);
          await runAll(cluster, ops, (o, instance) => instance.run((ctx) => ctx.meetings.accept(meetingId, users[o.user]!)));
          await cluster.settle({ rounds: 5 });
          await expectOffsetPages(cluster, (ctx, args) => ctx.meetings.acceptedBy(meetingId, args), (a) => a.userId, queries);
        } finally {
          await cluster.close();
        }
      }),
    );
  }, 180_000);
});
