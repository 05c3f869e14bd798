/**
 * `User.meetings` and `User.lists` against a model: random creations, acceptances
 * (repeated, concurrent, and some failing after the lookup row was written), paged
 * forward and backward at random page sizes, always give exactly the model's meetings
 * and lists, newest first, each once.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ALL_TABLES } from '../../src/composition-root.js';
import { meetingUsersTable } from '../../src/features/meetings/meetings-tables.js';
import { aUser } from '../../src/features/users/user-mother.js';
import type { Page, PageArgs } from '../../src/paging/types.js';
import { FaultyStore } from '../support/faulty-store.js';
import { memorySqliteStore } from '../support/stores.js';
import { featuresOver } from '../support/suspension-fixture.js';

const USERS = 3;
const T0 = Date.parse('2026-01-01T00:00:00Z');

type Op =
  | { kind: 'createMeeting'; by: number }
  | { kind: 'createList'; by: number }
  | { kind: 'accept'; by: number; meeting: number; times: number; fails: boolean };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('createMeeting' as const), by: fc.nat(USERS - 1) }),
  fc.record({ kind: fc.constant('createList' as const), by: fc.nat(USERS - 1) }),
  fc.record({
    kind: fc.constant('accept' as const),
    by: fc.nat(USERS - 1),
    meeting: fc.nat(20),
    times: fc.integer({ min: 1, max: 4 }),
    fails: fc.boolean(),
  }),
);

/** Every node of a connection, paged `size` at a time forward, then backward; both must agree. */
async function pageAll<N>(read: (args: PageArgs) => Promise<Page<N>>, size: number, idOf: (n: N) => string): Promise<string[]> {
  const forward: string[] = [];
  let page = await read({ first: size });
  forward.push(...page.edges.map((e) => idOf(e.node)));
  expect(page.pageInfo.hasPreviousPage).toBe(false);
  while (page.pageInfo.hasNextPage) {
    page = await read({ first: size, after: page.pageInfo.endCursor });
    expect(page.pageInfo.hasPreviousPage).toBe(true);
    forward.push(...page.edges.map((e) => idOf(e.node)));
  }
  const backward: string[] = [];
  page = await read({ last: size });
  backward.unshift(...page.edges.map((e) => idOf(e.node)));
  expect(page.pageInfo.hasNextPage).toBe(false);
  while (page.pageInfo.hasPreviousPage) {
    page = await read({ last: size, before: page.pageInfo.startCursor });
    expect(page.pageInfo.hasNextPage).toBe(true);
    backward.unshift(...page.edges.map((e) => idOf(e.node)));
  }
  expect(backward).toEqual(forward);
  return forward;
}

describe("a user's meetings and lists", () => {
  it('match the model under random creations and repeated, concurrent and failing accepts', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), fc.integer({ min: 1, max: 4 }), async (ops, size) => {
        const faulty = new FaultyStore(memorySqliteStore());
        await faulty.ensureTables(ALL_TABLES);
        const users: string[] = [];
        for (let i = 0; i < USERS; i++) users.push((await featuresOver(faulty).users.create(aUser())).id);
        const meetings: Array<{ id: string; by: number }> = [];
        const model = users.map(() => ({ meetings: [] as string[], lists: [] as string[] }));
        for (const [step, o] of ops.entries()) {
          // One instant per step: the model's newest-first order is the steps' reverse.
          const at = new Date(T0 + step * 1_000);
          const ctx = featuresOver(faulty);
          if (o.kind === 'createMeeting') {
            const m = await ctx.meetings.create({ title: `m${step}` }, users[o.by]!, at);
            meetings.push({ id: m.meetingId, by: o.by });
            model[o.by]!.meetings.unshift(m.meetingId);
          } else if (o.kind === 'createList') {
            model[o.by]!.lists.unshift((await ctx.lists.create(`l${step}`, users[o.by]!, at)).listId);
          } else if (meetings.length > 0) {
            const m = meetings[o.meeting % meetings.length]!;
            // A failing accept dies after its lookup row, before the acceptance is written.
            if (o.fails) faulty.failWhen((call) => call.tables.includes(meetingUsersTable.name));
            const outcomes = await Promise.allSettled(Array.from({ length: o.times }, () => ctx.meetings.accept(m.id, users[o.by]!)));
            faulty.heal();
            expect(outcomes.every((r) => r.status === (o.fails ? 'rejected' : 'fulfilled'))).toBe(true);
            const mine = model[o.by]!.meetings;
            if (!o.fails && !mine.includes(m.id)) mine.push(m.id);
          }
        }
        for (const [u, userId] of users.entries()) {
          const ctx = featuresOver(faulty);
          // The model keeps each user's meetings in creation order, newest first.
          const order = new Map(meetings.map((m, i) => [m.id, i]));
          const expected = [...model[u]!.meetings].sort((a, b) => order.get(b)! - order.get(a)!);
          expect(await pageAll((args) => ctx.meetings.ofUser(userId, args), size, (n) => n.meetingId)).toEqual(expected);
          expect(await pageAll((args) => ctx.lists.ofOwner(userId, args), size, (n) => n.listId)).toEqual(model[u]!.lists);
        }
      }),
      { numRuns: 40 },
    );
  }, 60_000);
});
