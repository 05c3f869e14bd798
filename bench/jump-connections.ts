/**
 * Jump to page N on the other three counted connections (BENCH_SECTIONS=jump): a list
 * of BENCH_JUMP_ITEMS items (default 100,100), as many suspensions, one a minute over
 * ~70 days (three month buckets), and as many acceptors of one meeting (random user
 * ids), each written as its feature writes it (its rows, and the ledger entries its
 * counted index is settled from) and settled (the index rebuilt from the ledger, as a
 * recount does). For each: the first page, offsets 10^3 and 10^5 forward, 10^5
 * backward and 10^3 from a cursor in the middle: the waves of store calls a page waits
 * for (one round trip of latency each), the calls, and the median time in process
 * against the first page (timed in turn with it, a page of each a round), with the
 * process's kept lists and with none kept (every visit a first one). Target: at most 8
 * waves.
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { createRequestContext, createServices, rankedCounts } from '../src/composition-root.js';
import { settleFully } from '../src/counts/connection-counts.js';
import { indexKeyOf } from '../src/counts/count-ranks.js';
import { countItemsTable } from '../src/counts/count-tables.js';
import { itemsCountKey, placementEntry } from '../src/features/lists/lists.js';
import { listItemsTable } from '../src/features/lists/lists-tables.js';
import { WEIGHT_GAP } from '../src/features/lists/positions.js';
import { acceptanceCountKey } from '../src/features/meetings/meetings.js';
import { meetingUsersTable } from '../src/features/meetings/meetings-tables.js';
import { bucketOf } from '../src/features/suspensions/buckets.js';
import { SUSPENSIONS_COUNT_KEY, suspensionEntry } from '../src/features/suspensions/suspension-sagas.js';
import { SUSPENDED, statusBucketsTable, suspendedUsersTable, usersByStatusTable } from '../src/features/suspensions/suspensions-tables.js';
import type { Page, PageArgs } from '../src/paging/types.js';
import { MAX_TIMESTAMP, type Mutation } from '../src/store/port.js';
import { RankCache } from '../src/paging/ranked-index.js';
import { newTimeuuid } from '../src/store/timeuuid.js';
import { JOB_WINDOW_MS } from '../src/background/windowed-job.js';
import { time, timeInTurn, type JumpTarget } from './jump.js';
import { positive } from './settings.js';
import { WaveCountingStore } from './waves.js';

const RUNS = 100;
const ADMIN = { username: 'root', isAdmin: true };

/** One connection of the section: its name, its count key, its rows per edge, and a page of it. */
export interface Connection {
  readonly name: string;
  readonly countKey: string;
  /** The rows of edge `i` (µs `micros`), its ledger entry included. */
  rows(i: number, micros: bigint): Mutation[];
  page(services: ReturnType<typeof createServices>, args: PageArgs): Promise<Page<unknown>>;
}

/** A ledger entry of `key` added at `micros`, as `CountWriter.recorded` writes it. */
export function added(key: string, item: string, micros: bigint): Mutation {
  return { kind: 'upsert', table: countItemsTable, row: { count_key: key, item, added_at: micros }, options: { timestamp: MAX_TIMESTAMP - micros } };
}

/**
 * The three connections of the section, each on a fresh list, meeting or set of
 * suspensions; the meeting's acceptor `i` is `acceptorId(i)` (random, as users' ids are,
 * unless a test needs them placed).
 */
export function connections(acceptorId: (i: number) => string = () => randomUUID()): Connection[] {
  const listId = randomUUID();
  const meetingId = randomUUID();
  const start = Date.UTC(2025, 0, 1);
  return [
    {
      name: 'OrderedList.items',
      countKey: indexKeyOf(itemsCountKey(listId)),
      rows(i, micros) {
        const itemId = randomUUID();
        const position = { weight: BigInt(i) * WEIGHT_GAP, seq: micros };
        return [
          { kind: 'upsert', table: listItemsTable, row: { list_id: listId, ...position, item_id: itemId, deleted: false, label: `item ${i}` } },
          added(this.countKey, placementEntry(itemId, position), micros),
        ];
      },
      page: (services, args) => createRequestContext(services, ADMIN).lists.items(listId, args),
    },
    {
      name: 'suspendedUsers',
      countKey: indexKeyOf(SUSPENSIONS_COUNT_KEY),
      rows(i, micros) {
        const userId = randomUUID();
        const occurredOn = start + i * 60_000;
        const bucket = bucketOf(new Date(occurredOn), 'month');
        const ownerSagaId = newTimeuuid(occurredOn);
        const row = { user_id: userId, occurred_on: new Date(occurredOn), bucket, reason: 'bench' };
        return [
          { kind: 'upsert', table: usersByStatusTable, row: { ...row, status: SUSPENDED } },
          { kind: 'upsert', table: suspendedUsersTable, row: { ...row, saga_id: ownerSagaId, confirmed: true } },
          { kind: 'upsert', table: statusBucketsTable, row: { status: SUSPENDED, bucket } },
          added(this.countKey, suspensionEntry({ occurredOn, userId, ownerSagaId }), micros),
        ];
      },
      page: (services, args) => createRequestContext(services, ADMIN).suspensions.page(args),
    },
    {
      name: 'Meeting.acceptedBy',
      countKey: acceptanceCountKey(meetingId),
      rows(i, micros) {
        const userId = acceptorId(i);
        return [
          { kind: 'upsert', table: meetingUsersTable, row: { meeting_id: meetingId, user_id: userId, accepted_at: new Date(Number(micros / 1000n)), write_token: 'bench' }, options: { timestamp: MAX_TIMESTAMP - micros } },
          added(this.countKey, userId, micros),
        ];
      },
      page: (services, args) => createRequestContext(services, ADMIN).meetings.acceptedBy(meetingId, args),
    },
  ];
}

