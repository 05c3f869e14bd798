/**
 * The user directory (seed 004) on every store: prefix paging over 5,000 users
 * in both directions equals a reference sort; stale entries never show and pages
 * around them stay full; an unknown location is an empty connection.
 */
import { windowedJobTables } from '../../src/background/windowed-job.js';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bucketOf, indexKeyOf } from '../../src/features/directory/directory.js';
import { directoryTables, userIndexTable } from '../../src/features/directory/directory-tables.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { userTables } from '../../src/features/users/users-tables.js';
import type { User } from '../../src/features/users/users.js';
import type { IndexHit } from '../../src/features/directory/directory.js';
import type { Page, PageArgs } from '../../src/paging/types.js';
import { newTimeuuid } from '../../src/store/timeuuid.js';
import { featuresOver } from '../support/suspension-fixture.js';
import type { Store } from '../../src/store/port.js';
import { describeEachStore, type StoreUnderTest } from '../support/stores.js';

const LAST_NAMES = ['Smith', 'smythe', 'Smalls', 'Sánchez', 'Søren', 'Schmidt', 'Jones', 'Jónsson', 'O\u2019Brien', 'Zhang', '张', 'Ng', 'Ávila', 'Abbott'];
const LOCATIONS = ['Paris', 'Lyon', 'Oslo', 'São Paulo'];

function directoryOver(store: Store) {
  const { users, directory } = featuresOver(store);
  return { users, directory };
}

/** Walk a whole connection forward, then backward from the end; both must agree. */
async function walk(fetch: (args: PageArgs) => Promise<Page<IndexHit>>, size: number) {
  const forward: IndexHit[] = [];
  let page = await fetch({ first: size });
  expect(page.pageInfo.hasPreviousPage).toBe(false);
  forward.push(...page.edges.map((e) => e.node));
  while (page.pageInfo.hasNextPage) {
    page = await fetch({ first: size, after: page.pageInfo.endCursor });
    expect(page.edges.length === size || !page.pageInfo.hasNextPage).toBe(true);
    expect(page.pageInfo.hasPreviousPage).toBe(true);
    forward.push(...page.edges.map((e) => e.node));
  }
  const backward: IndexHit[] = [];
  page = await fetch({ last: size });
  expect(page.pageInfo.hasNextPage).toBe(false);
  backward.unshift(...page.edges.map((e) => e.node));
  while (page.pageInfo.hasPreviousPage) {
    page = await fetch({ last: size, before: page.pageInfo.startCursor });
    expect(page.edges.length === size || !page.pageInfo.hasPreviousPage).toBe(true);
    backward.unshift(...page.edges.map((e) => e.node));
  }
  return { forward: forward.map((h) => h.userId), backward: backward.map((h) => h.userId) };
}

