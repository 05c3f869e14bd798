/**
 * What only a real Cassandra can show about the Cassandra adapter, beyond the shared
 * contract: paged reads and tuple relations counted as statements, the schema check a
 * server runs at start, and lightweight transactions whose response is lost (a fault-
 * injecting wrapper around the real driver client times them out after, or instead of,
 * running them). Skipped, with the reason printed, where no Cassandra is reachable.
 */
import { randomUUID } from 'node:crypto';
import cassandra from 'cassandra-driver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CassandraClientLike } from '../../src/store/cassandra/cassandra-store.js';
import { CassandraStore } from '../../src/store/cassandra/cassandra-store.js';
import { timelineTable } from '../../src/features/timeline/timeline-tables.js';
import type { Mutation, Store } from '../../src/store/port.js';
import { StoreStartupError, StoreUnavailableError } from '../../src/store/port.js';
import { CountingStore } from '../../src/store/store-decorator.js';
import { ObservedStore } from '../../src/store/store-observer.js';
import { defineTable, type ClusteringOrder } from '../../src/store/table.js';
import { cassandraClient, cassandraTarget, uniqueKeyspace, type StoreUnderTest } from '../support/stores.js';

const target = await cassandraTarget();
if (!target.available) console.warn(`[cassandra] adapter tests SKIPPED: ${target.reason}`);

const claims = defineTable({ name: 'claims', columns: { name: 'text', owner: 'uuid' }, partitionKey: ['name'] });
/** Rows of one partition clustered by (a, b) in the given orders. */
function rowsTable(name: string, orders: [ClusteringOrder, ClusteringOrder]) {
  const [a, b] = orders;
  return defineTable({ name, columns: { p: 'uuid', a: 'int', b: 'int', v: 'text' }, partitionKey: ['p'], clustering: [{ column: 'a', order: a }, { column: 'b', order: b }] });
}
const hits = defineTable({ name: 'hits', columns: { name: 'text', n: 'counter' }, partitionKey: ['name'] });
const routed = defineTable({ name: 'routed', columns: { id: 'uuid', v: 'text' }, partitionKey: ['id'] });
const routedProbe = defineTable({ name: 'routed_probe', columns: { id: 'uuid', v: 'text' }, partitionKey: ['id'] });
const desc = rowsTable('desc_rows', ['DESC', 'DESC']);
const mixed = rowsTable('mixed_rows', ['DESC', 'ASC']);

/** A driver client whose next lightweight transaction times out, after or instead of running. */
class LostResponses implements CassandraClientLike {
  private armed: 'after' | 'instead' | null = null;
  /** Every statement sent, and whether it was marked idempotent (retries, speculative executions). */
  readonly sent: Array<{ query: string; idempotent: boolean | undefined; routingKey?: unknown }> = [];
  constructor(private readonly client: CassandraClientLike) {}
  get metadata() {
    return this.client.metadata;
  }
  loseNext(how: 'after' | 'instead'): void {
    this.armed = how;
  }
  connect() {
    return this.client.connect();
  }
  batch(queries: Array<{ query: string; params?: unknown[] }>, options?: cassandra.QueryOptions) {
    this.sent.push({ query: `BATCH ${queries.map((q) => q.query).join('; ')}`, idempotent: options?.isIdempotent });
    return this.client.batch(queries, options);
  }
  shutdown() {
    return this.client.shutdown();
  }
  async execute(query: string, params?: unknown[], options?: cassandra.QueryOptions) {
    this.sent.push({ query, idempotent: options?.isIdempotent, routingKey: options?.routingKey });
    const how = this.armed;
    if (how && / IF (NOT )?EXISTS| IF \w+ = \?/.test(query)) {
      this.armed = null;
      if (how === 'after') await this.client.execute(query, params, options);
      throw new cassandra.errors.ResponseError(
        cassandra.types.responseErrorCodes.writeTimeout,
        'Operation timed out - received only 1 responses.',
      );
    }
    return this.client.execute(query, params, options);
  }
}