/** Write `size` edges of `connection` on `target` and settle its count (its counted index rebuilt from the ledger). */
export async function fillConnection(target: Pick<JumpTarget, 'base' | 'write'>, connection: Connection, size: number): Promise<void> {
  // Made in the past, one a millisecond: every one lies in a window the settlement closes.
  const first = Date.UTC(2025, 0, 1) * 1000;
  for (let i = 0; i < size; i += 1_000) {
    const batch: Mutation[] = [];
    for (let k = i; k < Math.min(size, i + 1_000); k++) batch.push(...connection.rows(k, BigInt(first + k * 1000)));
    await target.write(batch);
  }
  const through = Date.now();
  await settleFully(target.base, connection.countKey, through - (through % JOB_WINDOW_MS), rankedCounts);
}

/** The figures of the three connections on one store (see the file comment). */
export async function measureJumpConnections(
  target: JumpTarget,
  progress: (m: string) => void,
  row: (figure: string, value: string, target?: string, met?: boolean | null) => void,
) {
  const size = Math.round(positive('BENCH_JUMP_ITEMS', 100_100));
  const store = new WaveCountingStore(target.base);
  const services = createServices(
    { cursorSecret: 'bench-cursor-secret-0123456789', suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins' },
    { store, logger: pino({ level: 'silent' }) },
  );
  // A process that keeps none of the index's lists: every offset page is a first visit.
  const keepsNothing = { ...services, rankCache: new RankCache(0) };
  // A process that has never read the index: not even its shape (each page a fresh cache).
  const knowsNothing = () => ({ ...services, rankCache: new RankCache(0) });
  const out: Record<string, unknown> = { size };
  for (const connection of connections()) {
    const name = `${connection.name} (${target.name})`;
    await fillConnection(target, connection, size);
    progress(`jump: ${name}: ${size.toLocaleString()} edges written and settled`);

    const measure = async (label: string, args: PageArgs, ahead = size, on: () => typeof services = () => services) => {
      store.reset();
      const page = await connection.page(on(), args);
      const expected = Math.max(0, Math.min(20, ahead - (args.offset ?? 0)));
      if (page.edges.length !== expected) throw new Error(`${name}, ${label}: ${page.edges.length} edges, expected ${expected}`);
      const { waves, calls } = store;
      await time(10, () => connection.page(on(), args));
      // The page and the first page in turn (the ratio over the first page of the same rounds).
      const { medianMs, firstPageMs } = await timeInTurn(RUNS, () => connection.page(services, { first: 20 }), () => connection.page(on(), args));
      return { waves, calls, medianMs, firstPageMs };
    };
    const firstPage = await measure('first page', { first: 20 });
    const half = Math.floor(size / 2);
    const middle = (await connection.page(services, { first: 1, offset: half })).pageInfo.endCursor!;
    const figures: Record<string, Awaited<ReturnType<typeof measure>>> = { 'first page': firstPage };
    for (const [label, args, ahead] of [
      ['first 20, offset 1,000', { first: 20, offset: 1_000 }, size],
      ['first 20, offset 100,000', { first: 20, offset: 100_000 }, size],
      ['last 20, offset 100,000', { last: 20, offset: 100_000 }, size],
      ['first 20 after the middle, offset 1,000', { first: 20, after: middle, offset: 1_000 }, size - half - 1],
    ] as const) {
      figures[label] = await measure(label, args, ahead);
      figures[`${label}, every visit a first one`] = await measure(label, args, ahead, () => keepsNothing);
      if (label.includes('100,000') || label.includes('after the middle')) figures[`${label}, in a process that never read the index`] = await measure(label, args, ahead, knowsNothing);
    }
    out[connection.name] = figures;
    for (const [label, m] of Object.entries(figures)) {
      const times = m.medianMs / m.firstPageMs;
      const ratio = label === 'first page' ? '' : ` (${times.toFixed(2)}x)`;
      // The time target: a first visit at 10^5, or from a cursor, within 3x the first page.
      const timed = label.endsWith('every visit a first one') && (label.includes('100,000') || label.includes('after the middle'));
      const target = label === 'first page' ? '1-3 waves' : timed ? '<= 8 waves, <= 3x' : '<= 8 waves';
      row(`jump: ${name}, ${label}: waves / calls / median ms`, `${m.waves} / ${m.calls} / ${m.medianMs}${ratio}`, target, label === 'first page' ? m.waves <= 3 : m.waves <= 8 && (!timed || times <= 3));
    }
  }
  return out;
}
