/**
 * The Cassandra adapter's send turn, with a fake client (no cluster needed): reads asked
 * for from separate callbacks of one event-loop phase (as a server's requests arrive,
 * each on its own socket) reach the driver in one run, before any of the driver's ticks,
 * so that the driver coalesces them into one socket write; writes are not held.
 */
import type cassandra from 'cassandra-driver';
import { describe, expect, it } from 'vitest';
import { CassandraStore, type CassandraClientLike, type CassandraResultLike } from '../../src/store/cassandra/cassandra-store.js';
import { StoreUnavailableError } from '../../src/store/port.js';
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

  it('keeps at most readConcurrency keyed reads in flight, sends the reads that answers free together at the next turn, and returns rows in key order', async () => {
    const client = new AnsweringClient();
    const store = new CassandraStore({ client, keyspace: 'ks', readConcurrency: 2 });
    const ids = Array.from({ length: 5 }, (_, i) => `00000000-0000-4000-8000-00000000000${i}`);
    const many = store.getMany(kv, ids.map((id) => ({ id })));
    await turn();
    expect(client.waiting.map((w) => w.id)).toEqual([ids[0], ids[1]]);
    // Both answers arrive in one turn: the two reads they free leave together, at the next.
    client.answer(ids[1]!);
    client.answer(ids[0]!);
    await Promise.resolve();
    expect(client.waiting).toHaveLength(0);
    await turn();
    expect(client.waiting.map((w) => w.id)).toEqual([ids[2], ids[3]]);
    expect(client.mostInFlight).toBe(2);
    client.answer(ids[3]!);
    await Promise.resolve();
    await turn();
    expect(client.waiting.map((w) => w.id)).toEqual([ids[2], ids[4]]);
    client.answer(ids[4]!);
    client.answer(ids[2]!);
    expect(await many).toEqual(ids.map((id) => ({ id, name: `name of ${id}` })));
    expect(client.mostInFlight).toBe(2);
  });

  it('sends no further keyed read once one has failed, and rejects with the failure as a store error', async () => {
    const client = new AnsweringClient();
    const store = new CassandraStore({ client, keyspace: 'ks', readConcurrency: 2 });
    const ids = Array.from({ length: 4 }, (_, i) => `00000000-0000-4000-8000-00000000000${i}`);
    const many = store.getMany(kv, ids.map((id) => ({ id })));
    const failure = expect(many).rejects.toThrow(new StoreUnavailableError('Cassandra could not answer: node down'));
    await turn();
    client.answer(ids[0]!);
    client.fail(ids[1]!, new Error('node down'));
    await failure;
    await turn();
    expect(client.executed).toEqual([ids[0], ids[1]]);
  });
});

/** The rest of this loop turn and the next check phase (a send turn). */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A client whose keyed reads wait until the test answers them (a row for the key) or fails them. */
class AnsweringClient implements CassandraClientLike {
  readonly metadata = {};
  readonly waiting: Array<{ id: string; settle: (row: Error | { get(column: string): unknown }) => void }> = [];
  readonly executed: string[] = [];
  mostInFlight = 0;
  async connect(): Promise<void> {}
  async shutdown(): Promise<void> {}
  execute(_query: string, params?: unknown[]): Promise<CassandraResultLike> {
    const id = String(params![0]);
    this.executed.push(id);
    return new Promise((resolve, reject) => {
      this.waiting.push({
        id,
        settle: (row) => (row instanceof Error ? reject(row) : resolve({ rows: [row], wasApplied: () => true })),
      });
      this.mostInFlight = Math.max(this.mostInFlight, this.waiting.length);
    });
  }
  async batch(): Promise<CassandraResultLike> {
    return EMPTY;
  }
  answer(id: string): void {
    const columns: Record<string, unknown> = { id, name: `name of ${id}` };
    this.take(id).settle({ get: (column) => columns[column] });
  }
  fail(id: string, err: Error): void {
    this.take(id).settle(err);
  }
  private take(id: string) {
    const at = this.waiting.findIndex((w) => w.id === id);
    if (at < 0) throw new Error(`no read of ${id} in flight`);
    return this.waiting.splice(at, 1)[0]!;
  }
}

