/**
 * The playground in a real browser (Chromium through playwright-core), 1024 px wide,
 * over the demo data set: every asset comes from this server; every example tab reads
 * whole and carries the demo ids; a token set once in the Headers pane serves a
 * mutation in another tab; the subscription tab runs over the server's own WebSocket
 * and shows a post created elsewhere, and the Headers pane's token goes with a
 * subscription. Screenshots are saved to test-results/playground.png and
 * test-results/playground-subscription.png.
 */
import { mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoSeeding } from '../../src/composition-root.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { listGlobalId, meetingGlobalId } from '../../src/graphql/ids.js';
import { seedDemoData, type DemoSummary } from '../../src/seed/demo.js';
import { MonotonicClock } from '../../src/store/clock.js';
import { launchChromium } from '../support/browser.js';
import { waitFor } from '../support/live-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

/** A script reading one of GraphiQL's CodeMirror editors (they render only visible lines). */
const readEditor = (selector: string) =>
  `(() => { const el = document.querySelector(${JSON.stringify(selector)}); return el && el.CodeMirror ? el.CodeMirror.getValue() : ''; })()`;

/** The value of one of GraphiQL's editors. */
const editorValue = (page: Page, selector: string) => page.evaluate(readEditor(selector)) as Promise<string>;

/** Type into one of GraphiQL's editors, as a user's edit does (it fires the change handlers). */
const setEditorValue = (page: Page, selector: string, value: string) =>
  page.evaluate(`document.querySelector(${JSON.stringify(selector)}).CodeMirror.setValue(${JSON.stringify(value)})`);

const QUERY = '.graphiql-query-editor .CodeMirror';
const RESULT = '.result-window .CodeMirror';
const HEADERS = '.graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror';

/** Run the active tab and wait for a result that is not the previous one. */
async function run(page: Page): Promise<Record<string, any>> {
  const before = await editorValue(page, RESULT);
  await page.click('.graphiql-execute-button');
  await page.waitForFunction(`(v => v !== '' && v !== ${JSON.stringify(before)})(${readEditor(RESULT)})`, null, { timeout: 20_000 });
  return JSON.parse(await editorValue(page, RESULT)) as Record<string, any>;
}

/** Open the playground in a new 1024 px page, noting every request and socket that leaves the server. */
async function openPlayground(browser: Browser, server: TestServer) {
  const page = await browser.newPage({ viewport: { width: 1024, height: 768 } });
  const origin = new URL(server.url).origin;
  const foreign: string[] = [];
  page.on('request', (r) => {
    if (!r.url().startsWith(origin)) foreign.push(r.url());
  });
  const sockets: string[] = [];
  page.on('websocket', (ws) => sockets.push(ws.url()));
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(server.url, { waitUntil: 'load' });
  await page.waitForSelector('.graphiql-container', { timeout: 20_000 });
  return { page, foreign, sockets, errors };
}

/** Start the active tab's subscription and wait until the server holds `count` of them. */
async function subscribe(page: Page, server: TestServer, count: number): Promise<void> {
  await page.click('.graphiql-execute-button');
  await waitFor(() => server.app.services.live.subscriptions === count, 20_000, `${count} subscriptions on the server`);
}

/** Wait until the results pane shows `text`, and return the result it holds. */
async function resultShowing(page: Page, text: string): Promise<Record<string, any>> {
  await page.waitForFunction(`${readEditor(RESULT)}.includes(${JSON.stringify(text)})`, null, { timeout: 20_000 });
  return JSON.parse(await editorValue(page, RESULT)) as Record<string, any>;
}

