/**
 * Features wired over any store by the composition root, as the app wires them, plus
 * the invariant checks
 * of seed 000's design: every sorted-set row has its reverse lookup and the reverse,
 * and every suspended user is reachable by paging.
 */
import { countTables } from '../../src/counts/count-tables.js';
import { windowedJobTables } from '../../src/background/windowed-job.js';
import { liveTables } from '../../src/live/change-log-tables.js';
import pino from 'pino';
import { createRequestContext, createSagaRunner, createServices, type FeatureSettings } from '../../src/composition-root.js';
import { createCursorCodec } from '../../src/paging/cursor.js';
import {
  SUSPENDED,
  statusBucketsTable,
  suspendedUsersTable,
  suspensionTables,
  usersByStatusTable,
} from '../../src/features/suspensions/suspensions-tables.js';
import type { BucketGranularity } from '../../src/features/suspensions/buckets.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { userTables } from '../../src/features/users/users-tables.js';
import { SagaLog, sagaLogTables } from '../../src/saga/saga-log.js';
import type { Store } from '../../src/store/port.js';

const CURSOR_SECRET = 'suspension-test-secret';
export const codec = createCursorCodec(CURSOR_SECRET);

/**
 * Every feature over `store`, as one process (its own saga bookkeeping and locks)
 * serving one admin request, wired by the composition root.
 */
export function featuresOver(store: Store, settings: Partial<FeatureSettings> = {}) {
  const services = createServices(
    { cursorSecret: CURSOR_SECRET, suspensionBucket: 'month', acceptanceStrategy: 'first-write-wins', ...settings },
    { store, logger: pino({ level: 'silent' }) },
  );
  // The context keeps its prototype (its features are getters there): extended, not spread.
  return Object.assign(createRequestContext(services, { username: 'root', isAdmin: true }), { services });
}

/** The suspensions feature over `store`, and a saga runner for recovery, as a fresh process has them. */
export function suspensionsOver(store: Store, granularity: BucketGranularity = 'month') {
  const { services, users, suspensions } = featuresOver(store, { suspensionBucket: granularity });
  return { users, sagas: createSagaRunner(services), suspensions };
}

/** Create the tables this feature needs. */
export async function prepare(store: Store): Promise<void> {
  await store.ensureTables([...userTables, ...suspensionTables, ...sagaLogTables, ...liveTables, ...countTables, ...windowedJobTables]);
}

/** Create n users; returns their ids. */
export async function someUsers(store: Store, n: number): Promise<string[]> {
  const { users } = featuresOver(store);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await users.create(aUser())).id);
  return ids;
}

/** A comparable picture of the feature's data for the given users. */
export async function snapshot(store: Store, userIds: readonly string[]) {
  const buckets = (await store.slice(statusBucketsTable, { partition: { status: SUSPENDED }, limit: 10_000 })).map((r) => r.bucket as string);
  const sorted: Array<{ userId: string; occurredOn: number; bucket: string; reason: string }> = [];
  for (const bucket of buckets) {
    for (const r of await store.slice(usersByStatusTable, { partition: { bucket, status: SUSPENDED }, limit: 100_000 })) {
      sorted.push({ userId: r.user_id as string, occurredOn: (r.occurred_on as Date).getTime(), bucket, reason: r.reason as string });
    }
  }
  const lookups = (await store.getMany(suspendedUsersTable, userIds.map((user_id) => ({ user_id }))))
    .filter((r) => r !== null)
    .map((r) => ({ userId: r!.user_id as string, occurredOn: (r!.occurred_on as Date).getTime(), bucket: r!.bucket as string, reason: r!.reason as string }));
  const openSagas = await new SagaLog(store).open();
  return { sorted: sorted.sort(byUser), lookups: lookups.sort(byUser), openSagas: openSagas.length };
}

function byUser(a: { userId: string }, b: { userId: string }) {
  return a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0;
}

/**
 * The invariants: each sorted-set row has its reverse lookup and each lookup its row,
 * no saga is left open, and paging the connection reaches every suspended user once.
 */
export async function checkInvariants(store: Store, userIds: readonly string[]): Promise<string[]> {
  const problems: string[] = [];
  const s = await snapshot(store, userIds);
  const key = (x: { userId: string; occurredOn: number; bucket: string }) => `${x.userId}@${x.occurredOn}/${x.bucket}`;
  const rows = new Set(s.sorted.map(key));
  const lookups = new Set(s.lookups.map(key));
  for (const r of rows) if (!lookups.has(r)) problems.push(`sorted-set row ${r} has no reverse lookup`);
  for (const l of lookups) if (!rows.has(l)) problems.push(`reverse lookup ${l} has no sorted-set row`);
  if (s.openSagas > 0) problems.push(`${s.openSagas} saga(s) left open`);
  const { suspensions } = suspensionsOver(store);
  const paged: string[] = [];
  let page = await suspensions.page({ first: 7 });
  paged.push(...page.edges.map((e) => e.node.userId));
  while (page.pageInfo.hasNextPage) {
    page = await suspensions.page({ first: 7, after: page.pageInfo.endCursor });
    paged.push(...page.edges.map((e) => e.node.userId));
  }
  const expected = s.lookups.map((l) => l.userId).sort();
  if (JSON.stringify([...paged].sort()) !== JSON.stringify(expected)) {
    problems.push(`paging reached ${JSON.stringify(paged)} but the suspended users are ${JSON.stringify(expected)}`);
  }
  return problems;
}
