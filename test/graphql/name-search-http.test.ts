/**
 * `usersByName` and `firstName` over HTTP: members search by one to three name terms,
 * accents and case ignored, in last-name order, paged both ways; a malformed query is
 * BAD_USER_INPUT stating the rule and what was received; anonymous callers are refused
 * as by the other directory queries; a page the sweeper has cleaned costs one store round
 * trip, with every field of its users answered from the index.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { MonotonicClock } from '../../src/store/clock.js';
import { describeEachStore } from '../support/stores.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const SEARCH = `query ($q: String!, $first: Int, $after: String, $last: Int, $before: String) {
  usersByName(query: $q, first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { id username displayName firstName lastName location createdAt } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`;

describeEachStore('usersByName over HTTP', (target) => {
  let server: TestServer;
  let admin: string;
  let member: string;
  let aheadMs = 0;
  const ids = new Map<string, string>();

  beforeAll(async () => {
    // The server's clock, which the test moves forward to let the sweeper clean windows.
    server = await startTestServer({ target, clock: new MonotonicClock({ now: () => Date.now() + aheadMs }) });
    admin = await server.token('root', { admin: true });
    const people: Array<[string, string]> = [
      ['John', 'Smith'],
      ['Joanna', 'Smithers'],
      ['Jo', 'Bloggs'],
      ['Zoë', 'Müller'],
      ['Zoe', 'Mull'],
    ];
    for (const [firstName, lastName] of people) {
      const input = { ...aUser(), firstName, lastName, location: 'Lyon' };
      const res = await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id firstName } } }`, { input }, admin);
      expect(res.data!.createUser.user.firstName).toBe(firstName);
      ids.set(`${firstName} ${lastName}`, res.data!.createUser.user.id);
      member ??= await server.token(input.username);
    }
  });
  afterAll(() => server.close());

  const names = (res: { data?: Record<string, any> | null }) => res.data!.usersByName.edges.map((e: any) => `${e.node.firstName} ${e.node.lastName}`);

  it('finds members by terms that each start a different part of the name, by last name, both ways', async () => {
    expect(names(await server.gql(SEARCH, { q: 'smi jo' }, member))).toEqual(['John Smith', 'Joanna Smithers']);
    expect(names(await server.gql(SEARCH, { q: 'muller' }, member))).toEqual(['Zoë Müller']);
    expect(names(await server.gql(SEARCH, { q: 'ZOE' }, member))).toEqual(['Zoe Mull', 'Zoë Müller']);
    const first = await server.gql(SEARCH, { q: 'jo', first: 2 }, member);
    expect(names(first)).toEqual(['Jo Bloggs', 'John Smith']);
    expect(first.data!.usersByName.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    const next = await server.gql(SEARCH, { q: 'jo', first: 2, after: first.data!.usersByName.pageInfo.endCursor }, member);
    expect(names(next)).toEqual(['Joanna Smithers']);
    expect(next.data!.usersByName.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
    const back = await server.gql(SEARCH, { q: 'jo', last: 2, before: next.data!.usersByName.pageInfo.startCursor }, member);
    expect(back.data!.usersByName.edges).toEqual(first.data!.usersByName.edges);
  });

  it('refuses a malformed query with BAD_USER_INPUT, the rule and what was received, and anonymous callers', async () => {
    for (const [q, got] of [['', '0: ""'], ['a b c d', '4: "a b c d"']] as const) {
      const res = await server.gql(SEARCH, { q }, member);
      expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argumentName: 'query' });
      expect(res.errors?.[0]?.message).toBe(
        `\`query\` must hold one to three name terms separated by spaces, each the start of a different part of the name, got ${got}`,
      );
    }
    const anonymous = await server.gql(SEARCH, { q: 'smith' });
    expect(anonymous.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const nobody = await server.gql(SEARCH, { q: 'smith' }, await server.token('nobody_at_all'));
    expect(nobody.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it('serves a page the sweeper cleaned in one round trip, every field from the index', async () => {
    const recent = await server.gql(SEARCH, { q: 'smi jo' }, admin);
    expect(recent.extensions?.storeRoundTrips).toBe(2);
    // A quarter of a minute later, by the server's clock: the windows of those entries closed and were swept.
    aheadMs = 15_000;
    await server.app.services.nameSweeper.runOnce();
    const swept = await server.gql(SEARCH, { q: 'smi jo' }, admin);
    expect(swept.extensions?.storeRoundTrips).toBe(1);
    expect(swept.data).toEqual(recent.data);
    expect(swept.data!.usersByName.edges[0].node).toMatchObject({ id: ids.get('John Smith'), location: 'Lyon', displayName: expect.any(String) });
  });
});
