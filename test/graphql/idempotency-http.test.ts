/**
 * `clientMutationId` as an idempotency key, over HTTP: a retry with the same key and
 * input gets the first payload and writes nothing; another input is BAD_USER_INPUT; a
 * concurrent retry never runs twice; keys are per viewer. And after a write whose
 * outcome was unknown (its answer lost, or the write landing late), every mutation
 * that takes a key, retried with it, takes effect exactly once and answers the same
 * payload each time.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aUser } from '../../src/features/users/user-mother.js';
import type { StoreCall } from '../../src/store/store-decorator.js';
import { OutcomeFaultStore, type OutcomeFault } from '../support/faulty-store.js';
import { startTestServer, type GqlResponse, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

const CREATE_USER = `mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id username displayName location } clientMutationId } }`;
const CREATE_POST = `mutation ($input: CreatePostInput!) { createPost(input: $input) { post { id content createdAt } clientMutationId } }`;
const POSTS = `query ($id: ID!) { node(id: $id) { ... on User { posts(first: 50) { edges { node { id content } } } } } }`;
const ITEMS = `query ($id: ID!) { node(id: $id) { ... on OrderedList { items(first: 50) { edges { node { id label } } } } } }`;

describeEachStore('idempotency keys over HTTP', (target) => {
  let server: TestServer;
  let faults: OutcomeFaultStore;
  let admin: string;

  beforeAll(async () => {
    server = await startTestServer({ target, wrap: (s) => (faults = new OutcomeFaultStore(s)), env: { LIST_APPLIER_INTERVAL_MS: '50' } });
    admin = await server.token('root', { admin: true });
  });
  afterAll(() => server.close());

  /** A new user, and their token. */
  async function newUser(): Promise<{ id: string; token: string; username: string }> {
    const input = aUser();
    const res = await server.gql(CREATE_USER, { input }, admin);
    expect(res.errors).toBeUndefined();
    return { id: res.data!.createUser.user.id, username: input.username, token: await server.token(input.username) };
  }

  /**
   * Every data row: the dump without the embedded store's Paxos state (a lightweight
   * transaction that did not apply still takes a ballot, as in Cassandra).
   */
  async function data(): Promise<Record<string, unknown[]>> {
    const { paxos_ballots: _ballots, ...rows } = await server.dump();
    return rows;
  }

  async function posts(userId: string): Promise<Array<{ id: string; content: string }>> {
    const res = await server.gql(POSTS, { id: userId });
    return res.data!.node.posts.edges.map((e: { node: { id: string; content: string } }) => e.node);
  }

  describe('the key contract', () => {
    it('answers a retry with the same key and input with the first payload, writing nothing', async () => {
      const author = await newUser();
      const input = { content: 'once only', clientMutationId: 'post-1' };
      const first = await server.gql(CREATE_POST, { input }, author.token);
      expect(first.errors).toBeUndefined();
      const before = await data();
      const retry = await server.gql(CREATE_POST, { input }, author.token);
      expect(retry.data).toEqual(first.data);
      expect(await data()).toEqual(before);
      expect(await posts(author.id)).toEqual([{ id: first.data!.createPost.post.id, content: 'once only' }]);
    });

    it('refuses the same key with another input as BAD_USER_INPUT naming clientMutationId, writing nothing', async () => {
      const author = await newUser();
      await server.gql(CREATE_POST, { input: { content: 'first', clientMutationId: 'k' } }, author.token);
      const before = await data();
      const other = await server.gql(CREATE_POST, { input: { content: 'second', clientMutationId: 'k' } }, author.token);
      expect(other.data).toEqual({ createPost: null });
      expect(other.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', argumentName: 'clientMutationId' } });
      expect(await data()).toEqual(before);
      expect((await posts(author.id)).map((p) => p.content)).toEqual(['first']);
    });

    it('runs concurrent requests with one key once, and answers each with the same payload', async () => {
      const author = await newUser();
      const input = { content: 'raced', clientMutationId: 'race' };
      const answers = await Promise.all([1, 2, 3, 4].map(() => server.gql(CREATE_POST, { input }, author.token)));
      for (const answer of answers) expect(answer.data).toEqual(answers[0]!.data);
      expect(answers[0]!.data!.createPost.post.content).toBe('raced');
      expect(await posts(author.id)).toHaveLength(1);
    });

    it('keeps the keys of two viewers apart', async () => {
      const [a, b] = [await newUser(), await newUser()];
      const input = { content: 'same key, two authors', clientMutationId: 'shared' };
      const byA = await server.gql(CREATE_POST, { input }, a.token);
      const byB = await server.gql(CREATE_POST, { input }, b.token);
      expect(byA.data!.createPost.post.id).not.toBe(byB.data!.createPost.post.id);
      expect(await posts(a.id)).toHaveLength(1);
      expect(await posts(b.id)).toHaveLength(1);
    });

    it('keeps the keys of two mutation fields apart', async () => {
      const author = await newUser();
      const post = await server.gql(CREATE_POST, { input: { content: 'a post', clientMutationId: 'one-key' } }, author.token);
      const list = await server.gql(`mutation ($input: CreateListInput!) { createList(input: $input) { list { title } } }`, {
        input: { title: 'a list', clientMutationId: 'one-key' },
      }, author.token);
      expect(post.errors).toBeUndefined();
      expect(list.data).toEqual({ createList: { list: { title: 'a list' } } });
    });

    it('still creates once per request without a key', async () => {
      const author = await newUser();
      await server.gql(CREATE_POST, { input: { content: 'same' } }, author.token);
      await server.gql(CREATE_POST, { input: { content: 'same' } }, author.token);
      expect(await posts(author.id)).toHaveLength(2);
    });

    it('frees the key of a refused input, which a corrected input may then use', async () => {
      const author = await newUser();
      const bad = await server.gql(CREATE_POST, { input: { content: '   ', clientMutationId: 'fix-me' } }, author.token);
      expect(bad.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', argumentName: 'content' } });
      const fixed = await server.gql(CREATE_POST, { input: { content: 'fixed', clientMutationId: 'fix-me' } }, author.token);
      expect(fixed.data!.createPost.post.content).toBe('fixed');
      expect(await posts(author.id)).toHaveLength(1);
    });
  });

  /**
   * One mutation that takes a key: how to set it up, the write to fault, and what its
   * one effect looks like (read back after the retries).
   */
  /** A call that writes `table`. */
  const writesTo = (table: string) => (call: StoreCall) => call.tables.includes(table);

  interface Scenario {
    readonly name: string;
    /** Builds the request (and whatever it needs) for a fresh viewer. */
    prepare(): Promise<{ query: string; input: Record<string, unknown>; token: string; effect: () => Promise<unknown>; expected: unknown }>;
    /** The write whose outcome becomes unknown. */
    readonly faultOn: (call: StoreCall) => boolean;
  }

  async function newList(token: string, labels: string[]): Promise<{ listId: string; itemIds: string[] }> {
    const list = await server.gql(`mutation { createList(input: { title: "L" }) { list { id } } }`, {}, token);
    const listId = list.data!.createList.list.id as string;
    const itemIds: string[] = [];
    for (const label of labels) {
      const added = await server.gql(`mutation ($input: AddListItemInput!) { addListItem(input: $input) { item { id } } }`, { input: { listId, label } }, token);
      itemIds.push(added.data!.addListItem.item.id);
    }
    await settled(listId, labels);
    return { listId, itemIds };
  }

  async function labels(listId: string): Promise<string[]> {
    const res = await server.gql(ITEMS, { id: listId });
    return res.data!.node.items.edges.map((e: { node: { label: string } }) => e.node.label);
  }

  /** Waits for the list applier to show `expected` (it runs every 50 ms). */
  async function settled(listId: string, expected: string[]): Promise<string[]> {
    let seen: string[] = [];
    for (let i = 0; i < 100; i++) {
      seen = await labels(listId);
      if (JSON.stringify(seen) === JSON.stringify(expected)) break;
      await sleep(50);
    }
    return seen;
  }

  /**
   * A list mutation on a fresh list of `labels`: its transaction is the faulted write,
   * and its effect the list's labels once the applier has applied it.
   */
  function listScenario(
    field: string,
    selection: string,
    labels: string[],
    inputOf: (list: { listId: string; itemIds: string[] }) => Record<string, unknown>,
    expected: string[],
  ): Scenario {
    const type = `${field[0]!.toUpperCase()}${field.slice(1)}Input`;
    return {
      name: field,
      // The request's append (its transaction and the pending queue's entry), not a write
      // of the applier running beside it, which marks transactions in the same table.
      faultOn: (call) => call.operation === 'batch' && call.tables.includes('pending_list_txs'),
      async prepare() {
        const owner = await newUser();
        const list = await newList(owner.token, labels);
        return {
          query: `mutation ($input: ${type}!) { ${field}(input: $input) { ${selection} clientMutationId } }`,
          input: inputOf(list),
          token: owner.token,
          effect: () => settled(list.listId, expected),
          expected,
        };
      },
    };
  }

  const SCENARIOS: Scenario[] = [
    {
      name: 'createPost',
      faultOn: writesTo('timeline'),
      async prepare() {
        const author = await newUser();
        return {
          query: CREATE_POST,
          input: { content: 'hello' },
          token: author.token,
          effect: async () => (await posts(author.id)).map((p) => p.content),
          expected: ['hello'],
        };
      },
    },
    {
      name: 'createUser',
      faultOn: writesTo('users_by_username'),
      async prepare() {
        // A place of its own, so the directory's answer is this user alone.
        const location = `Paris ${randomUUID().slice(0, 8)}`;
        const input = { ...aUser(), location };
        const token = await server.token(input.username);
        return {
          query: CREATE_USER,
          input,
          token,
          effect: async () =>
            (
              await server.gql(
                `query ($u: String!, $l: String!) { userByUsername(username: $u) { username location } usersByLocation(location: $l, first: 10) { edges { node { username } } } }`,
                { u: input.username, l: location },
                token,
              )
            ).data,
          expected: { userByUsername: { username: input.username, location }, usersByLocation: { edges: [{ node: { username: input.username } }] } },
        };
      },
    },
    {
      name: 'updateUser',
      faultOn: writesTo('users'),
      async prepare() {
        const user = await newUser();
        return {
          query: `mutation ($input: UpdateUserInput!) { updateUser(input: $input) { user { displayName } clientMutationId } }`,
          input: { id: user.id, displayName: 'Renamed' },
          token: user.token,
          effect: async () => (await server.gql(`query ($id: ID!) { node(id: $id) { ... on User { displayName } } }`, { id: user.id })).data,
          expected: { node: { displayName: 'Renamed' } },
        };
      },
    },
    {
      name: 'deletePost',
      faultOn: writesTo('timeline'),
      async prepare() {
        const author = await newUser();
        const keep = await server.gql(CREATE_POST, { input: { content: 'kept' } }, author.token);
        const gone = await server.gql(CREATE_POST, { input: { content: 'deleted' } }, author.token);
        return {
          query: `mutation ($input: DeletePostInput!) { deletePost(input: $input) { deletedPostId clientMutationId } }`,
          input: { id: gone.data!.createPost.post.id },
          token: author.token,
          effect: async () => (await posts(author.id)).map((p) => p.id),
          expected: [keep.data!.createPost.post.id],
        };
      },
    },
    {
      name: 'createList',
      faultOn: writesTo('lists'),
      async prepare() {
        const owner = await newUser();
        return {
          query: `mutation ($input: CreateListInput!) { createList(input: $input) { list { id title } clientMutationId } }`,
          input: { title: 'Groceries' },
          token: owner.token,
          effect: async () =>
            (await server.gql(`query ($id: ID!) { node(id: $id) { ... on User { lists(first: 10) { edges { node { title } } } } } }`, { id: owner.id })).data,
          expected: { node: { lists: { edges: [{ node: { title: 'Groceries' } }] } } },
        };
      },
    },
    listScenario('addListItem', 'item { id label }', ['a'], ({ listId }) => ({ listId, label: 'b' }), ['a', 'b']),
    listScenario('moveListItem', 'item { id label }', ['a', 'b', 'c'], ({ itemIds }) => ({ itemId: itemIds[2], toEnd: 'TOP' }), ['c', 'a', 'b']),
    listScenario('renameListItem', 'item { id label }', ['a', 'b'], ({ itemIds }) => ({ itemId: itemIds[0], label: 'A' }), ['A', 'b']),
    listScenario('removeListItem', 'removedItemId', ['a', 'b'], ({ itemIds }) => ({ itemId: itemIds[0] }), ['b']),
    {
      name: 'createMeeting',
      faultOn: writesTo('meetings'),
      async prepare() {
        const user = await newUser();
        return {
          query: `mutation ($input: CreateMeetingInput!) { createMeeting(input: $input) { meeting { id title } clientMutationId } }`,
          input: { title: 'Standup' },
          token: user.token,
          effect: async () =>
            (await server.gql(`query ($id: ID!) { node(id: $id) { ... on User { meetings(first: 10) { edges { node { title } } } } } }`, { id: user.id })).data,
          expected: { node: { meetings: { edges: [{ node: { title: 'Standup' } }] } } },
        };
      },
    },
    {
      name: 'acceptMeeting',
      faultOn: writesTo('meeting_users'),
      async prepare() {
        const [host, guest] = [await newUser(), await newUser()];
        const made = await server.gql(`mutation { createMeeting(input: { title: "Retro" }) { meeting { id } } }`, {}, host.token);
        const meetingId = made.data!.createMeeting.meeting.id as string;
        return {
          query: `mutation ($input: AcceptMeetingInput!) { acceptMeeting(input: $input) { counted meeting { id } clientMutationId } }`,
          input: { meetingId },
          token: guest.token,
          effect: async () =>
            (await server.gql(`query ($id: ID!) { node(id: $id) { ... on Meeting { acceptedBy(first: 10) { edges { node { id } } } } } }`, { id: meetingId })).data,
          expected: { node: { acceptedBy: { edges: [{ node: { id: guest.id } }] } } },
        };
      },
    },
    {
      name: 'suspendUser',
      faultOn: writesTo('users_by_status'),
      async prepare() {
        const user = await newUser();
        return {
          query: `mutation ($input: SuspendUserInput!) { suspendUser(input: $input) { suspension { reason user { id } } clientMutationId } }`,
          input: { userId: user.id, reason: 'spam' },
          token: admin,
          effect: async () => (await server.gql(`query ($id: ID!) { node(id: $id) { ... on User { suspension { reason } } } }`, { id: user.id }, admin)).data,
          expected: { node: { suspension: { reason: 'spam' } } },
        };
      },
    },
  ];

  const MODES: OutcomeFault[] = ['applied-then-timeout', 'timeout-then-applied'];

  /** A request with its key, sent again after `first`: every retry answers what `first` did (or the first retry did). */
  async function retriesAgree(query: string, keyed: Record<string, unknown>, token: string, first: GqlResponse | null): Promise<GqlResponse> {
    const retries: GqlResponse[] = [];
    retries.push(await server.gql(query, { input: keyed }, token));
    await faults.land();
    retries.push(await server.gql(query, { input: keyed }, token));
    const expected = first ?? retries[0]!;
    for (const retry of retries) {
      expect(retry.errors).toBeUndefined();
      expect(retry.data).toEqual(expected.data);
    }
    return expected;
  }

  describe.each(MODES)('after a write whose outcome is unknown (%s)', (mode) => {
    it.each(SCENARIOS.map((s) => [s.name, s] as const))('%s retried with its key takes effect once, answering the same payload', async (_name, scenario) => {
      const { query, input, token, effect, expected } = await scenario.prepare();
      const keyed = { ...input, clientMutationId: `key-${scenario.name}-${mode}` };
      faults.faultNextWrite(mode, scenario.faultOn);
      const first = await server.gql(query, { input: keyed }, token);
      expect(faults.pending).toBe(false);
      expect(first.errors?.[0]?.extensions?.code).toMatch(/^(OUTCOME_UNKNOWN|UNAVAILABLE)$/);
      const answer = await retriesAgree(query, keyed, token, null);
      const field = Object.keys(answer.data!)[0]!;
      expect(answer.data![field].clientMutationId).toBe(keyed.clientMutationId);
      if (scenario.name === 'acceptMeeting') expect(answer.data![field].counted).toBe(true);
      expect(await effect()).toEqual(expected);
    });
  });

  describe('after a first attempt that succeeded but whose payload was never recorded (its server died)', () => {
    it.each(SCENARIOS.map((s) => [s.name, s] as const))('%s retried with its key is redone to the same payload, with one effect', async (_name, scenario) => {
      const { query, input, token, effect, expected } = await scenario.prepare();
      const keyed = { ...input, clientMutationId: `key-${scenario.name}-unrecorded` };
      // The payload's write is held (as if the process died before sending it), so the
      // attempt stays open with no payload: the retry takes it over and redoes it.
      faults.faultNextWrite('timeout-then-applied', (call) => call.operation === 'upsert' && call.tables.includes('mutation_keys'));
      const first = await server.gql(query, { input: keyed }, token);
      expect(faults.pending).toBe(false);
      expect(first.errors).toBeUndefined();
      const answer = await retriesAgree(query, keyed, token, first);
      const field = Object.keys(answer.data!)[0]!;
      if (scenario.name === 'acceptMeeting') expect(answer.data![field].counted).toBe(true);
      expect(await effect()).toEqual(expected);
    });
  });
});