describe.skipIf(!target.available)('the Cassandra adapter on a real Cassandra', () => {
  let subject: StoreUnderTest;
  let store: Store;
  let lost: LostResponses;

  beforeAll(async () => {
    subject = await target.create({ wrapClient: (c) => (lost = new LostResponses(c)) });
    store = subject.store;
    await store.ensureTables([claims, hits, desc, mixed, routed, routedProbe]);
  }, 120_000);

  afterAll(async () => {
    await subject?.dispose();
  });

  it('follows every page of a 12,000-row slice (three statements) and sends one tuple relation for a one-way key', async () => {
    const p = randomUUID();
    const rows: Mutation[] = [];
    for (let a = 0; a < 2; a++) for (let b = 0; b < 6_000; b++) rows.push({ kind: 'upsert', table: desc, row: { p, a, b, v: '' } });
    for (let i = 0; i < rows.length; i += 100) await store.batch(rows.slice(i, i + 100));
    const counting = new CountingStore(store);
    expect(await counting.slice(desc, { partition: { p }, limit: 20_000 })).toHaveLength(12_000);
    expect({ roundTrips: counting.roundTrips, statements: counting.statements }).toEqual({ roundTrips: 1, statements: 3 });
    // After (1, 10) on an all-DESC key: one tuple relation, one statement.
    const oneWay = new CountingStore(store);
    const after = await oneWay.slice(desc, { partition: { p }, lower: { values: [1, 10], inclusive: false }, limit: 5 });
    expect(after.map((r) => [r.a, r.b])).toEqual([[1, 9], [1, 8], [1, 7], [1, 6], [1, 5]]);
    expect(oneWay.statements).toBe(1);
  }, 120_000);

  it('marks reads and timestamped writes idempotent, counter increments and lightweight transactions not', async () => {
    const p = randomUUID();
    const owner = randomUUID();
    const name = `idem-${p}`;
    const flags = async (call: () => Promise<unknown>) => {
      const from = lost.sent.length;
      await call();
      return [...new Set(lost.sent.slice(from).map((s) => s.idempotent))];
    };
    expect(await flags(() => store.get(claims, { name }))).toEqual([true]);
    expect(await flags(() => store.getMany(claims, [{ name }, { name: `${name}-2` }]))).toEqual([true]);
    expect(await flags(() => store.slice(desc, { partition: { p }, limit: 5 }))).toEqual([true]);
    expect(await flags(() => store.readCells(claims, { name }, ['owner']))).toEqual([true]);
    expect(await flags(() => store.upsert(claims, { name, owner }))).toEqual([true]);
    expect(await flags(() => store.delete(claims, { name }))).toEqual([true]);
    expect(await flags(() => store.batch([{ kind: 'upsert', table: claims, row: { name, owner } }]))).toEqual([true]);
    expect(await flags(() => store.increment(hits, { name }, { n: 1n }))).toEqual([false]);
    expect(await flags(() => store.insertIfNotExists(claims, { name: `${name}-lwt`, owner }))).toEqual([false]);
    expect(await flags(() => store.deleteIf(claims, { name: `${name}-lwt` }, { owner }))).toEqual([false]);
    expect(await store.get(hits, { name })).toEqual({ name, n: 1n });
  });

  it("sends each keyed read of a table keyed by one uuid with its partition's token, the one Cassandra computes, read again or not", async () => {
    const ids = Array.from({ length: 12 }, () => randomUUID());
    await store.batch(ids.slice(0, 8).map((id, i) => ({ kind: 'upsert', table: routed, row: { id, v: `v${i}` } })));
    await store.batch(ids.map((id) => ({ kind: 'upsert', table: routedProbe, row: { id, v: '' } })));
    const keys = [...ids, ids[0]!.toUpperCase()].map((id) => ({ id }));
    const expected = [...ids.map((id, i) => (i < 8 ? { id, v: `v${i}` } : null)), { id: ids[0], v: 'v0' }];
    for (const round of [1, 2]) {
      const from = lost.sent.length;
      expect(await store.getMany(routed, keys), `round ${round}`).toEqual(expected);
      const sent = lost.sent.slice(from);
      expect(sent).toHaveLength(keys.length);
      const name = /FROM (\S+) WHERE/.exec(sent[0]!.query)![1];
      // Cassandra's token of every key, missing rows' included: each key's row in a table keyed alike.
      const probe = name!.replace(/\.routed$/, '.routed_probe');
      const tokens = await Promise.all(
        keys.map(async ({ id }) => String((await lost.execute(`SELECT token(id) AS t FROM ${probe} WHERE id = ?`, [id], { prepare: true })).rows[0]!.get('t'))),
      );
      expect(sent.map((s) => String(s.routingKey)), `round ${round}`).toEqual(tokens);
    }
  });

  it('numbers and times each schema change it sends', async () => {
    const lines: string[] = [];
    const fresh = await target.create({ log: (m) => lines.push(m) });
    try {
      await fresh.store.ensureTables([claims, hits]);
      const changes = lines.filter((l) => l.startsWith('schema change'));
      // The keyspace, the declared tables, then the adapter's own (its batchlog).
      expect(changes).toHaveLength(5);
      expect(changes[0]).toMatch(/^schema change 1 of 5 in \d+\.\d s \(\d+\.\d s in all\): CREATE KEYSPACE IF NOT EXISTS /);
      expect(changes[2]).toMatch(/^schema change 3 of 5 in \d+\.\d s \(\d+\.\d s in all\): CREATE TABLE IF NOT EXISTS \w+\.hits /);
      expect(changes[4]).toMatch(/^schema change 5 of 5 in \d+\.\d s \(\d+\.\d s in all\): CREATE TABLE IF NOT EXISTS \w+\.store_batchlog_minutes /);
    } finally {
      await fresh.dispose();
    }
  }, target.ddlTimeoutMs);

  it('splits a bound on a mixed ASC/DESC key into one statement per range', async () => {
    const p = randomUUID();
    for (const a of [1, 0]) for (const b of [0, 1, 2]) await store.upsert(mixed, { p, a, b, v: '' });
    const counting = new CountingStore(store);
    const rows = await counting.slice(mixed, { partition: { p }, lower: { values: [1, 0], inclusive: false }, limit: 10 });
    expect(rows.map((r) => [r.a, r.b])).toEqual([[1, 1], [1, 2], [0, 0], [0, 1], [0, 2]]);
    expect(counting.statements).toBe(2);
  });

  it('answers an insert-if-not-exists whose response was lost by reading at SERIAL', async () => {
    const owner = randomUUID();
    lost.loseNext('after');
    expect(await store.insertIfNotExists(claims, { name: 'applied-then-lost', owner })).toEqual({ applied: true, existing: null });

    const other = randomUUID();
    await store.insertIfNotExists(claims, { name: 'taken', owner: other });
    lost.loseNext('instead');
    expect(await store.insertIfNotExists(claims, { name: 'taken', owner })).toEqual({
      applied: false,
      existing: { name: 'taken', owner: other },
    });

    // Never ran, and nobody holds the row: the outcome is "not applied", so retry.
    lost.loseNext('instead');
    await expect(store.insertIfNotExists(claims, { name: 'never-ran', owner })).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await store.get(claims, { name: 'never-ran' })).toBeNull();
  });

  it('answers a conditional delete whose response was lost by reading at SERIAL', async () => {
    const owner = randomUUID();
    await store.insertIfNotExists(claims, { name: 'release-me', owner });
    lost.loseNext('after');
    expect(await store.deleteIf(claims, { name: 'release-me' }, { owner })).toBe(true);
    expect(await store.get(claims, { name: 'release-me' })).toBeNull();

    await store.insertIfNotExists(claims, { name: 'still-mine', owner });
    lost.loseNext('instead');
    await expect(store.deleteIf(claims, { name: 'still-mine' }, { owner })).rejects.toBeInstanceOf(StoreUnavailableError);
    lost.loseNext('instead');
    expect(await store.deleteIf(claims, { name: 'still-mine' }, { owner: randomUUID() })).toBe(false);
  });

  it('reports lost lightweight-transaction responses to a store observer as unknown, then settled or given up (a timeout)', async () => {
    const seen: Array<[string, string | null, string | null, number]> = [];
    const observed = new ObservedStore(store, [{ finished: (t) => seen.push([t.operation, t.lwt, t.errorKind, t.statements]) }]);
    const owner = randomUUID();
    await observed.insertIfNotExists(claims, { name: 'observed-1', owner });
    lost.loseNext('after');
    expect((await observed.insertIfNotExists(claims, { name: 'observed-2', owner })).applied).toBe(true);
    lost.loseNext('instead');
    await expect(observed.insertIfNotExists(claims, { name: 'observed-1', owner: randomUUID() })).resolves.toMatchObject({ applied: false });
    await observed.insertIfNotExists(claims, { name: 'observed-1', owner: randomUUID() });
    expect(seen).toEqual([
      ['insertIfNotExists', 'applied', null, 1],
      ['insertIfNotExists', 'unknown_settled', null, 2],
      ['insertIfNotExists', 'unknown_settled', null, 2],
      ['insertIfNotExists', 'not_applied', null, 1],
    ]);
    // Never ran, nobody holds the row: the serial read cannot tell, so it gives up.
    lost.loseNext('instead');
    await expect(observed.insertIfNotExists(claims, { name: 'observed-never', owner })).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(seen.at(-1)).toEqual(['insertIfNotExists', 'unknown_given_up', 'timeout', 2]);
  });

  it('refuses to start on a missing schema in check mode, naming what is missing and the command to run', async () => {
    const client = await cassandraClient(await target.contactPoints!());
    const keyspace = uniqueKeyspace('schema');
    try {
      const check = new CassandraStore({ client, keyspace, schema: 'check' });
      await expect(check.ensureTables([claims])).rejects.toThrow(
        new StoreStartupError(
          `the Cassandra schema is missing: keyspace ${keyspace}; create it with \`npm run schema\` (\`node dist/scripts/schema.js\` in the image), or set CASSANDRA_AUTO_SCHEMA=true`,
        ),
      );
      await new CassandraStore({ client, keyspace, schema: 'create' }).ensureTables([claims]);
      await check.ensureTables([claims]);
      await expect(check.ensureTables([claims, desc])).rejects.toThrow(`the Cassandra schema is missing: table ${keyspace}.desc_rows;`);
    } finally {
      await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
      await client.shutdown();
    }
  }, 120_000);

  it('refuses to start on the timeline table recreated clustered ASC, naming the table and the difference, and checkSchema (/readyz) reports it', async () => {
    const client = await cassandraClient(await target.contactPoints!());
    const keyspace = uniqueKeyspace('keyed');
    try {
      await new CassandraStore({ client, keyspace, schema: 'create' }).ensureTables([]);
      await client.execute(
        `CREATE TABLE ${keyspace}.timeline (user_id uuid, post_id timeuuid, content text, PRIMARY KEY ((user_id), post_id)) WITH CLUSTERING ORDER BY (post_id ASC)`,
      );
      const difference = `table ${keyspace}.timeline clustered by (post_id ASC), declared (post_id DESC)`;
      for (const schema of ['check', 'create'] as const) {
        const store = new CassandraStore({ client, keyspace, schema });
        await expect(store.ensureTables([timelineTable])).rejects.toThrow(`the Cassandra schema keys tables otherwise than declared: ${difference};`);
        expect(await store.checkSchema([timelineTable])).toEqual([difference]);
      }
      await client.execute(`DROP TABLE ${keyspace}.timeline`);
      await new CassandraStore({ client, keyspace, schema: 'create' }).ensureTables([timelineTable]);
      expect(await new CassandraStore({ client, keyspace, schema: 'check' }).checkSchema([timelineTable, desc])).toEqual([`table ${keyspace}.desc_rows`]);
    } finally {
      await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
      await client.shutdown();
    }
  }, 120_000);

  it("creates a table with its declared gc_grace_seconds, brings an existing one to a changed declaration, and then sends nothing", async () => {
    const client = await cassandraClient(await target.contactPoints!());
    const keyspace = uniqueKeyspace('grace');
    const grace = async () =>
      Number(
        (await client.execute('SELECT gc_grace_seconds FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?', [keyspace, 'claims']))
          .rows[0]!.get('gc_grace_seconds'),
      );
    try {
      const sent: string[] = [];
      const create = new CassandraStore({ client, keyspace, schema: 'create', log: (m) => sent.push(m) });
      await create.ensureTables([claims]);
      expect(await grace()).toBe(864_000);
      const shorter = defineTable({ name: 'claims', columns: { ...claims.columns }, partitionKey: [...claims.partitionKey], gcGraceSeconds: 3_600 });
      sent.length = 0;
      await create.ensureTables([shorter]);
      expect(sent).toEqual([expect.stringMatching(new RegExp(`^schema change 1 of 1 in \\d+\\.\\d s \\(\\d+\\.\\d s in all\\): ALTER TABLE ${keyspace}\\.claims WITH gc_grace_seconds = 3600$`))]);
      expect(await grace()).toBe(3_600);
      sent.length = 0;
      await create.ensureTables([shorter]);
      expect(sent).toEqual([]);
    } finally {
      await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
      await client.shutdown();
    }
  }, 120_000);
  it('creates a table declared leveled with LeveledCompactionStrategy, moves an existing size-tiered one to it at start-up, and then sends nothing', async () => {
    const client = await cassandraClient(await target.contactPoints!());
    const keyspace = uniqueKeyspace('lcs');
    const declared = { name: 'lists', columns: { k: 'text', level: 'int', counts: 'text' } as const, partitionKey: ['k'], clustering: ['level'] };
    const strategy = async () =>
      ((await client.execute('SELECT compaction FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?', [keyspace, 'lists'])).rows[0]!.get('compaction') as Record<string, string>)
        .class;
    try {
      const sent: string[] = [];
      const store = new CassandraStore({ client, keyspace, schema: 'create', log: (m) => sent.push(m) });
      await store.ensureTables([defineTable(declared)]);
      expect(await strategy()).toMatch(/\.SizeTieredCompactionStrategy$/);
      await client.execute(`INSERT INTO ${keyspace}.lists (k, level, counts) VALUES ('a', 0, '0:1')`);
      sent.length = 0;
      await store.ensureTables([defineTable({ ...declared, leveledCompaction: true })]);
      expect(sent).toEqual([
        expect.stringMatching(new RegExp(`^schema change 1 of 1 in \\d+\\.\\d s \\(\\d+\\.\\d s in all\\): ALTER TABLE ${keyspace}\\.lists WITH compaction = \\{'class': 'LeveledCompactionStrategy'\\}$`)),
      ]);
      expect(await strategy()).toMatch(/\.LeveledCompactionStrategy$/);
      expect((await client.execute(`SELECT counts FROM ${keyspace}.lists WHERE k = 'a' AND level = 0`)).rows[0]!.get('counts')).toBe('0:1');
      sent.length = 0;
      await store.ensureTables([defineTable({ ...declared, leveledCompaction: true })]);
      expect(sent).toEqual([]);
      const fresh = uniqueKeyspace('lcs');
      try {
        await new CassandraStore({ client, keyspace: fresh, schema: 'create' }).ensureTables([defineTable({ ...declared, leveledCompaction: true })]);
        const created = (await client.execute('SELECT compaction FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?', [fresh, 'lists'])).rows[0]!;
        expect((created.get('compaction') as Record<string, string>).class).toMatch(/\.LeveledCompactionStrategy$/);
      } finally {
        await client.execute(`DROP KEYSPACE IF EXISTS ${fresh}`);
      }
    } finally {
      await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
      await client.shutdown();
    }
  }, 120_000);
  it('creates a table declared as a TTL\'d time series with TimeWindowCompactionStrategy and its window', async () => {
    const client = await cassandraClient(await target.contactPoints!());
    const keyspace = uniqueKeyspace('twcs');
    const log = defineTable({
      name: 'changes',
      columns: { feed: 'text', change_id: 'timeuuid', v: 'text' },
      partitionKey: ['feed'],
      clustering: ['change_id'],
      gcGraceSeconds: 10_800,
      timeWindowMinutes: 60,
    });
    try {
      await new CassandraStore({ client, keyspace, schema: 'create' }).ensureTables([log]);
      const row = (await client.execute('SELECT compaction, gc_grace_seconds FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?', [keyspace, 'changes'])).rows[0]!;
      const compaction = row.get('compaction') as Record<string, string>;
      expect(compaction.class).toMatch(/TimeWindowCompactionStrategy$/);
      expect({ unit: compaction.compaction_window_unit, size: compaction.compaction_window_size }).toEqual({ unit: 'MINUTES', size: '60' });
      expect(Number(row.get('gc_grace_seconds'))).toBe(10_800);
    } finally {
      await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
      await client.shutdown();
    }
  }, 120_000);
});
