/**
 * Idempotency keys on a simulated cluster: `createPost` requests under a few keys, sent
 * to instances with skewed clocks, their writes landing late and out of order, one
 * instance crashing at any point. After settling, one more retry of each key: every
 * acknowledgement of a key names the same post, and each key made exactly one post.
 */
import fc from 'fast-check';
import type { GraphQLResolveInfo } from 'graphql';
import { describe, expect, it } from 'vitest';
import { timelineTable } from '../../src/features/timeline/timeline-tables.js';
import type { RequestContext } from '../../src/graphql/context.js';
import { resolvers } from '../../src/graphql/resolvers/index.js';
import { armCrash, assertSim, crashPoint, offsets, runAll, scheduled } from '../support/sim-arbitraries.js';
import { SimCluster, type SimInstance } from '../support/sim-cluster.js';

const KEYS = ['k0', 'k1', 'k2'];
const AUTHOR = { username: 'ada', isAdmin: false };

type CreatePost = (root: unknown, args: { input: { content: string; clientMutationId: string } }, ctx: RequestContext, info: GraphQLResolveInfo) => Promise<unknown>;
const createPost = (resolvers.Mutation as { createPost: CreatePost }).createPost;

/** The keyed createPost of key `k`, as the GraphQL layer runs it, on `instance`. */
function send(instance: SimInstance, k: number) {
  const input = { content: `post ${k}`, clientMutationId: KEYS[k]! };
  return instance.run(async (ctx) => ((await createPost(undefined, { input }, ctx, {} as GraphQLResolveInfo)) as { post: { postId: string } }).post.postId, AUTHOR);
}

describe('idempotency keys on a simulated cluster', () => {
  it('acknowledge one post per key, whatever lands late and whoever crashes', async () => {
    await assertSim(
      'idempotency',
      fc.asyncProperty(
        fc.integer(),
        offsets,
        crashPoint,
        fc.array(fc.record({ ...scheduled, key: fc.nat(KEYS.length - 1) }), { minLength: 2, maxLength: 8 }),
        async (seed, offsetsMs, crash, ops) => {
          const cluster = await SimCluster.create({ seed, offsetsMs });
          try {
            const made = await cluster.at(0).run((ctx) => ctx.users.create({ username: AUTHOR.username, displayName: 'Ada' }));
            if (made.kind !== 'ok') throw new Error('the author could not be made');
            const authorId = made.value.id;
            await cluster.quiesce();
            armCrash(cluster, crash);
            const sent = await runAll(cluster, ops, (op, instance) => send(instance, op.key));
            // runAll answers in the order of `ops`.
            const outcomes = sent.map((o, i) => ({ ...o, key: ops[i]!.key }));
            await cluster.settle();
            const retried = await Promise.all(KEYS.map((_, k) => send(cluster.at(0), k).then((o) => ({ ...o, key: k }))));
            const posts = await cluster.base.slice(timelineTable, { partition: { user_id: authorId }, limit: 100 });
            for (const [k] of KEYS.entries()) {
              const retry = retried[k]!;
              expect(retry.kind, `the last retry of ${KEYS[k]} failed: ${retry.kind === 'error' ? String(retry.error) : ''}`).toBe('ok');
              const acked = [...outcomes, ...retried].flatMap((o) => (o.key === k && o.kind === 'ok' ? [o.value] : []));
              expect(new Set(acked).size, `${KEYS[k]} acknowledged as different posts`).toBe(1);
              const stored = posts.filter((p) => p.content === `post ${k}`).map((p) => p.post_id);
              expect(stored, `${KEYS[k]} made ${stored.length} posts`).toEqual([acked[0]]);
            }
          } finally {
            await cluster.close();
          }
        },
      ),
    );
  }, 120_000);
});
