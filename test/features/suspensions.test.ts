/**
 * Suspended users on every store: paging across buckets, the rules of suspend
 * and unsuspend, and the property test of the paging engine over a bucketed source.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { aSuspension } from '../../src/features/suspensions/suspension-mother.js';
import type { Suspension } from '../../src/features/suspensions/suspensions.js';
import { DomainError } from '../../src/errors.js';
import { PagingArgumentError } from '../../src/paging/types.js';
import type { Store } from '../../src/store/port.js';
import { describeEachStore, StorePool } from '../support/stores.js';
import { modelPage } from '../support/paging-model.js';
import { usersTable } from '../../src/features/users/users-tables.js';
import { checkInvariants, codec, prepare, someUsers, suspensionsOver } from '../support/suspension-fixture.js';

const day = (iso: string) => new Date(`${iso}T12:00:00.000Z`);
const NOW = new Date('2026-11-22T10:00:00.000Z');

/** Connection order: newest first, then user id. */
function newestFirst(a: { suspendedAt: Date; userId: string }, b: { suspendedAt: Date; userId: string }): number {
  const t = b.suspendedAt.getTime() - a.suspendedAt.getTime();
  return t !== 0 ? t : a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0;
}

describeEachStore('suspended users', (target) => {
  const pool = new StorePool(target);
  let store: Store;
  let f: ReturnType<typeof suspensionsOver>;

  beforeEach(async () => {
    store = (await pool.create()).store;
    await prepare(store);
    f = suspensionsOver(store);
  });
  afterEach(() => pool.disposeAll());

  async function suspendAt(userId: string, iso: string) {
    return f.suspensions.suspend(aSuspension(userId, { suspendedAt: day(iso) }), NOW);
  }

  it('pages newest first across three buckets, forward and backward, with exact flags', async () => {
    const ids = await someUsers(store, 7);
    const dates = ['2026-09-03', '2026-09-20', '2026-10-01', '2026-10-15', '2026-10-31', '2026-11-02', '2026-11-21'];
    for (const [i, id] of ids.entries()) await suspendAt(id, dates[i]!);
    const expected = [...ids].reverse();

    const seen: string[][] = [];
    let page = await f.suspensions.page({ first: 3 });
    const flags = [[page.pageInfo.hasPreviousPage, page.pageInfo.hasNextPage]];
    seen.push(page.edges.map((e) => e.node.userId));
    while (page.pageInfo.hasNextPage) {
      page = await f.suspensions.page({ first: 3, after: page.pageInfo.endCursor });
      seen.push(page.edges.map((e) => e.node.userId));
      flags.push([page.pageInfo.hasPreviousPage, page.pageInfo.hasNextPage]);
    }
    expect(seen).toEqual([expected.slice(0, 3), expected.slice(3, 6), expected.slice(6)]);
    expect(flags).toEqual([
      [false, true],
      [true, true],
      [true, false],
    ]);

    // Backward from the oldest, into newer buckets.
    const back: string[][] = [];
    while (page.pageInfo.hasPreviousPage) {
      page = await f.suspensions.page({ last: 3, before: page.pageInfo.startCursor });
      back.push(page.edges.map((e) => e.node.userId));
    }
    expect(back).toEqual([expected.slice(3, 6), expected.slice(0, 3)]);
    expect(page.pageInfo).toMatchObject({ hasPreviousPage: false, hasNextPage: true });
  });

  it('shows a suspension with its reason, time and bucket', async () => {
    const [id] = await someUsers(store, 1);
    await f.suspensions.suspend({ userId: id!, reason: 'spam', suspendedAt: day('2025-02-03') }, NOW);
    const page = await f.suspensions.page({});
    expect(page.edges.map((e) => e.node)).toEqual<Suspension[]>([
      { userId: id!, reason: 'spam', suspendedAt: day('2025-02-03'), bucket: '2025-02' },
    ]);
    expect(await f.suspensions.byUserIds([id!, '00000000-0000-4000-8000-000000000000'])).toEqual([
      { userId: id!, reason: 'spam', suspendedAt: day('2025-02-03'), bucket: '2025-02' },
      null,
    ]);
  });

  it('crosses a bucket emptied by unsuspensions, and pages from a cursor on the last row of a bucket', async () => {
    const ids = await someUsers(store, 6);
    const dates = ['2026-08-10', '2026-08-11', '2026-09-10', '2026-09-11', '2026-10-10', '2026-10-11'];
    for (const [i, id] of ids.entries()) await suspendAt(id, dates[i]!);
    // Empty September.
    await f.suspensions.unsuspend(ids[2]!);
    await f.suspensions.unsuspend(ids[3]!);
    const first = await f.suspensions.page({ first: 2 });
    expect(first.edges.map((e) => e.node.userId)).toEqual([ids[5], ids[4]]);
    // Cursor on the last row of October: the next page lies two buckets further.
    const next = await f.suspensions.page({ first: 2, after: first.pageInfo.endCursor });
    expect(next.edges.map((e) => e.node.userId)).toEqual([ids[1], ids[0]]);
    expect(next.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: false });
    // And back from August into October.
    const back = await f.suspensions.page({ last: 5, before: next.pageInfo.startCursor });
    expect(back.edges.map((e) => e.node.userId)).toEqual([ids[5], ids[4]]);
    expect(back.pageInfo).toMatchObject({ hasPreviousPage: false, hasNextPage: true });
  });

  it('refuses a second suspension with CONFLICT and leaves the first intact', async () => {
    const [id] = await someUsers(store, 1);
    await f.suspensions.suspend({ userId: id!, reason: 'first', suspendedAt: day('2026-01-01') }, NOW);
    const err = await f.suspensions.suspend({ userId: id!, reason: 'second' }, NOW).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('CONFLICT');
    expect((await f.suspensions.byUserIds([id!]))[0]?.reason).toBe('first');
    expect(await checkInvariants(store, [id!])).toEqual([]);
  });

  it('answers NOT_FOUND for unsuspending a user who is not suspended, and for an unknown user', async () => {
    const [id] = await someUsers(store, 1);
    await expect(f.suspensions.unsuspend(id!)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(f.suspensions.suspend(aSuspension('00000000-0000-4000-8000-000000000000'), NOW)).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
  });

  it('refuses a blank reason and a suspension time in the future', async () => {
    const [id] = await someUsers(store, 1);
    await expect(f.suspensions.suspend({ userId: id!, reason: ' ' }, NOW)).rejects.toMatchObject({ argument: 'reason' });
    await expect(f.suspensions.suspend({ userId: id!, reason: 'x', suspendedAt: day('2027-01-01') }, NOW)).rejects.toMatchObject({
      argument: 'suspendedAt',
    });
    expect(await checkInvariants(store, [id!])).toEqual([]);
  });

  it('refuses a cursor of another connection before reading', async () => {
    // A well-signed cursor, but of a user's posts.
    const bad = codec.encodeCursor('User.posts:00000000-0000-4000-8000-000000000000', ['x']);
    await expect(f.suspensions.page({ first: 1, after: bad })).rejects.toBeInstanceOf(PagingArgumentError);
  });

  it('matches the reference model on random walks with suspensions and unsuspensions between pages', async () => {
    // The foundation's property, over a bucketed source: pages span buckets, buckets empty out.
    const ids = await someUsers(store, 40);
    const dateArb = fc.integer({ min: 0, max: 4 * 30 }).map((d) => new Date(Date.UTC(2026, 6, 1) + d * 86_400_000 + 3_600_000));
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat(39), dateArb), { maxLength: 25 }),
        fc.array(
          fc.oneof(
            fc.record({ kind: fc.constantFrom('next' as const, 'prev' as const), size: fc.integer({ min: 0, max: 6 }) }),
            fc.record({ kind: fc.constant('suspend' as const), user: fc.nat(39), at: dateArb }),
            fc.record({ kind: fc.constant('unsuspend' as const), index: fc.nat() }),
          ),
          { maxLength: 20 },
        ),
        fc.integer({ min: 1, max: 6 }),
        async (initial, steps, size) => {
          // The previous run's store (or the one beforeEach made) is done with.
          await pool.disposeAll();
          store = (await pool.create()).store;
          await prepare(store);
          // A fresh store per run; each user's row is written when first suspended.
          f = suspensionsOver(store);
          const live = new Map<string, Suspension>();
          const suspend = async (user: number, at: Date) => {
            const userId = ids[user]!;
            if (live.has(userId)) return;
            await store.upsert(usersTable, {
              user_id: userId,
              username: `u${user}`,
              display_name: 'x',
              created_at: at,
            });
            const s = await f.suspensions.suspend({ userId, reason: 'r', suspendedAt: at }, NOW);
            live.set(userId, s);
          };
          for (const [u, at] of initial) await suspend(u, at);
          let current = await f.suspensions.page({ first: size });
          expect(current.edges.map((e) => e.node)).toEqual(modelPage([...live.values()], newestFirst, 'forward', size, undefined).nodes);
          let anchor = current.edges.length ? { start: current.edges[0]!.node, end: current.edges[current.edges.length - 1]!.node, page: current } : null;
          for (const s of steps) {
            if (s.kind === 'suspend') await suspend(s.user, s.at);
            else if (s.kind === 'unsuspend') {
              const all = [...live.keys()];
              if (all.length) {
                const victim = all[s.index % all.length]!;
                await f.suspensions.unsuspend(victim);
                live.delete(victim);
              }
            } else if (anchor) {
              const forward = s.kind === 'next';
              const cursorNode = forward ? anchor.end : anchor.start;
              const args = forward
                ? { first: s.size, after: anchor.page.pageInfo.endCursor }
                : { last: s.size, before: anchor.page.pageInfo.startCursor };
              current = await f.suspensions.page(args);
              const want = modelPage([...live.values()], newestFirst, forward ? 'forward' : 'backward', s.size, cursorNode);
              expect({
                nodes: current.edges.map((e) => e.node),
                hasPreviousPage: current.pageInfo.hasPreviousPage,
                hasNextPage: current.pageInfo.hasNextPage,
              }).toEqual(want);
              if (current.edges.length) {
                anchor = { start: current.edges[0]!.node, end: current.edges[current.edges.length - 1]!.node, page: current };
              }
            }
          }
        },
      ),
      { numRuns: 60 },
    );
    // 60 walks: 273 s alone on one Cassandra node (2026-11-28), where 300 s was the limit.
  }, Math.max(300_000, 4 * target.ddlTimeoutMs));
});

