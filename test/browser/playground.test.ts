/**
 * The playground in a real browser (Chromium through playwright-core): the
 * page loads with every asset from this server, runs a paged query, shows the result,
 * and a screenshot is saved to test-results/playground.png.
 */
import { mkdirSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

describe('the playground in Chromium', () => {
  let server: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    server = await startTestServer();
    const token = await server.token('alice');
    await server.gql(`mutation { createUser(input: { username: "alice", displayName: "Alice Liddell" }) { user { id } } }`, {}, token);
    for (let i = 1; i <= 8; i++) {
      await server.gql(`mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`, { c: `Post number ${i}` }, token);
    }
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('loads offline, runs a paged query and shows the result', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const foreign: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(server.url.replace('/graphql', ''))) foreign.push(r.url());
    });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(server.url, { waitUntil: 'load' });
    await page.waitForSelector('.graphiql-container', { timeout: 20_000 });
    await page.click('.graphiql-execute-button');
    // The result editor is CodeMirror: it renders only visible lines, so read its value.
    const resultText = `(() => {
      const el = document.querySelector('.result-window .CodeMirror');
      return el && el.CodeMirror ? el.CodeMirror.getValue() : '';
    })()`;
    await page.waitForFunction(`${resultText}.includes('hasNextPage')`, null, { timeout: 20_000 });
    const text = (await page.evaluate(resultText)) as string;
    const result = JSON.parse(text) as { data: { userByUsername: { posts: { edges: Array<{ node: { content: string } }>; pageInfo: { hasNextPage: boolean } } } } };
    expect(result.data.userByUsername.posts.edges.map((e) => e.node.content)).toEqual([
      'Post number 8',
      'Post number 7',
      'Post number 6',
      'Post number 5',
      'Post number 4',
    ]);
    expect(result.data.userByUsername.posts.pageInfo.hasNextPage).toBe(true);
    // Every example tab is there, and nothing was fetched from anywhere but this server.
    expect(await page.locator('.graphiql-tab').count()).toBeGreaterThanOrEqual(6);
    expect(foreign).toEqual([]);
    expect(errors).toEqual([]);
    mkdirSync('test-results', { recursive: true });
    await page.screenshot({ path: 'test-results/playground.png' });
  }, 60_000);
});
