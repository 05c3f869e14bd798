/**
 * Suspensions wired over any store, as the app wires them, plus the invariant checks
 * of seed 000's design: every sorted-set row has its reverse lookup and the reverse,
 * and every suspended user is reachable by paging.
 */
import pino from 'pino';
import { createCursorCodec } from '../../src/paging/cursor.js';
import { suspensionSagas } from '../../src/features/suspensions/suspension-sagas.js';
import { Suspensions } from '../../src/features/suspensions/suspensions.js';
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
import { Users } from '../../src/features/users/users.js';
import { KeyedLock } from '../../src/saga/keyed-lock.js';
import { SagaLog, sagaLogTable } from '../../src/saga/saga-log.js';
import { SagaRunner } from '../../src/saga/saga-runner.js';
import type { Store } from '../../src/store/port.js';

export const codec = createCursorCodec('suspension-test-secret');

/** The feature over `store`, with a fresh runner sharing process-wide state. */
export function suspensionsOver(store: Store, granularity: BucketGranularity = 'month') {
  const sagas = new SagaRunner({ store, definitions: suspensionSagas, inFlight: new Set(), logger: pino({ level: 'silent' }) });
  const users = new Users(store);
  return { users, sagas, suspensions: new Suspensions({ store, codec, sagas, users, lock: new KeyedLock(), granularity }) };
}

/** Create the tables this feature needs. */
export async function prepare(store: Store): Promise<void> {
  await store.ensureTables([...userTables, ...suspensionTables, sagaLogTable]);
}

/** Create n users; returns their ids. */
export async function someUsers(store: Store, n: number): Promise<string[]> {
  const users = new Users(store);
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
