/**
 * The probes on a running server: /livez stays 200 while the process works; /readyz is
 * 503 while the store's schema differs from the declarations (a table dropped under the server) or the
 * store does not answer (a hung store: within READINESS_TIMEOUT_MS; Cassandra behind TCP
 * proxies, one a node, all stopped), and 200 again once it recovers. The Cassandra run is
 * skipped, with the reason printed, where no Cassandra is reachable.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import driver from 'cassandra-driver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_TABLES } from '../../src/composition-root.js';
import { READINESS_CACHE_MS, READINESS_TIMEOUT_MS } from '../../src/transport/http-server.js';
import { CassandraStore } from '../../src/store/cassandra/cassandra-store.js';
import type { Store } from '../../src/store/port.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';
import { cassandraClient, cassandraTarget, dropKeyspace, DDL_TIMEOUT_MS, testReplication, uniqueKeyspace, type StoreTarget } from '../support/stores.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

/** A target whose one store is already made (its own database file, or a keyspace reached through a proxy). */
function targetOf(name: string, store: Store, dispose: () => Promise<void>): StoreTarget {
  return {
    name,
    available: true,
    reason: '',
    create: async () => ({ store, dispose, snapshot: async () => ({}), countRows: async () => 0 }),
    ddlTimeoutMs: store instanceof CassandraStore ? DDL_TIMEOUT_MS.cassandra : DDL_TIMEOUT_MS.sqlite,
  };
}

async function probe(server: TestServer, path: '/livez' | '/readyz' | '/healthz'): Promise<{ status: number; body: Record<string, string> }> {
  const res = await fetch(server.url.replace(/\/graphql$/, path));
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

/** /readyz once the answer cached before a change has aged out (READINESS_CACHE_MS): the change's own answer. */
async function readyzAfterChange(server: TestServer): Promise<{ status: number; body: Record<string, string> }> {
  await sleep(READINESS_CACHE_MS);
  return probe(server, '/readyz');
}

/** Holds `checkSchema` calls (the store hangs for readiness) while `hung`. */
class HangingSchemaChecks extends StoreDecorator {
  hung = false;
  protected around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    if (this.hung && call.operation === 'checkSchema') return new Promise<T>(() => undefined);
    return run();
  }
}

describe('the probes on the embedded store', () => {
  let dir: string;
  let path: string;
  let server: TestServer;
  let hanging: HangingSchemaChecks;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'probes-'));
    path = join(dir, 'app.db');
    const store = new SqliteStore({ database: new Database(path) });
    server = await startTestServer({
      target: targetOf('SQLite file', store, async () => rmSync(dir, { recursive: true, force: true })),
      wrap: (s) => (hanging = new HangingSchemaChecks(s)),
    });
  });
  afterAll(() => server.close());

  it('answers /livez (and its older name /healthz) with 200', async () => {
    expect(await probe(server, '/livez')).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await probe(server, '/healthz')).toEqual({ status: 200, body: { status: 'ok' } });
  });

  it('answers /readyz 503 naming the table dropped under the running server, and 200 once it is back', async () => {
    expect(await probe(server, '/readyz')).toEqual({ status: 200, body: { status: 'ready' } });
    // Another connection to the same file drops a table, as an operator's mistake would.
    const other = new Database(path);
    try {
      other.exec('DROP TABLE t_users');
    } finally {
      other.close();
    }
    expect(await readyzAfterChange(server)).toEqual({
      status: 503,
      body: { status: 'unavailable', reason: "the store's schema differs from the declarations: table users" },
    });
    // The process still works: liveness does not depend on the store.
    expect((await probe(server, '/livez')).status).toBe(200);
    await server.app.store.ensureTables(ALL_TABLES);
    expect(await readyzAfterChange(server)).toEqual({ status: 200, body: { status: 'ready' } });
  });

  it(`answers /readyz 503 within ${READINESS_TIMEOUT_MS} ms when the store hangs, and 200 once it answers`, async () => {
    hanging.hung = true;
    await sleep(READINESS_CACHE_MS);
    const started = Date.now();
    const hung = await probe(server, '/readyz');
    const took = Date.now() - started;
    expect(hung).toEqual({ status: 503, body: { status: 'unavailable', reason: `the store did not answer within ${READINESS_TIMEOUT_MS} ms` } });
    expect(took).toBeGreaterThanOrEqual(READINESS_TIMEOUT_MS - 50);
    expect(took).toBeLessThan(READINESS_TIMEOUT_MS + 1_500);
    expect((await probe(server, '/livez')).status).toBe(200);
    hanging.hung = false;
    expect(await readyzAfterChange(server)).toEqual({ status: 200, body: { status: 'ready' } });
  });
});

