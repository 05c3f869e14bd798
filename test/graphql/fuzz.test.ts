/**
 * Bad input, fuzzed over HTTP with fast-check: cursors of random bytes, truncated,
 * re-signed with another secret or taken from another connection; ids of the wrong
 * type or of missing nodes; huge strings and odd unicode; malformed JSON bodies; wrong
 * content types and methods; garbage tokens; `operationName`s that name no operation
 * (mutations included, over POST and GET); variables nested up to 100,000 levels deep
 * or up to 990 KB large; subscriptions. Every answer is a GraphQL error with a code or
 * a 4xx, never a 500 or a stack trace, and the store is unchanged afterwards.
 * FUZZ_RUNS sets the number of requests (default 1,500).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCursorCodec } from '../../src/paging/cursor.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 1_500);

describeEachStore('fuzzed bad input over HTTP', (target) => {
  let server: TestServer;
  const ids: Record<string, string> = {};
  const cursors: string[] = [];
  let member: string;
  let admin: string;

  beforeAll(async () => {
    server = await startTestServer({ target, env: { LIST_APPLIER: 'false' } });
    admin = await server.token('root', { admin: true });
    const input = aUser();
    member = await server.token(input.username);
    const u = await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input }, admin);
    ids.user = u.data!.createUser.user.id;
    ids.username = input.username;
    for (let i = 0; i < 4; i++) {
      const p = await server.gql(`mutation { createPost(input: { content: "fuzz target" }) { post { id } } }`, {}, member);
      ids.post = p.data!.createPost.post.id;
    }
    ids.meeting = (await server.gql(`mutation { createMeeting(input: { title: "m" }) { meeting { id } } }`, {}, member)).data!.createMeeting.meeting.id;
    ids.list = (await server.gql(`mutation { createList(input: { title: "l" }) { list { id } } }`, {}, member)).data!.createList.list.id;
    ids.item = (await server.gql(`mutation ($l: ID!) { addListItem(input: { listId: $l, label: "i" }) { item { id } } }`, { l: ids.list }, member)).data!.addListItem.item.id;
    await server.gql(`mutation ($u: ID!) { suspendUser(input: { userId: $u, reason: "r" }) { suspension { reason } } }`, { u: ids.user }, admin);
    const page = await server.gql(`query ($u: String!) { userByUsername(username: $u) { posts(first: 2) { edges { cursor } } } }`, { u: input.username });
    cursors.push(...page.data!.userByUsername.posts.edges.map((e: { cursor: string }) => e.cursor));
    const sus = await server.gql(`{ suspendedUsers(first: 1) { edges { cursor } } }`, {}, admin);
    cursors.push(sus.data!.suspendedUsers.edges[0].cursor);
  });
  afterAll(() => server.close());

  const oddString = fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 30 }),
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.constantFrom('', ' ', '\u0000', '\u202e\u0041', '\u200b', '\ud800', '😀'.repeat(50), 'x'.repeat(120_000), '<script>', "'; DROP TABLE users; --"),
  );

  /** Cursors that must all be refused. */
  const badCursor = fc.oneof(
    fc.uint8Array({ maxLength: 80 }).map((b) => Buffer.from(b).toString('base64url')),
    fc.nat().map((n) => cursors[0]!.slice(0, Math.max(1, n % cursors[0]!.length))),
    fc.constant(null).map(() => createCursorCodec('some-other-secret-entirely').encodeCursor(`User.posts:${'0'.repeat(8)}-0000-4000-8000-000000000000`, ['x'])),
    fc.constant(null).map(() => cursors[cursors.length - 1]!),
    oddString,
  );

  /** Ids that are malformed, of the wrong type, or of nothing. */
  const badId = fc.oneof(
    oddString,
    fc.constantFrom(() => ids.user!, () => ids.post!, () => ids.meeting!, () => ids.list!).map((f) => f()),
    fc.uuid().map((u) => Buffer.from(`User:${u}`).toString('base64')),
    fc.uuid().map((u) => Buffer.from(`Post:${u}:${u}`).toString('base64')),
    fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b).toString('base64')),
  );

  /** Operation names that name no operation of the fuzz documents (undefined: none sent). */
  const operationName = fc.oneof(
    fc.constantFrom(undefined, null, '', ' ', 'write', 'Nope', 'Read Write', '__proto__', 'constructor'),
    fc.string({ maxLength: 20 }).filter((n) => n !== 'Write' && n !== 'Read' && n !== 'S'),
  );

  const size = fc.oneof(fc.integer({ min: -1_000, max: -1 }), fc.integer({ min: 101, max: 1_000_000 }), fc.constant(2 ** 31));

  type Req = { method?: string; contentType?: string | null; body?: string; token?: string | null; search?: string };
  const gqlBody = (query: string, variables: unknown) => JSON.stringify({ query, variables });

  const request: fc.Arbitrary<Req> = fc.oneof(
    // Paging with bad cursors or sizes on every connection.
    fc.tuple(badCursor, fc.boolean(), fc.constantFrom('posts', 'suspendedUsers', 'acceptedBy', 'items', 'usersByLocation')).map(([c, forward, conn]) => {
      const args = forward ? '(first: 2, after: $c)' : '(last: 2, before: $c)';
      const q = {
        posts: `query ($c: String, $u: String!) { userByUsername(username: $u) { posts${args} { edges { cursor } } } }`,
        suspendedUsers: `query ($c: String) { suspendedUsers${args} { edges { cursor } } }`,
        acceptedBy: `query ($c: String, $m: ID!) { node(id: $m) { ... on Meeting { acceptedBy${args} { edges { cursor } } } } }`,
        items: `query ($c: String, $l: ID!) { node(id: $l) { ... on OrderedList { items${args} { edges { cursor } } } } }`,
        usersByLocation: `query ($c: String) { usersByLocation(location: "Paris", ${args.slice(1, -1)}) { edges { cursor } } }`,
      }[conn];
      return { body: gqlBody(q, { c, u: ids.username, m: ids.meeting, l: ids.list }), token: admin };
    }),
    fc.tuple(size, fc.boolean()).map(([n, first]) => ({
      body: gqlBody(`query ($n: Int, $u: String!) { userByUsername(username: $u) { posts(${first ? 'first' : 'last'}: $n) { edges { cursor } } } }`, { n, u: ids.username }),
    })),
    // Lookups and mutations with bad ids (each mutation also fails on purpose).
    badId.map((id) => ({ body: gqlBody(`query ($id: ID!) { node(id: $id) { id } }`, { id }) })),
    fc.array(badId, { maxLength: 120 }).map((list) => ({ body: gqlBody(`query ($ids: [ID!]!) { nodes(ids: $ids) { id } }`, { ids: list }) })),
    fc.tuple(badId, fc.constantFrom('deletePost', 'acceptMeeting', 'moveListItem', 'removeListItem', 'unsuspendUser', 'reconcileMeeting', 'updateUser')).map(([id, m]) => {
      const q = {
        deletePost: `mutation ($id: ID!) { deletePost(input: { id: $id }) { deletedPostId } }`,
        acceptMeeting: `mutation ($id: ID!) { acceptMeeting(input: { meetingId: $id }) { counted } }`,
        moveListItem: `mutation ($id: ID!) { moveListItem(input: { itemId: $id, beforeItemId: $id, afterItemId: $id }) { item { id } } }`,
        removeListItem: `mutation ($id: ID!) { removeListItem(input: { itemId: $id }) { removedItemId } }`,
        unsuspendUser: `mutation ($id: ID!) { unsuspendUser(input: { userId: $id }) { user { id } } }`,
        reconcileMeeting: `mutation ($id: ID!) { reconcileMeeting(input: { meetingId: $id }) { previousCount } }`,
        updateUser: `mutation ($id: ID!) { updateUser(input: { id: $id, location: "${'x'.repeat(101)}" }) { user { id } } }`,
      }[m];
      // Each mutation goes with a caller for whom it must fail whatever the id: admins are
      // not the posts' author, anonymous callers cannot accept, members cannot unsuspend
      // or reconcile, and the move and update carry invalid arguments.
      const caller = { deletePost: admin, acceptMeeting: null } as Record<string, string | null>;
      return { body: gqlBody(q, { id }), token: m in caller ? caller[m]! : member };
    }),
    fc.constantFrom('', '   ', '\u0007bell', 'x'.repeat(5_001)).map((content) => ({
      body: gqlBody(`mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`, { c: content }),
      token: member,
    })),
    oddString.map((s) => ({ body: gqlBody(`mutation ($s: String!) { createUser(input: { username: $s, displayName: "" }) { user { id } } }`, { s }), token: admin })),
    // Broken requests: bodies, content types, methods, tokens, query strings.
    oddString.map((body) => ({ body })),
    fc.tuple(oddString, fc.constantFrom('text/plain', 'multipart/form-data', 'application/x-www-form-urlencoded', null, 'application/json; charset=latin1')).map(([body, contentType]) => ({
      body: body || '{"query":"{ viewer { id } }"}',
      contentType,
    })),
    fc.constantFrom('PUT', 'DELETE', 'PATCH').map((method) => ({ method, body: gqlBody('{ viewer { id } }', {}) })),
    // Garbage tokens (header-safe characters: a client cannot send others).
    oddString.map((token) => ({ body: gqlBody('{ viewer { id } }', {}), token: `x${token.replace(/[^\x21-\x7e]/g, '')}`.slice(0, 8_000) })),
    oddString.map((q) => ({ method: 'GET', search: `?query=${encodeURIComponent(q.toWellFormed())}` })),
    fc.json().map((j) => ({ body: j })),
    // operationName variants: never the mutation's own name, so nothing may be written.
    fc.tuple(operationName, fc.boolean(), fc.boolean()).map(([given, get, twoOps]) => {
      // Without a name, a lone operation would rightly run: send an empty one instead.
      const name = !twoOps && given == null ? '' : given;
      const query = twoOps
        ? `query Read { viewer { id } } mutation Write { createPost(input: { content: "fuzz operationName" }) { post { id } } }`
        : `mutation Write { createPost(input: { content: "fuzz operationName" }) { post { id } } }`;
      if (get) {
        const search = new URLSearchParams({ query, ...(name == null ? {} : { operationName: name }) });
        return { method: 'GET', search: `?${search}`, token: member };
      }
      return { body: JSON.stringify({ query, operationName: name }), token: member };
    }),
    // Variables nested deep (up to 100,000 levels), as arrays or objects, used or not.
    fc.tuple(fc.integer({ min: 33, max: 100_000 }), fc.boolean(), fc.constantFrom('v', 'c', 'ids')).map(([depth, arrays, name]) => {
      const [open, close] = arrays ? ['[', ']'] : ['{"a":', '}'];
      const value = `${open.repeat(depth)}${arrays ? '' : '1'}${close.repeat(depth)}`;
      return { body: `{"query":"query ($ids: [ID!]) { nodes(ids: $ids) { id } }","variables":{"${name}":${value}}}`, token: member };
    }),
    // Huge variables: unused padding near the body limit, or long strings where the query takes text.
    fc.tuple(fc.integer({ min: 100_000, max: 990_000 }), fc.boolean()).map(([size, used]) => ({
      body: used
        ? gqlBody(`mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`, { c: 'x'.repeat(size) })
        : gqlBody(`{ viewer { id } }`, { pad: 'x'.repeat(size) }),
      token: member,
    })),
    // Subscriptions, named or not, with or without a matching operationName.
    fc.tuple(fc.constantFrom('subscription { viewer { id } }', 'subscription S { suspendedUsers(first: 1) { edges { cursor } } }', 'subscription S { nope }'), operationName).map(
      ([query, name]) => ({ body: JSON.stringify({ query, operationName: name ?? 'S' }), token: admin }),
    ),
  );

  it(`answers ${RUNS} malformed requests with coded errors or 4xx, and changes nothing`, async () => {
    const before = await server.dump();
    const seen = { status4xx: 0, codedErrors: 0 };
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const headers: Record<string, string> = {};
        if (r.contentType !== null) headers['content-type'] = r.contentType ?? 'application/json';
        if (r.token) headers.authorization = `Bearer ${r.token}`;
        // apollo-require-preflight lets the CSRF check judge the content, not refuse outright.
        if (r.method === 'GET') headers['apollo-require-preflight'] = 'true';
        const res = await fetch(`${server.url}${r.search ?? ''}`, {
          method: r.method ?? 'POST',
          headers,
          body: r.method === 'GET' ? undefined : (r.body ?? ''),
        });
        const text = await res.text();
        expect(res.status, text.slice(0, 300)).toBeLessThan(500);
        expect(text).not.toMatch(/\n\s+at |stacktrace|node_modules/);
        if (res.status >= 400) {
          seen.status4xx++;
          return;
        }
        const body = JSON.parse(text) as { errors?: Array<{ extensions?: { code?: string } }> };
        for (const e of body.errors ?? []) expect(typeof e.extensions?.code, text.slice(0, 300)).toBe('string');
        if (body.errors?.length) seen.codedErrors++;
      }),
      { numRuns: RUNS },
    );
    // Most answers were refusals (the rest: lookups of missing nodes answering null).
    expect(seen.status4xx + seen.codedErrors).toBeGreaterThan(RUNS * 0.7);
    const after = await server.dump();
    const changed = Object.keys(before).filter((t) => JSON.stringify(before[t], (_k, v) => (typeof v === 'bigint' ? `${v}` : v)) !== JSON.stringify(after[t], (_k, v) => (typeof v === 'bigint' ? `${v}` : v)));
    expect(changed).toEqual([]);
    expect(after).toEqual(before);
  }, 300_000);
});
