/**
 * The user directory over HTTP: concurrent updates need no lock and leave every user in
 * exactly one location's results; who may update a profile.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import { RendezvousStore } from '../support/faulty-store.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

const UPDATE = `mutation ($input: UpdateUserInput!) { updateUser(input: $input) { user { id location lastName displayName } } }`;
const BY_LOCATION = `query ($l: String!, $after: String) { usersByLocation(location: $l, first: 3, after: $after) {
  edges { node { id location } } pageInfo { hasNextPage endCursor hasPreviousPage } } }`;

describeEachStore('the user directory over HTTP', (target) => {
  let server: TestServer;
  let admin: string;
  let rendezvous: RendezvousStore;
  beforeAll(async () => {
    // Concurrent updates of one user that read the same old entries before any of them
    // writes leave stale entries: the rendezvous makes that interleaving certain.
    // The rendezvous holds 20 requests of one admin inside execution at once: more than
    // the in-flight cap lets one principal run (MAX_IN_FLIGHT), so the cap is off here.
    server = await startTestServer({ target, wrap: (s) => (rendezvous = new RendezvousStore(s)), env: { MAX_IN_FLIGHT: '0' } });
    admin = await server.token('root', { admin: true });
  });
  afterAll(() => server.close());

  async function createUsers(n: number, location: string) {
    const out: Array<{ id: string; token: string }> = [];
    for (let i = 0; i < n; i++) {
      const input = { ...aUser(), location, lastName: `Doe${i}` };
      const res = await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id location } } }`, { input }, admin);
      expect(res.data!.createUser.user.location).toBe(location);
      out.push({ id: res.data!.createUser.user.id, token: await server.token(input.username) });
    }
    return out;
  }

  async function everyoneIn(location: string): Promise<string[]> {
    const ids: string[] = [];
    let after: string | null = null;
    for (;;) {
      const res: any = await server.gql(BY_LOCATION, { l: location, after }, admin);
      expect(res.errors).toBeUndefined();
      ids.push(...res.data.usersByLocation.edges.map((e: any) => e.node.id));
      if (!res.data.usersByLocation.pageInfo.hasNextPage) return ids;
      after = res.data.usersByLocation.pageInfo.endCursor;
    }
  }

  it('leaves every user in exactly one location after 20 concurrent updates of the same users', async () => {
    const users = await createUsers(5, 'Start');
    const places = ['Kyoto', 'Lagos', 'Quito'];
    // Four updates of each user arrive together, each to another place, and all of them
    // read the user's old index entries before any of them writes.
    rendezvous.arm(20, (call) => call.operation === 'slice' && call.table === 'user_index_entries');
    const updates = Array.from({ length: 20 }, (_, i) =>
      server.gql(UPDATE, { input: { id: users[Math.floor(i / 4)]!.id, location: places[i % 3] } }, admin),
    );
    const results = await Promise.all(updates);
    expect(results.every((r) => r.errors === undefined)).toBe(true);

    // (Locations are for members: read them as the admin.)
    const rows = await server.gql(`query ($ids: [ID!]!) { nodes(ids: $ids) { ... on User { id location } } }`, { ids: users.map((u) => u.id) }, admin);
    const current = new Map<string, string>(rows.data!.nodes.map((n: any) => [n.id, n.location]));
    const seen = new Map<string, string[]>();
    for (const place of [...places, 'Start']) {
      for (const id of await everyoneIn(place)) seen.set(id, [...(seen.get(id) ?? []), place]);
    }
    for (const u of users) expect(seen.get(u.id), u.id).toEqual([current.get(u.id)]);
    // The race happened: the index holds more location entries than users (false positives).
    expect(await server.countRows('user_index', { index_name: 'location' })).toBeGreaterThan(5);
  });

  it('lets the user or an admin update a profile, and nobody else', async () => {
    const [a, b] = await createUsers(2, 'Here');
    const self = await server.gql(UPDATE, { input: { id: a!.id, displayName: 'New Name', lastName: 'Renamed' } }, a!.token);
    expect(self.data!.updateUser.user).toMatchObject({ displayName: 'New Name', lastName: 'Renamed', location: 'Here' });
    const other = await server.gql(UPDATE, { input: { id: a!.id, location: 'Elsewhere' } }, b!.token);
    expect(other.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const anonymous = await server.gql(UPDATE, { input: { id: a!.id, location: 'Elsewhere' } });
    expect(anonymous.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const missing = Buffer.from('User:00000000-0000-4000-8000-000000000000').toString('base64');
    const unknown = await server.gql(UPDATE, { input: { id: missing, location: 'X' } }, admin);
    expect(unknown.errors?.[0]?.extensions).toEqual({ code: 'NOT_FOUND', argumentName: 'id' });
    const tooLong = await server.gql(UPDATE, { input: { id: a!.id, location: 'x'.repeat(101) } }, a!.token);
    expect(tooLong.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argumentName: 'location' });
    expect(new Set(await everyoneIn('here'))).toEqual(new Set([a!.id, b!.id]));
  });

  it('searches last names by prefix over HTTP', async () => {
    await createUsers(1, 'Prefixville');
    const res = await server.gql(`{ usersByLastName(prefix: "doe", first: 50) { edges { node { lastName } } pageInfo { hasNextPage } } }`, {}, admin);
    const anonymous = await server.gql(`{ usersByLastName(prefix: "doe", first: 5) { edges { cursor } } }`);
    expect(anonymous.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const names = res.data!.usersByLastName.edges.map((e: any) => e.node.lastName);
    expect(names.length).toBeGreaterThan(0);
    expect(names).toEqual([...names].sort());
    expect(names.every((n: string) => n.toLowerCase().startsWith('doe'))).toBe(true);
  });
});
