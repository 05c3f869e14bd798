/**
 * Two server processes over one store, on one controllable time, each with its own
 * clock node (the second one's clock 400 ms ahead): for tests of what the counts'
 * verifiers settle (connection counts, the counted index behind `offset`).
 */
import pino from 'pino';
import { ALL_TABLES, createRequestContext, createServices } from '../../src/composition-root.js';
import { readConnectionCounts, type CountChange } from '../../src/counts/connection-counts.js';
import { Presence } from '../../src/background/presence.js';
import { JOB_WINDOW_MS, closedThrough } from '../../src/background/windowed-job.js';
import { MonotonicClock } from '../../src/store/clock.js';
import type { Store } from '../../src/store/port.js';
import type { ClusterSettings } from '../../src/config.js';

/** When the servers' time starts. */
export const T0 = Date.parse('2026-01-01T00:00:00Z');
/** The cluster settings both servers run with. */
export const CLUSTER = { clockSkewMs: 1_000, writeTimeoutMs: 2_000 };

/**
 * Two servers over `store` (its tables made here), with `cluster`'s settings (`CLUSTER`
 * by default), and `countListsSparse` (COUNT_LISTS_SPARSE) where given.
 */
export async function twoServers(store: Store, cluster: ClusterSettings = CLUSTER, options: { countListsSparse?: boolean } = {}) {
  await store.ensureTables(ALL_TABLES);
  let nowMs = T0;
  const server = async (name: string, offsetMs: number) => {
    const presence = await Presence.claim(store, name, { random: () => 0 });
    const clock = new MonotonicClock({ now: () => nowMs + offsetMs, node: presence.identity.node });
    const services = createServices(
      { cursorSecret: 'connection-counts-test-secret', suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins', cluster, ...options },
      { store, logger: pino({ level: 'silent' }), clock, presence },
    );
    return {
      services,
      ctx: () => createRequestContext(services, { username: 'root', isAdmin: true }),
      /** Record a change as a write would, alone in its batch. */
      record: (change: CountChange) => store.batch(services.counts.mutations(change)),
      read: async (key: string) => (await readConnectionCounts(store, [key], { nowMs: nowMs + offsetMs, cluster, progress: services.countVerifier.progress() }))[0]!,
    };
  };
  const a = await server('a', 0);
  const b = await server('b', 400);
  return {
    store,
    a,
    b,
    at: (ms: number) => void (nowMs = ms),
    now: () => nowMs,
    /** Time enough for every window written so far to close. */
    closeWindows: () => void (nowMs += cluster.clockSkewMs + cluster.writeTimeoutMs + 2 * JOB_WINDOW_MS),
    /** The end of the closed windows, by the first server's clock. */
    through: () => closedThrough(a.services.clock, cluster),
    /** Let every window close, and both verifiers pass. */
    async settle() {
      nowMs += cluster.clockSkewMs + cluster.writeTimeoutMs + 2 * JOB_WINDOW_MS;
      await a.services.countVerifier.runOnce();
      await b.services.countVerifier.runOnce();
    },
  };
}