describe('the playground in Chromium', () => {
  let server: TestServer;
  let browser: Browser;
  let demo: DemoSummary;
  let aheadMs = 0;

  beforeAll(async () => {
    // One process, one clock: a subscription starts exactly when the server holds it.
    // CORS_ORIGINS leaves the playground's origin out: its own page needs no CORS, its
    // WebSocket included.
    // The server's clock runs ahead once the demo data is in: its counts settle (offsets count settled posts).
    server = await startTestServer({
      env: { LIVE_POLL_MS: '50', CLOCK_SKEW_MS: '0', CORS_ORIGINS: 'https://app.example.com' },
      clock: new MonotonicClock({ now: () => Date.now() + aheadMs }),
    });
    demo = (await seedDemoData(demoSeeding(server.app.services)))!;
    aheadMs = 30_000;
    await server.app.services.countVerifier.runOnce();
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('loads offline at 1024 px, with every example readable and the demo ids filled in', async () => {
    const { page, foreign, errors } = await openPlayground(browser, server);

    const result = await run(page);
    expect(result.data.userByUsername.posts.edges.map((e: { node: { content: string } }) => e.node.content)).toEqual(
      [45, 44, 43, 42, 41].map((n) => `Alice Liddell's post #${n}`),
    );
    expect(result.data.userByUsername.posts.pageInfo.hasNextPage).toBe(true);

    const tabs = page.locator('.graphiql-tab');
    expect(await tabs.count()).toBe(9);
    const queries: string[] = [];
    for (let i = 0; i < 9; i++) {
      await tabs.nth(i).click();
      queries.push(await editorValue(page, QUERY));
      // Nothing runs off the editor: no horizontal scrolling.
      const { scrollWidth, clientWidth } = await page.$eval('.graphiql-query-editor .CodeMirror-scroll', (el) => ({
        scrollWidth: el.scrollWidth,
        clientWidth: el.clientWidth,
      }));
      expect(scrollWidth, `tab ${i + 1} is wider than the editor`).toBeLessThanOrEqual(clientWidth);
    }
    expect(queries[2]).toContain(`node(id: "${meetingGlobalId(demo.meetingId)}")`);
    expect(queries[3]).toContain(`node(id: "${listGlobalId(demo.listId)}")`);
    const alice = await server.gql(`{ userByUsername(username: "alice") { id } }`);
    expect(queries[7]).toContain(`authorId: "${alice.data!.userByUsername.id}"`);
    await tabs.nth(2).click();
    const meetingResult = await run(page);
    expect(meetingResult.data.node).toMatchObject({ title: 'Tea party planning', acceptanceCount: 3 });
    await tabs.nth(6).click();
    const mine = await run(page);
    expect(mine.data.userByUsername.lists.edges.map((e: { node: { title: string; owner: { username: string } } }) => e.node)).toEqual([
      { id: listGlobalId(demo.listId), title: 'Groceries', owner: { username: 'alice' } },
    ]);
    expect(mine.data.userByUsername.meetings.edges.map((e: { node: { title: string } }) => e.node.title)).toEqual(['Tea party planning']);
    // Numbered pages: page 3 of alice's posts, 5 a page.
    await tabs.nth(8).click();
    const numbered = await run(page);
    expect(numbered.data.userByUsername.posts.totalCount).toBe(45);
    expect(numbered.data.userByUsername.posts.edges.map((e: { node: { content: string } }) => e.node.content)).toEqual(
      [35, 34, 33, 32, 31].map((n) => `Alice Liddell's post #${n}`),
    );
    expect(numbered.data.userByUsername.posts.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });

    expect(foreign).toEqual([]);
    expect(errors).toEqual([]);
    mkdirSync('test-results', { recursive: true });
    await tabs.nth(0).click();
    await page.screenshot({ path: 'test-results/playground.png' });
    await page.close();
  }, 60_000);

  it('sends a token set once, in the first tab, from every other tab', async () => {
    const { page } = await openPlayground(browser, server);
    const token = await server.token('alice');
    const headers = JSON.stringify({ Authorization: `Bearer ${token}` });
    await setEditorValue(page, HEADERS, headers);
    // The mutations tab: run it there, and in a tab opened afterwards.
    await page.locator('.graphiql-tab').nth(5).click();
    expect(await editorValue(page, HEADERS)).toBe(headers);
    const created = await run(page);
    expect(created.errors).toBeUndefined();
    expect(created.data.createPost.post.id).toMatch(/\S/);

    await page.click('.graphiql-tab-add');
    expect(await editorValue(page, HEADERS)).toBe(headers);
    await setEditorValue(page, QUERY, 'mutation { createList(input: { title: "From a new tab" }) { list { title } } }');
    const fromNewTab = await run(page);
    expect(fromNewTab.data).toEqual({ createList: { list: { title: 'From a new tab' } } });
    await page.close();
  }, 60_000);

  it('runs the subscription tab over its own WebSocket: a post created elsewhere shows up in the results', async () => {
    const { page, foreign, sockets, errors } = await openPlayground(browser, server);
    const tabs = page.locator('.graphiql-tab');
    await tabs.nth(7).click();
    expect(await editorValue(page, QUERY)).toContain('subscription AliceTimeline');
    await subscribe(page, server, 1);

    const created = await server.gql(`mutation { createPost(input: { content: "Live from another tab" }) { post { id } } }`, {}, await server.token('alice'));
    const change = await resultShowing(page, 'Live from another tab');
    expect(change).toEqual({
      data: {
        postsChanged: {
          cursor: expect.stringMatching(/\S/),
          addedEdge: {
            cursor: expect.stringMatching(/\S/),
            node: { id: created.data!.createPost.post.id, content: 'Live from another tab', createdAt: expect.stringMatching(/^\d{4}-/) },
          },
          deletedPostId: null,
        },
      },
    });
    // What the user sees: the rendered results pane.
    expect(await page.locator('.result-window').innerText()).toContain('"content": "Live from another tab"');
    mkdirSync('test-results', { recursive: true });
    await page.screenshot({ path: 'test-results/playground-subscription.png' });

    // The button now stops the subscription, and the server lets it go.
    await page.click('.graphiql-execute-button');
    await waitFor(() => server.app.services.live.subscriptions === 0, 10_000, 'the subscription to end');
    expect(sockets).toEqual([server.url.replace(/^http/, 'ws')]);
    expect(foreign).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('sends the Headers pane\'s token with a subscription, a new one on a new socket', async () => {
    const { page, sockets } = await openPlayground(browser, server);
    await page.click('.graphiql-tab-add');
    await setEditorValue(page, HEADERS, '');
    await setEditorValue(page, QUERY, 'subscription Suspensions {\n  suspensionsChanged { addedEdge { node { reason user { username } } } }\n}');
    // No token: the admins' feed is refused, and the refusal shows.
    const refused = await run(page);
    expect(refused.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).toEqual(['UNAUTHENTICATED']);

    const admin = await server.token('root', { admin: true });
    await setEditorValue(page, HEADERS, JSON.stringify({ Authorization: `Bearer ${admin}` }));
    await subscribe(page, server, 1);
    const input = aUser();
    const user = await server.gql(`mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input }, await server.token(input.username));
    await server.gql(
      `mutation ($input: SuspendUserInput!) { suspendUser(input: $input) { suspension { reason } } }`,
      { input: { userId: user.data!.createUser.user.id, reason: 'seen live in the playground' } },
      admin,
    );
    const change = await resultShowing(page, 'seen live in the playground');
    expect(change).toEqual({
      data: { suspensionsChanged: { addedEdge: { node: { reason: 'seen live in the playground', user: { username: input.username } } } } },
    });
    await page.click('.graphiql-execute-button');
    await waitFor(() => server.app.services.live.subscriptions === 0, 10_000, 'the subscription to end');
    // One socket for each set of headers.
    expect(sockets).toHaveLength(2);
    await page.close();
  }, 60_000);
});
