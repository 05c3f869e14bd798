/**
 * The Cassandra adapter's send turn, with a fake client (no cluster needed): reads asked
 * for from separate callbacks of one event-loop phase (as a server's requests arrive,
 * each on its own socket) reach the driver in one run, before any of the driver's ticks,
 * so that the driver coalesces them into one socket write; writes are not held.
 */
import type cassandra from 'cassandra-driver';
import { describe, expect, it } from 'vitest';
import { CassandraStore, type CassandraClientLike, type CassandraResultLike } from '../../src/store/cassandra/cassandra-store.js';
import { defineTable } from '../../src/store/table.js';

const kv = defineTable({ name: 'kv', columns: { id: 'uuid', name: 'text' }, partitionKey: ['id'] });
const EMPTY: CassandraResultLike = { rows: [], wasApplied: () => true };
const ID = ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002'] as const;

/**
 * A client that notes, for each statement, how many of the driver's write ticks had run
 * when it was handed over: the driver writes what it holds on `process.nextTick`, so
 * statements handed over at the same count share one write.
 */
class TickCountingClient implements CassandraClientLike {
  readonly metadata = {};
  readonly sent: Array<{ query: string; ticksRun: number }> = [];
  private ticksRun = 0;
  async connect(): Promise<void> {}
  async shutdown(): Promise<void> {}
  async execute(query: string, _params?: unknown[], _options?: cassandra.QueryOptions): Promise<CassandraResultLike> {
    this.sent.push({ query, ticksRun: this.ticksRun });
    process.nextTick(() => this.ticksRun++);
    return EMPTY;
  }
  async batch(): Promise<CassandraResultLike> {
    return EMPTY;
  }
}

/** Run `calls` each from its own `setImmediate` callback (one loop phase, a tick queue each); resolves when all have settled. */
function fromSeparateCallbacks(calls: ReadonlyArray<() => Promise<unknown>>): Promise<unknown[]> {
  return Promise.all(calls.map((call) => new Promise((resolve, reject) => setImmediate(() => call().then(resolve, reject)))));
}

describe("the Cassandra adapter's send turn", () => {
  it('hands reads asked for from two callbacks of one loop phase to the driver before either write tick runs', async () => {
    const client = new TickCountingClient();
    const store = new CassandraStore({ client, keyspace: 'ks' });
    const rows = await fromSeparateCallbacks([() => store.get(kv, { id: ID[0] }), () => store.get(kv, { id: ID[1] })]);
    expect(rows).toEqual([null, null]);
    expect(client.sent).toEqual([
      { query: expect.stringMatching(/^SELECT .* FROM ks\.kv WHERE id = \?$/), ticksRun: 0 },
      { query: expect.stringMatching(/^SELECT .* FROM ks\.kv WHERE id = \?$/), ticksRun: 0 },
    ]);
  });

  it("hands a getMany's reads and another callback's read to the driver together", async () => {
    const client = new TickCountingClient();
    const store = new CassandraStore({ client, keyspace: 'ks' });
    const [many, one] = await fromSeparateCallbacks([() => store.getMany(kv, [{ id: ID[0] }, { id: ID[1] }]), () => store.get(kv, { id: ID[0] })]);
    expect([many, one]).toEqual([[null, null], null]);
    expect(client.sent.map((s) => s.ticksRun)).toEqual([0, 0, 0]);
  });

  it("hands the first reads of a getMany of more keys than it sends at once to the driver with another callback's read", async () => {
    const client = new TickCountingClient();
    const store = new CassandraStore({ client, keyspace: 'ks', readConcurrency: 2 });
    const keys = [{ id: ID[0] }, { id: ID[1] }, { id: ID[0] }];
    const [many, one] = await fromSeparateCallbacks([() => store.getMany(kv, keys), () => store.get(kv, { id: ID[1] })]);
    expect([many, one]).toEqual([[null, null, null], null]);
    const ticks = client.sent.map((s) => s.ticksRun);
    expect(ticks.slice(0, 3)).toEqual([0, 0, 0]);
    expect(ticks).toHaveLength(4);
    expect(ticks[3]).toBeGreaterThan(0);
  });

  it('sends a write at once, in its own callback: writes are not held', async () => {
    const client = new TickCountingClient();
    const store = new CassandraStore({ client, keyspace: 'ks' });
    await fromSeparateCallbacks([() => store.upsert(kv, { id: ID[0], name: 'a' }), () => store.upsert(kv, { id: ID[1], name: 'b' })]);
    expect(client.sent).toEqual([
      { query: expect.stringMatching(/^INSERT INTO ks\.kv/), ticksRun: 0 },
      { query: expect.stringMatching(/^INSERT INTO ks\.kv/), ticksRun: 1 },
    ]);
  });
});