function byNameThenId(a: User, b: User): number {
  const c = Buffer.compare(Buffer.from(indexKeyOf(a.lastName!)), Buffer.from(indexKeyOf(b.lastName!)));
  return c !== 0 ? c : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

describeEachStore('the user directory', (target) => {
  let subject: StoreUnderTest;
  let store: Store;
  let users: ReturnType<typeof directoryOver>['users'];
  let directory: ReturnType<typeof directoryOver>['directory'];
  const everyone: User[] = [];

  beforeAll(async () => {
    subject = await target.create();
    store = subject.store;
    ({ users, directory } = directoryOver(store));
    await store.ensureTables([...userTables, ...directoryTables, ...windowedJobTables]);
    // 5,000 users, deterministic: last names with suffixes so prefixes nest.
    const gen = fc.sample(fc.tuple(fc.constantFrom(...LAST_NAMES), fc.nat(40), fc.constantFrom(...LOCATIONS)), { numRuns: 5_000, seed: 42 });
    // A few at a time (a cluster answers in parallel); kept in generation order.
    for (let i = 0; i < gen.length; i += 20) {
      const chunk = gen.slice(i, i + 20);
      everyone.push(
        ...(await Promise.all(
          chunk.map(([name, n, location]) => users.create({ ...aUser(), lastName: n % 3 === 0 ? name : `${name}${n}`, location })),
        )),
      );
    }
  }, 300_000);

  afterAll(() => subject?.dispose());

  it('pages every prefix forward and backward exactly like a reference sort', async () => {
    for (const prefix of ['', 's', 'SM', 'smi', 'sá', 'j', '张', 'o\u2019b', 'zz']) {
      const key = indexKeyOf(prefix);
      const expected = everyone.filter((u) => indexKeyOf(u.lastName!).startsWith(key)).sort(byNameThenId).map((u) => u.id);
      const { forward, backward } = await walk((args) => directory.byLastName(prefix, args), prefix === '' ? 97 : 13);
      expect(forward, `prefix "${prefix}"`).toEqual(expected);
      expect(backward, `prefix "${prefix}"`).toEqual(expected);
    }
  }, 120_000);

  it('lists a location by user id, case-insensitively, across its shards', async () => {
    const expected = everyone.filter((u) => u.location === 'São Paulo').map((u) => u.id).sort();
    const { forward, backward } = await walk((args) => directory.byLocation('são paulo', args), 50);
    expect(forward).toEqual(expected);
    expect(backward).toEqual(expected);
  });

  it('gives an empty connection with both flags false for a location nobody has', async () => {
    const page = await directory.byLocation('Atlantis', { first: 10 });
    expect(page).toEqual({ edges: [], pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null } });
  });

  it('never shows a stale entry written by hand, and keeps the pages around it full and exact', async () => {
    const smiths = everyone.filter((u) => indexKeyOf(u.lastName!).startsWith('smi')).sort(byNameThenId);
    const victim = everyone.find((u) => u.lastName === 'Jones')!;
    // A stale hit: the victim "is" a Smith in the index, between the 3rd and 4th Smith.
    const third = smiths[2]!;
    const staleValue = `${indexKeyOf(third.lastName!)}`;
    const ts = newTimeuuid();
    await store.upsert(userIndexTable, { index_name: 'last_name', bucket: bucketOf('last_name', staleValue, victim.id), value: staleValue, user_id: victim.id, ts });
    await store.upsert(userIndexTable, { index_name: 'location', bucket: bucketOf('location', 'atlantis', victim.id), value: 'atlantis', user_id: victim.id, ts });

    const first = await directory.byLastName('smi', { first: 5 });
    expect(first.edges.map((e) => e.node.userId)).toEqual(smiths.slice(0, 5).map((u) => u.id));
    expect(first.pageInfo).toMatchObject({ hasPreviousPage: false, hasNextPage: true });
    const back = await directory.byLastName('smi', { last: 3, before: first.edges[4]!.cursor });
    expect(back.edges.map((e) => e.node.userId)).toEqual(smiths.slice(1, 4).map((u) => u.id));
    expect(back.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: true });
    const { forward } = await walk((args) => directory.byLastName('smi', args), 4);
    expect(forward).toEqual(smiths.map((u) => u.id));
    expect(await directory.byLocation('Atlantis', { first: 10 })).toMatchObject({ edges: [], pageInfo: { hasNextPage: false, hasPreviousPage: false } });
  });

  it('moves a user between indexes on update, and clears with an empty string', async () => {
    const u = everyone.find((x) => x.location === 'Oslo')!;
    await users.update(u.id, { location: 'Bergen', lastName: 'Zzyzx' });
    expect((await directory.byLocation('bergen', { first: 5 })).edges.map((e) => e.node.userId)).toEqual([u.id]);
    expect((await directory.byLastName('zzy', { first: 5 })).edges.map((e) => e.node.userId)).toEqual([u.id]);
    const oslo = await walk((args) => directory.byLocation('oslo', args), 100);
    expect(oslo.forward).not.toContain(u.id);
    await users.update(u.id, { location: '' });
    expect((await directory.byLocation('bergen', { first: 5 })).edges).toEqual([]);
    expect((await users.byIds([u.id]))[0]).toMatchObject({ location: null, lastName: 'Zzyzx' });
  });
});
