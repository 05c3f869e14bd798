/**
 * Honest about the clock-skew bound: a write time read ahead of the server's clock by
 * more than CLOCK_SKEW_MS is logged and counted in /metrics, and beyond
 * CLOCK_SKEW_UNREADY_MS fails /readyz for a minute; the write that read it is still
 * ordered above it, so nothing is lost.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClockSkewWatch, UNREADY_HOLD_MS } from '../../src/observability/clock-skew.js';
import { usersTable } from '../../src/features/users/users-tables.js';
import { localIdOf } from '../../src/graphql/ids.js';
import { MonotonicClock } from '../../src/store/clock.js';
import { READINESS_CACHE_MS } from '../../src/transport/http-server.js';
import type { Store } from '../../src/store/port.js';
import { parseSamples, valueOf } from '../support/prometheus.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

describe('the clock-skew watch', () => {
  it('counts and logs leads beyond the bound (a line at most every 10 s), and fails readiness for a minute past the second bound', () => {
    let now = 1_000_000;
    const leads: number[] = [];
    const logged: string[] = [];
    const watch = new ClockSkewWatch({
      boundMs: 1_000,
      unreadyMs: 5_000,
      now: () => now,
      report: { clockAheadBeyondBound: (ms) => leads.push(ms) },
      logger: { warn: (_fields: unknown, message: string) => void logged.push(message) } as never,
    });
    watch.observe(999);
    watch.observe(1_000);
    expect([leads, logged.length, watch.notReadyBecause()]).toEqual([[], 0, null]);
    watch.observe(1_500);
    watch.observe(2_000);
    expect([leads, logged.length, watch.notReadyBecause()]).toEqual([[1_500, 2_000], 1, null]);
    now += 10_000;
    watch.observe(6_000);
    expect(logged).toHaveLength(2);
    expect(watch.notReadyBecause()).toMatch(/6000 ms ahead .*CLOCK_SKEW_UNREADY_MS \(5000 ms\)/);
    now += UNREADY_HOLD_MS + 1;
    expect(watch.notReadyBecause()).toBeNull();
  });

  it('refuses a readiness bound below the clock-skew bound', () => {
    expect(() => new ClockSkewWatch({ boundMs: 1_000, unreadyMs: 999 })).toThrow(/at least the clock-skew bound/);
  });

  it('hears of every write time a clock observes ahead of its wall time', () => {
    const leads: number[] = [];
    const clock = new MonotonicClock({ now: () => 2_000, onAhead: (ms) => leads.push(ms) });
    clock.observe(1_500_000n);
    clock.observe(2_750_000n);
    expect(leads).toEqual([750]);
    expect(clock.nowMicros() > 2_750_000n).toBe(true);
  });
});

describe('a server reading a write time beyond the bound', () => {
  let server: TestServer;
  let store: Store;
  let admin: string;

  beforeAll(async () => {
    server = await startTestServer({ env: { METRICS: 'true', CLOCK_SKEW_MS: '1000', CLOCK_SKEW_UNREADY_MS: '5000' }, wrap: (s) => (store = s) });
    admin = await server.token('root', { admin: true });
  });
  afterAll(() => server.close());

  const scrape = async () => parseSamples(await (await fetch(server.url.replace(/\/graphql$/, '/metrics'))).text());
  const ready = async () => (await fetch(server.url.replace(/\/graphql$/, '/readyz'))).status;

  it('still orders its update above it, counts it in /metrics and fails /readyz', async () => {
    const made = (await server.gql(`mutation { createUser(input: { username: "ahead", displayName: "Made" }) { user { id } } }`, {}, admin)) as any;
    const id = made.data.createUser.user.id as string;
    expect(await ready()).toBe(200);
    expect(valueOf(await scrape(), 'relay_clock_skew_beyond_bound_total')).toBe(0);
    // A server whose clock is 8 s ahead (beyond both bounds) changed the user.
    const userId = localIdOf(id, 'id', 'User');
    await store.upsert(usersTable, { user_id: userId, display_name: 'From ahead' }, { timestamp: BigInt(Date.now() + 8_000) * 1000n });
    const updated = (await server.gql(`mutation ($i: UpdateUserInput!) { updateUser(input: $i) { user { displayName } } }`, { i: { id, displayName: 'Later' } }, admin)) as any;
    expect(updated.data.updateUser.user.displayName).toBe('Later');
    const shown = (await server.gql(`query ($id: ID!) { node(id: $id) { ... on User { displayName } } }`, { id }, admin)) as any;
    expect(shown.data.node.displayName).toBe('Later');
    const samples = await scrape();
    expect(valueOf(samples, 'relay_clock_skew_beyond_bound_total')).toBe(1);
    expect(valueOf(samples, 'relay_clock_ahead_max_seconds')).toBeGreaterThan(7);
    // /readyz answers from a result at most READINESS_CACHE_MS old: the 200 above ages out first.
    await new Promise((resolve) => setTimeout(resolve, READINESS_CACHE_MS));
    expect(await ready()).toBe(503);
  });
});
