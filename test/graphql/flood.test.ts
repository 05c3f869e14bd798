/**
 * Holds under overload (issue 37): one token floods the real server (a child process,
 * default limits) on hundreds of connections with 100-edge timeline pages and their
 * authors, for FLOOD_SECONDS (default 20), while another user sends a light query every
 * 100 ms. The other user sees at least 99% success, a p50 of at most 50 ms and a p99 of
 * at most 250 ms; the flooder is told to slow down (429 with Retry-After); the server's
 * RSS stays at or below 400 MB, it never loses its presence, and afterwards it serves
 * normally. On Cassandra too when one is reachable (a keyspace of its own).
 */
import { randomUUID } from 'node:crypto';
import cassandra from 'cassandra-driver';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runFlood, seedFlood, type FloodReport } from '../../bench/overload.js';
import { authKey, signToken } from '../../src/graphql/auth.js';
import { startChildServer, type ChildServer } from '../support/child-server.js';
import { describeEachStore, SQLITE_TARGET } from '../support/stores.js';
import { TEST_AUTH_SECRET } from '../support/test-server.js';

const SECONDS = Number(process.env.FLOOD_SECONDS ?? 20);
const CONNECTIONS = 400;

describeEachStore('a flood from one client', (target) => {
  let server: ChildServer;
  let report: FloodReport;
  const flooder = { username: `flooder_${randomUUID().slice(0, 8)}`, token: '' };
  const other = { username: `other_${randomUUID().slice(0, 8)}`, token: '' };
  const keyspace = `flood_${randomUUID().replaceAll('-', '').slice(0, 12)}`;

  beforeAll(async () => {
    // Only where the store runs: the embedded one in memory, or a keyspace of its own on Cassandra.
    const env: Record<string, string> =
      target === SQLITE_TARGET
        ? { LOG_LEVEL: 'warn' }
        : {
            LOG_LEVEL: 'warn',
            STORE: 'cassandra',
            CASSANDRA_CONTACT_POINTS: (await target.contactPoints!()).join(','),
            CASSANDRA_KEYSPACE: keyspace,
            CASSANDRA_AUTO_SCHEMA: 'true',
          };
    server = await startChildServer(':memory:', env);
    const key = authKey(TEST_AUTH_SECRET);
    flooder.token = await signToken(key, flooder.username);
    other.token = await signToken(key, other.username);
    await seedFlood(server.url, [flooder, other]);
  }, target.ddlTimeoutMs + 60_000);
  afterAll(async () => {
    server?.process.kill('SIGKILL');
    if (target === SQLITE_TARGET) return;
    const client = new cassandra.Client({ contactPoints: [...(await target.contactPoints!())], localDataCenter: process.env.CASSANDRA_LOCAL_DC ?? 'datacenter1' });
    try {
      await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
    } finally {
      await client.shutdown();
    }
  }, target.ddlTimeoutMs);

  it(`leaves another user served while one token floods on ${CONNECTIONS} connections for ${SECONDS} s, and tells the flooder to slow down`, async () => {
    report = await runFlood(
      { url: server.url, pid: server.process.pid!, output: server.output },
      { seconds: SECONDS, connections: CONNECTIONS, floodToken: flooder.token, floodUsername: flooder.username, otherToken: other.token },
    );
    console.log(`flood (${target.name}, ${SECONDS} s, ${CONNECTIONS} connections): ${JSON.stringify(report)}`);
    expect(report.other.sent).toBeGreaterThan(SECONDS * 5);
    expect(report.other.successRate).toBeGreaterThanOrEqual(0.99);
    expect(report.other.p50Ms).toBeLessThanOrEqual(50);
    expect(report.other.p99Ms).toBeLessThanOrEqual(250);
    // The flooder was served its budget, then refused with 429 (or shed with 503), never failed.
    expect(report.flooder.served).toBeGreaterThan(0);
    expect(report.flooder.rateLimited).toBeGreaterThan(report.flooder.served);
    expect(report.flooder.failed).toBe(0);
    expect(report.peakRssMb).toBeLessThanOrEqual(400);
    expect(report.presenceLost).toBe(false);
    // Afterwards, normal service.
    expect(report.after.successRate).toBe(1);
    expect(report.after.p99Ms).toBeLessThanOrEqual(50);
    const ready = await fetch(new URL('/readyz', server.url));
    expect(ready.status).toBe(200);
  }, (SECONDS + 60) * 1000);
});
