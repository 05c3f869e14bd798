/**
 * Inputs are refused, never silently altered (issue 16, defects 9 and 10): text with
 * lone surrogates, control characters, bidirectional overrides, zero-width characters
 * or nothing visible; instants that name no real calendar date; list cursors whose
 * signed key is outside the column's range.
 */
import { fromGlobalId } from 'graphql-relay';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkText } from '../../src/errors.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { createCursorCodec } from '../../src/paging/cursor.js';
import { TEST_CURSOR_SECRET, startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

describe('text rules', () => {
  const refusals: Array<[string, string, RegExp]> = [
    ['a lone high surrogate', 'ab\ud800c', /must not contain lone surrogates \(unpaired UTF-16 halves\), got U\+D800 at position 2/],
    ['a lone low surrogate after a valid pair', '😀\udc00', /lone surrogates.*U\+DC00 at position 2/],
    ['a C0 control', 'a\u0007b', /must not contain control characters, got U\+0007 at position 1/],
    ['a carriage return', 'a\r\nb', /control characters, got U\+000D/],
    ['DEL', 'a\u007f', /control characters, got U\+007F/],
    ['a C1 control (NEL)', 'a\u0085b', /control characters, got U\+0085/],
    ['a right-to-left override', 'abc\u202edcba', /bidirectional override or isolate characters .*got U\+202E at position 3/],
    ['a left-to-right embedding', '\u202aabc', /bidirectional.*U\+202A/],
    ['a first-strong isolate', 'a\u2068b\u2069', /bidirectional.*U\+2068/],
    ['a pop directional isolate', 'ab\u2069', /bidirectional.*U\+2069/],
    ['a zero-width space inside text', 'zero\u200bwidth', /zero-width characters .*got U\+200B at position 4/],
    ['a word joiner', 'a\u2060b', /zero-width.*U\+2060/],
    ['a byte order mark', '\ufeffhello', /zero-width.*U\+FEFF at position 0/],
    ['a single zero-width space', '\u200b', /zero-width/],
    ['only a zero-width joiner', '\u200d', /at least one visible character/],
    ['only a soft hyphen and spaces', ' \u00ad ', /at least one visible character/],
    ['only a Hangul filler', '\u3164', /at least one visible character/],
    ['only a Braille blank', '\u2800\u2800', /at least one visible character/],
    ['a line break in one-line text', 'a\nb', /must not contain line breaks or tabs, got U\+000A at position 1/],
    ['a tab in one-line text', 'a\tb', /line breaks or tabs/],
  ];
  for (const [what, value, message] of refusals) {
    it(`refuses ${what}`, () => {
      expect(() => checkText('title', value, 1, 200)).toThrow(message);
    });
  }

  it('keeps line breaks and tabs in multi-line text, and refuses the rest there too', () => {
    expect(checkText('content', 'line one\n\tline two', 1, 200, { multiline: true })).toBe('line one\n\tline two');
    expect(() => checkText('content', 'a\r\nb', 1, 200, { multiline: true })).toThrow(/control characters, got U\+000D/);
    expect(() => checkText('content', '\n\t\n', 1, 200, { multiline: true })).toThrow(/1 to 200 characters long, got 0/);
  });

  it('accepts text people write: emoji sequences, joiners in scripts, right-to-left text, accents', () => {
    for (const text of ['👨‍👩‍👧 family', 'می‌خواهم', 'שלום עולם', 'مرحبا', 'e\u0301te\u0301', '😀', 'x']) {
      expect(checkText('title', text, 1, 200)).toBe(text);
    }
  });
});

describeEachStore('inputs over HTTP', (target) => {
  let server: TestServer;
  let member: string;
  let admin: string;
  let userId: string;
  let listId: string;

  beforeAll(async () => {
    server = await startTestServer({ target, env: { LIST_APPLIER: 'false' } });
    admin = await server.token('root', { admin: true });
    const input = aUser();
    member = await server.token(input.username);
    userId = (await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input }, admin)).data!.createUser.user.id;
    listId = (await server.gql(`mutation { createList(input: { title: "l" }) { list { id } } }`, {}, member)).data!.createList.list.id;
    await server.gql(`mutation ($l: ID!) { addListItem(input: { listId: $l, label: "i" }) { item { id } } }`, { l: listId }, member);
  });
  afterAll(() => server.close());

  it('refuses a post made of one zero-width space, a lone surrogate, C1 controls and bidi overrides, storing nothing', async () => {
    const before = server.dump();
    for (const content of ['\u200b', 'broken \ud800 text', 'next\u0085line', 'abc\u202edcba', 'x\u2066y']) {
      const res = await server.gql(`mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`, { c: content }, member);
      expect(res.errors?.[0]?.extensions, JSON.stringify(content)).toEqual({ code: 'BAD_USER_INPUT', argumentName: 'content' });
    }
    for (const [field, value] of [['title', 'a\nb'], ['title', '\u202e']] as const) {
      const res = await server.gql(`mutation ($t: String!) { createMeeting(input: { title: $t }) { meeting { id } } }`, { t: value }, member);
      expect(res.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argumentName: field });
    }
    const label = await server.gql(`mutation ($l: ID!) { addListItem(input: { listId: $l, label: "\\u0000" }) { item { id } } }`, { l: listId }, member);
    expect(label.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argumentName: 'label' });
    const search = await server.gql(`{ usersByLastName(prefix: "a\\u202e", first: 1) { edges { cursor } } }`, {}, member);
    expect(search.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argumentName: 'prefix' });
    expect(server.dump()).toEqual(before);
  });

  it('stores a multi-line post as sent', async () => {
    const res = await server.gql(`mutation ($c: String!) { createPost(input: { content: $c }) { post { content } } }`, { c: 'first line\n\tsecond line' }, member);
    expect(res.data).toEqual({ createPost: { post: { content: 'first line\n\tsecond line' } } });
  });

  it('refuses instants that are not on the calendar instead of rolling them over', async () => {
    const before = server.dump();
    for (const at of ['2026-02-30T10:00:00Z', '2025-02-29T10:00:00Z', '2026-04-31T00:00:00Z', '2026-01-01T24:00:00Z', '2026-01-01T10:60:00Z', '2026-01-01T10:00:60Z', '2026-13-01T10:00:00Z', '2026-01-01T10:00:00+24:00']) {
      const res = await server.gql(`mutation ($u: ID!, $at: DateTime) { suspendUser(input: { userId: $u, reason: "r", suspendedAt: $at }) { suspension { suspendedAt } } }`, { u: userId, at }, admin);
      expect(res.status, at).toBe(400);
      expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0]?.message).toBe(`Variable "$at" got invalid value "${at}"; Expected type DateTime.`);
    }
    const literal = await server.gql(`mutation ($u: ID!) { suspendUser(input: { userId: $u, reason: "r", suspendedAt: "2026-02-30T10:00:00Z" }) { suspension { suspendedAt } } }`, { u: userId }, admin);
    expect(literal.errors?.[0]?.message).toContain('DateTime must be a real calendar date and time');
    expect(server.dump()).toEqual(before);
  });

  it('accepts a leap day and an offset', async () => {
    const res = await server.gql(`mutation ($u: ID!) { suspendUser(input: { userId: $u, reason: "r", suspendedAt: "2024-02-29T23:30:00-01:30" }) { suspension { suspendedAt } } }`, { u: userId }, admin);
    expect(res.data).toEqual({ suspendUser: { suspension: { suspendedAt: '2024-03-01T01:00:00.000Z' } } });
  });

  it('refuses a signed list cursor whose weight is out of the 64-bit range, naming the argument', async () => {
    const raw = fromGlobalId(listId).id;
    const codec = createCursorCodec(TEST_CURSOR_SECRET);
    for (const key of [['99999999999999999999', '0'], ['0', '-9223372036854775809']]) {
      const cursor = codec.encodeCursor(`OrderedList.items:${raw}`, [...key, '00000000-0000-4000-8000-000000000000']);
      const res = await server.gql(`query ($l: ID!, $c: String) { node(id: $l) { ... on OrderedList { items(first: 2, after: $c) { edges { cursor } } } } }`, { l: listId, c: cursor }, member);
      expect(res.errors?.[0]?.extensions, key.join()).toEqual({ code: 'BAD_USER_INPUT', argumentName: 'after' });
    }
    // The extremes of the range are keys like any other.
    const edge = codec.encodeCursor(`OrderedList.items:${raw}`, ['9223372036854775807', '0', '00000000-0000-4000-8000-000000000000']);
    const ok = await server.gql(`query ($l: ID!, $c: String) { node(id: $l) { ... on OrderedList { items(first: 2, after: $c) { edges { cursor } } } } }`, { l: listId, c: edge }, member);
    expect(ok.errors).toBeUndefined();
  });
});