/**
 * The driver's address translation (`policies.addressResolution`): a node the cluster
 * names (in system.peers, in status events) as `address:port` is reached at its proxy.
 * Contact points are not translated, so they are the proxies themselves.
 */
class ThroughProxies extends (driver.policies.addressResolution as unknown as { AddressTranslator: new () => driver.policies.addressResolution.AddressTranslator }).AddressTranslator {
  constructor(private readonly proxyOf: ReadonlyMap<string, string>) {
    super();
  }

  override translate(address: string, port: number, callback: (endpoint: string) => void): void {
    const endpoint = `${address}:${port}`;
    callback(this.proxyOf.get(endpoint) ?? endpoint);
  }
}

/** Every node of the cluster at `contactPoints`, as `address:port` (the driver finds the others in system.peers). */
async function clusterNodes(contactPoints: readonly string[]): Promise<string[]> {
  const admin = await cassandraClient(contactPoints);
  try {
    return admin.hosts.keys();
  } finally {
    await admin.shutdown();
  }
}

const cassandra = await cassandraTarget();
if (!cassandra.available) console.warn(`[probes] Cassandra run SKIPPED: ${cassandra.reason}`);

describe.skipIf(!cassandra.available)('the probes on Cassandra behind TCP proxies, one a node', () => {
  const proxies: TcpProxy[] = [];
  let server: TestServer;

  beforeAll(async () => {
    const points = await cassandra.contactPoints!();
    // On a ring the driver finds the other nodes and connects to them directly; so every
    // node gets a proxy, and the store's driver reaches each only through its proxy.
    const proxyOf = new Map<string, string>();
    for (const node of await clusterNodes(points)) {
      const colon = node.lastIndexOf(':');
      const proxy = new TcpProxy(node.slice(0, colon), Number(node.slice(colon + 1)));
      await proxy.start();
      proxies.push(proxy);
      proxyOf.set(node, `127.0.0.1:${proxy.port}`);
    }
    const client = await cassandraClient([...proxyOf.values()], { addressResolution: new ThroughProxies(proxyOf) });
    // Every host the driver knows is a proxy: none is reached around them.
    expect(client.hosts.keys().sort()).toEqual([...proxyOf.values()].sort());
    const keyspace = uniqueKeyspace('probes');
    const store = new CassandraStore({ client, keyspace, replication: testReplication() });
    const dispose = async () => {
      await Promise.all(proxies.map((p) => p.stop().catch(() => undefined)));
      await dropKeyspace(points, keyspace);
    };
    server = await startTestServer({ target: targetOf('Cassandra via proxies', store, dispose) });
  }, 180_000);
  afterAll(() => server?.close());

  it('answers /readyz 503 while every proxy is stopped and 200 once they run again; /livez 200 throughout', async () => {
    expect(await probe(server, '/readyz')).toEqual({ status: 200, body: { status: 'ready' } });
    await Promise.all(proxies.map((p) => p.stop()));
    const down = await readyzAfterChange(server);
    expect(down.status).toBe(503);
    expect(down.body.status).toBe('unavailable');
    expect((await probe(server, '/livez')).status).toBe(200);
    await Promise.all(proxies.map((p) => p.start()));
    // The driver reconnects on its own schedule (its reconnection policy starts at 1 s).
    const deadline = Date.now() + 60_000;
    let last = await probe(server, '/readyz');
    while (last.status !== 200 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      last = await probe(server, '/readyz');
    }
    expect(last).toEqual({ status: 200, body: { status: 'ready' } });
  }, 120_000);
});
