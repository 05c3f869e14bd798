/**
 * Reading acceptance counts: the settled count plus the counter windows after it, by
 * key for a page of meetings (two round trips whatever their number), and by a slice
 * for a meeting whose unsettled windows span too far to read by key (verifiers down).
 */
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { ALL_TABLES, createAcceptanceVerifier, createRequestContext, createServices } from '../../src/composition-root.js';
import { ACCEPTANCE_WINDOW_MS, readAcceptanceCounts, settleMeeting } from '../../src/features/meetings/acceptance-verifier.js';
import { MonotonicClock } from '../../src/store/clock.js';
import { CountingStore } from '../../src/store/store-decorator.js';
import { describeEachStore, StorePool } from '../support/stores.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const userId = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;

async function setUp(pool: StorePool) {
  const { store } = await pool.create();
  await store.ensureTables(ALL_TABLES);
  let nowMs = T0;
  const clock = new MonotonicClock({ now: () => nowMs });
  const services = createServices(
    { cursorSecret: 'acceptance-counts-test-secret', suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins' },
    { store, logger: pino({ level: 'silent' }), clock },
  );
  const ctx = () => createRequestContext(services, { username: 'root', isAdmin: true });
  return {
    store,
    services,
    ctx,
    setNow: (ms: number) => void (nowMs = ms),
    async meeting(title: string) {
      return (await ctx().meetings.create({ title }, userId(0))).meetingId;
    },
  };
}

describeEachStore('acceptance counts', (target) => {
  const pool = new StorePool(target);
  afterEach(() => pool.disposeAll());

  it('are exact over a span of windows too wide to read by key, before and after settling', async () => {
    const t = await setUp(pool);
    const meeting = await t.meeting('long');
    // One acceptance in each of 40 windows (the by-key limit is 24), and repeats that count nothing.
    for (let i = 0; i < 40; i++) {
      t.setNow(T0 + i * ACCEPTANCE_WINDOW_MS);
      expect((await t.ctx().meetings.accept(meeting, userId(i + 1))).counted).toBe(true);
      expect((await t.ctx().meetings.accept(meeting, userId(i + 1))).counted).toBe(false);
    }
    expect(await readAcceptanceCounts(t.store, [meeting])).toEqual([40]);
    // Settled through window 30: the settlement counts 30, the remaining 10 windows add 10.
    expect(await settleMeeting(t.store, meeting, T0 + 30 * ACCEPTANCE_WINDOW_MS)).toBe(30);
    expect(await readAcceptanceCounts(t.store, [meeting])).toEqual([40]);
    // The verifier, long after, settles everything.
    t.setNow(T0 + 60 * ACCEPTANCE_WINDOW_MS);
    await createAcceptanceVerifier(t.services).runOnce();
    expect(await readAcceptanceCounts(t.store, [meeting])).toEqual([40]);
  });

  it('cost two round trips for a page of meetings, whatever their number and windows', async () => {
    const t = await setUp(pool);
    const meetings: string[] = [];
    for (let m = 0; m < 12; m++) {
      const meeting = await t.meeting(`m${m}`);
      meetings.push(meeting);
      // Meeting m gets m acceptances, one window apart.
      for (let i = 0; i < m; i++) {
        t.setNow(T0 + (m + i) * ACCEPTANCE_WINDOW_MS);
        await t.ctx().meetings.accept(meeting, userId(i + 1));
      }
    }
    const counting = new CountingStore(t.store);
    expect(await readAcceptanceCounts(counting, meetings)).toEqual(meetings.map((_, m) => m));
    expect(counting.roundTrips).toBe(2);
  });
});
