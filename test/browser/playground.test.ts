/**
 * The playground in a real browser (Chromium through playwright-core), 1024 px wide,
 * over the demo data set: every asset comes from this server; every example tab reads
 * whole and carries the demo ids; a token set once in the Headers pane serves a
 * mutation in another tab. A screenshot is saved to test-results/playground.png.
 */
import { mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listGlobalId, meetingGlobalId } from '../../src/graphql/ids.js';
import { waitFor } from '../support/live-client.js';
import { seedDemoData, type DemoSummary } from '../../src/seed/demo.js';
import { launchChromium } from '../support/browser.js';
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

describe('the playground in Chromium', () => {
  let server: TestServer;
  let browser: Browser;
  let demo: DemoSummary;

  beforeAll(async () => {
    server = await startTestServer();
    demo = (await seedDemoData(server.app.services))!;
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('loads offline at 1024 px, with every example readable and the demo ids filled in', async () => {
    const page = await browser.newPage({ viewport: { width: 1024, height: 768 } });
    const origin = new URL(server.url).origin;
    const foreign: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(origin)) foreign.push(r.url());
    });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(server.url, { waitUntil: 'load' });
    await page.waitForSelector('.graphiql-container', { timeout: 20_000 });

    const result = await run(page);
    expect(result.data.userByUsername.posts.edges.map((e: { node: { content: string } }) => e.node.content)).toEqual(
      [45, 44, 43, 42, 41].map((n) => `Alice Liddell's post #${n}`),
    );
    expect(result.data.userByUsername.posts.pageInfo.hasNextPage).toBe(true);

    const tabs = page.locator('.graphiql-tab');
    expect(await tabs.count()).toBe(8);
    const queries: string[] = [];
    for (let i = 0; i < 8; i++) {
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
    await tabs.nth(2).click();
    const meetingResult = await run(page);
    expect(meetingResult.data.node).toMatchObject({ title: 'Tea party planning', acceptanceCount: 3 });
    const alice = await server.gql(`{ userByUsername(username: "alice") { id } }`);
    expect(queries[6]).toContain(`authorId: "${alice.data!.userByUsername.id}"`);
    await tabs.nth(7).click();
    const mine = await run(page);
    expect(mine.data.userByUsername.lists.edges.map((e: { node: { title: string; owner: { username: string } } }) => e.node)).toEqual([
      { id: listGlobalId(demo.listId), title: 'Groceries', owner: { username: 'alice' } },
    ]);
    expect(mine.data.userByUsername.meetings.edges.map((e: { node: { title: string } }) => e.node.title)).toEqual(['Tea party planning']);

    expect(foreign).toEqual([]);
    expect(errors).toEqual([]);
    mkdirSync('test-results', { recursive: true });
    await tabs.nth(0).click();
    await page.screenshot({ path: 'test-results/playground.png' });
    await page.close();
  }, 60_000);

  it('runs the subscription tab over WebSocket, offline, and shows a post made meanwhile', async () => {
    const page = await browser.newPage({ viewport: { width: 1024, height: 768 } });
    const origin = new URL(server.url).origin;
    const foreign: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(origin) && !r.url().startsWith(origin.replace(/^http/, 'ws'))) foreign.push(r.url());
    });
    await page.goto(server.url, { waitUntil: 'load' });
    await page.waitForSelector('.graphiql-container', { timeout: 20_000 });
    await page.locator('.graphiql-tab').nth(6).click();
    const held = server.app.services.live.subscriptions;
    await page.click('.graphiql-execute-button');
    await waitFor(() => server.app.services.live.subscriptions > held, 10_000, 'the playground to subscribe');
    const alice = await server.token('alice');
    await server.gql(`mutation { createPost(input: { content: "live from the playground test" }) { post { id } } }`, {}, alice);
    await page.waitForFunction(`${readEditor(RESULT)}.includes('live from the playground test')`, null, { timeout: 20_000 });
    const shown = JSON.parse(await editorValue(page, RESULT)) as Record<string, any>;
    expect(shown.data.postsChanged.addedEdge.node.content).toBe('live from the playground test');
    expect(shown.data.postsChanged.cursor).toMatch(/^[A-Za-z0-9_-]+$/);

    // Stop it (the button stops what runs), then: the Headers pane's token goes in
    // connection_init, for an admin's subscription.
    await page.click('.graphiql-execute-button');
    await waitFor(() => server.app.services.live.subscriptions === held, 10_000, 'the subscription to stop');
    const admin = await server.token('root', { admin: true });
    await setEditorValue(page, HEADERS, JSON.stringify({ Authorization: `Bearer ${admin}` }));
    await page.click('.graphiql-tab-add');
    await setEditorValue(page, QUERY, 'subscription { suspensionsChanged { cursor unsuspendedUserId } }');
    await page.click('.graphiql-execute-button');
    await waitFor(() => server.app.services.live.subscribersOf('suspensions') === 1, 10_000, 'the admin subscription');
    const dave = await server.gql(`{ userByUsername(username: "dave") { id } }`);
    await server.gql(`mutation ($id: ID!) { unsuspendUser(input: { userId: $id }) { user { id } } }`, { id: dave.data!.userByUsername.id }, admin);
    await page.waitForFunction(`${readEditor(RESULT)}.includes('unsuspendedUserId')`, null, { timeout: 20_000 });
    expect(JSON.parse(await editorValue(page, RESULT))).toMatchObject({ data: { suspensionsChanged: { unsuspendedUserId: dave.data!.userByUsername.id } } });
    expect(foreign).toEqual([]);
    await page.close();
  }, 60_000);

  it('sends a token set once, in the first tab, from every other tab', async () => {
    const page = await browser.newPage({ viewport: { width: 1024, height: 768 } });
    await page.goto(server.url, { waitUntil: 'load' });
    await page.waitForSelector('.graphiql-container', { timeout: 20_000 });
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
});
