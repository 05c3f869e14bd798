/**
 * Seed 001's first-write-wins answers `counted` to exactly one request of a user, even
 * when a request that read the clock earlier lands its write after a later request has
 * read back its win (found on Cassandra: 51 of 200 concurrent requests answered counted
 * for 50 users). The store here makes that order happen every time.
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ALL_TABLES, createRequestContext, createServices } from '../../src/composition-root.js';
import { meetingUsersTable } from '../../src/features/meetings/meetings-tables.js';
import { MonotonicClock } from '../../src/store/clock.js';
import type { Store } from '../../src/store/port.js';
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';
import { describeEachStore, StorePool } from '../support/stores.js';

/**
 * Holds the first batch that writes an acceptance until another request has read an
 * acceptance back (or `patienceMs` passed): the earlier request's write lands late.
 */
class LateFirstAcceptance extends StoreDecorator {
  private holding = false;
  private readBack!: () => void;
  private readonly someoneReadBack = new Promise<void>((resolve) => (this.readBack = resolve));

  constructor(
    inner: Store,
    private readonly patienceMs: number,
  ) {
    super(inner);
  }

  protected async around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    if (call.operation === 'batch' && call.tables.includes(meetingUsersTable.name) && !this.holding) {
      this.holding = true;
      await Promise.race([this.someoneReadBack, new Promise((resolve) => setTimeout(resolve, this.patienceMs))]);
      return run();
    }
    const result = await run();
    if (call.operation === 'readCells' && call.table === meetingUsersTable.name) this.readBack();
    return result;
  }
}

const USER = '00000000-0000-4000-8000-000000000001';

describeEachStore('meeting acceptances, first-write-wins', (target) => {
  const pool = new StorePool(target);
  afterEach(() => pool.disposeAll());

  it('answers counted to one request of a user when the earlier one lands its write last', async () => {
    const { store } = await pool.create();
    await store.ensureTables(ALL_TABLES);
    const late = new LateFirstAcceptance(store, 300);
    const services = createServices(
      { cursorSecret: 'meeting-acceptances-test-secret', suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins' },
      { store: late, logger: pino({ level: 'silent' }), clock: new MonotonicClock() },
    );
    const ctx = () => createRequestContext(services, { username: 'root', isAdmin: true });
    const meeting = await ctx().meetings.create({ title: 'Planning' }, USER);
    const answers = await Promise.all([ctx().meetings.accept(meeting.meetingId, USER), ctx().meetings.accept(meeting.meetingId, USER)]);
    expect(answers.map((a) => a.counted).sort()).toEqual([false, true]);
    // And the row kept is the first request's, whose write was held back.
    const rows = await store.slice(meetingUsersTable, { partition: { meeting_id: meeting.meetingId }, limit: 10 });
    expect(rows.map((r) => r.user_id)).toEqual([USER]);
  });

  it('keeps an acknowledged acceptance when the user accepts again on a server whose clock is behind', async () => {
    const { store } = await pool.create();
    await store.ensureTables(ALL_TABLES);
    const serverAt = (offsetMs: number) =>
      createServices(
        { cursorSecret: 'meeting-acceptances-test-secret', suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins' },
        { store, logger: pino({ level: 'silent' }), clock: new MonotonicClock({ now: () => Date.now() + offsetMs }) },
      );
    const [ahead, behind] = [serverAt(300), serverAt(-300)];
    const ctx = (services: ReturnType<typeof serverAt>) => createRequestContext(services, { username: 'root', isAdmin: true });
    const meeting = await ctx(ahead).meetings.create({ title: 'Planning' }, USER);
    expect((await ctx(ahead).meetings.accept(meeting.meetingId, USER)).counted).toBe(true);
    const first = await store.get(meetingUsersTable, { meeting_id: meeting.meetingId, user_id: USER });
    // The repeat comes later in real time, with a clock that reads earlier.
    expect((await ctx(behind).meetings.accept(meeting.meetingId, USER)).counted).toBe(false);
    expect(await store.get(meetingUsersTable, { meeting_id: meeting.meetingId, user_id: USER })).toEqual(first);
  });
});
