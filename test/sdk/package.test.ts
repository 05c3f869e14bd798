/**
 * The SDK leaves the repository: `npm run build:sdk`, `npm pack` in sdk/, then a
 * scratch project under the temp folder installs the tarball (offline, with the peer
 * dependencies linked from this checkout's node_modules), type-checks a client that uses
 * typed documents, `getSdk`/`createSdk` and a subscription over graphql-ws, and runs it
 * against a live server.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { describeEachStore } from '../support/stores.js';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const modules = (name: string) => dirname(require.resolve(`${name}/package.json`));
const TSC = join(modules('typescript'), 'bin', 'tsc');

/** A client app as docs/clients.md shows it. */
const CLIENT = `import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print, type DocumentNode } from 'graphql';
import * as graphqlWs from 'graphql-ws';
import WebSocket from 'ws';
import { createSdk, getSdk, SdkError, TimelineDocument, type TimelineQuery, type TimelineQueryVariables } from 'cassandra-relay-graphql-sdk';

const url = process.env.API_URL!;

// A typed document carries its result and variable types (what Apollo Client's useQuery reads).
const timeline: TypedDocumentNode<TimelineQuery, TimelineQueryVariables> = TimelineDocument;

// Ready to call over fetch.
const sdk = createSdk(url);
const page = await sdk.Timeline({ username: 'carol', first: 2 });
const contents: string[] = page.userByUsername!.posts.edges.map((e) => e.node.content);

// getSdk over a transport of your own.
const own = getSdk(async <R, V>(document: DocumentNode, variables?: V): Promise<R> => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: print(document), variables }),
  });
  return ((await res.json()) as { data: R }).data;
});
const next = await own.Timeline({ username: 'carol', first: 2, after: page.userByUsername!.posts.pageInfo.endCursor });

let code: string | undefined;
try {
  await sdk.CreatePost({ input: { content: 'no token' } });
} catch (err) {
  code = err instanceof SdkError ? err.code : 'not an SdkError';
}

// Subscriptions over WebSocket (Node 20 has no global WebSocket: ws's), resumed after a
// cursor: here the page's startCursor, so the post made below arrives however late we subscribe.
const live = createSdk(url, { token: process.env.API_TOKEN, graphqlWs, webSocketImpl: WebSocket });
await live.CreatePost({ input: { content: 'carol live' } });
const arrived: string[] = [];
for await (const { postsChanged } of live.PostsChanged({ authorId: page.userByUsername!.id, after: page.userByUsername!.posts.pageInfo.startCursor })) {
  if (postsChanged.addedEdge) arrived.push(postsChanged.addedEdge.node.content);
  break;
}

/** Never called: the compiler must refuse them. */
export function wrongVariables() {
  // @ts-expect-error after is a String
  live.PostsChanged({ authorId: 'x', after: 42 });
  // @ts-expect-error username is a String!
  return sdk.Timeline({ username: 42 });
}

console.log(JSON.stringify({ contents, next: next.userByUsername!.posts.edges.map((e) => e.node.content), code, kind: timeline.kind, arrived }));
`;

describeEachStore('the SDK as an installed package', (target) => {
  let server: TestServer;
  const scratch = mkdtempSync(join(tmpdir(), 'sdk-client-'));

  let token: string;

  beforeAll(async () => {
    server = await startTestServer({ target });
    token = await server.token('carol');
    await server.gql(`mutation { createUser(input: { username: "carol", displayName: "Carol" }) { user { id } } }`, {}, token);
    for (let i = 1; i <= 4; i++) {
      await server.gql(`mutation ($c: String!) { createPost(input: { content: $c }) { post { id } } }`, { c: `carol ${i}` }, token);
    }
  });
  afterAll(async () => {
    await server?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('packs, installs offline into another project, type-checks and calls the server', async () => {
    await run('npm', ['run', '-s', 'build:sdk']);
    await run('npm', ['pack', '--pack-destination', scratch], { cwd: 'sdk' });
    const tarball = readdirSync(scratch).find((f) => f.endsWith('.tgz'))!;
    expect(tarball).toBe('cassandra-relay-graphql-sdk-0.1.0.tgz');

    const app = join(scratch, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'client-app', private: true, type: 'module' }));
    // The peers come from this checkout (linked), the SDK from its tarball; no registry.
    await run(
      'npm',
      [
        'install',
        '--offline',
        '--no-audit',
        '--no-fund',
        '--install-links=false',
        resolve(scratch, tarball),
        ...['graphql', '@graphql-typed-document-node/core', 'graphql-ws', 'ws'].map(modules),
      ],
      { cwd: app },
    );
    writeFileSync(join(app, 'client.ts'), CLIENT);
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022', 'DOM'], types: [], strict: true, outDir: 'out' },
        files: ['client.ts', 'env.d.ts'],
      }),
    );
    // No @types/node or @types/ws in the scratch project: the client declares the little it needs.
    writeFileSync(
      join(app, 'env.d.ts'),
      "declare const process: { env: Record<string, string | undefined> };\ndeclare module 'ws' { const WebSocket: unknown; export default WebSocket; }\n",
    );
    await run(process.execPath, [TSC, '-p', 'tsconfig.json', '--noEmit', 'false'], { cwd: app }).catch((err: { stdout: string }) => {
      throw new Error(`the client does not type-check:\n${err.stdout}`);
    });

    const { stdout } = await run(process.execPath, ['out/client.js'], { cwd: app, env: { ...process.env, API_URL: server.url, API_TOKEN: token } });
    expect(JSON.parse(stdout)).toEqual({
      contents: ['carol 4', 'carol 3'],
      next: ['carol 2', 'carol 1'],
      code: 'UNAUTHENTICATED',
      kind: 'Document',
      arrived: ['carol live'],
    });
  }, 120_000);
});
