/**
 * The ready-to-call typed SDK: `createSdk(url, { token })` gives every operation of
 * documents/ as a typed method, e.g. `sdk.Timeline({ username, first })` over HTTP, and
 * `sdk.PostsChanged({ authorId })`, a typed AsyncIterable of live changes over
 * WebSocket (graphql-ws, an optional peer dependency, loaded on the first subscription).
 */
import { getOperationAST, print, type DocumentNode } from 'graphql';
import { getSdk } from './sdk.js';

/** A GraphQL response with errors; `errors` holds them with their codes. */
export class SdkError extends Error {
  override readonly name = 'SdkError';
  constructor(
    readonly errors: ReadonlyArray<{ message: string; extensions?: { code?: string; argumentName?: string } }>,
    readonly data: unknown,
  ) {
    super(errors.map((e) => `${e.extensions?.code ?? 'ERROR'}: ${e.message}`).join('; '));
  }

  /** The code of the first error. */
  get code(): string | undefined {
    return this.errors[0]?.extensions?.code;
  }
}

/** Options of the SDK. */
export interface SdkOptions {
  /** A bearer token (see `npm run token`); sent in `connection_init` for subscriptions too. */
  readonly token?: string;
  readonly headers?: Record<string, string>;
  /** Where subscriptions connect: the `url` with ws(s):// by default. */
  readonly wsUrl?: string;
  /** A WebSocket implementation where there is no global one (Node before 22: `ws`'s default export). */
  readonly webSocketImpl?: unknown;
}

/** The graphql-ws client the subscriptions of one SDK share (its socket opens on the first). */
type WsClient = { iterate<T>(request: { query: string; variables?: Record<string, unknown> }): AsyncIterableIterator<{ data?: T; errors?: SdkError['errors'] }>; dispose(): void | Promise<void> };

/**
 * A typed client of the server at `url` (its /graphql endpoint). Subscriptions yield
 * each change's data and throw `SdkError` on an error (e.g. `CURSOR_EXPIRED`: reload,
 * then subscribe again); to resume after a dropped socket, subscribe again with
 * `after` set to the last change's `cursor`. `dispose()` closes the WebSocket.
 */
export function createSdk(url: string, options: SdkOptions = {}) {
  let ws: Promise<WsClient> | null = null;
  const socket = (): Promise<WsClient> =>
    (ws ??= import('graphql-ws').then(({ createClient }) =>
      createClient({
        url: options.wsUrl ?? url.replace(/^http/, 'ws'),
        ...(options.webSocketImpl ? { webSocketImpl: options.webSocketImpl } : {}),
        connectionParams: options.token ? { Authorization: `Bearer ${options.token}` } : {},
      }) as unknown as WsClient,
    ));
  async function* subscribe<R>(doc: DocumentNode, variables?: unknown): AsyncGenerator<R> {
    const changes = (await socket()).iterate<R>({ query: print(doc), variables: variables as Record<string, unknown> | undefined });
    try {
      for await (const result of changes) {
        if (result.errors?.length) throw new SdkError(result.errors, result.data);
        yield result.data as R;
      }
    } finally {
      await changes.return?.();
    }
  }
  const sdk = getSdk(<R, V>(doc: DocumentNode, variables?: V): Promise<R> | AsyncIterable<R> => {
    if (getOperationAST(doc)?.operation === 'subscription') return subscribe<R>(doc, variables);
    return (async () => {
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
          ...options.headers,
        },
        body: JSON.stringify({ query: print(doc), variables }),
      });
      const body = (await res.json()) as { data?: R; errors?: SdkError['errors'] };
      if (body.errors?.length) throw new SdkError(body.errors, body.data);
      return body.data as R;
    })();
  });
  return Object.assign(sdk, {
    /** Close the WebSocket the subscriptions share (if one was opened). */
    async dispose(): Promise<void> {
      if (ws) await (await ws).dispose();
      ws = null;
    },
  });
}

export type { Requester } from './sdk.js';
export * as Types from './graphql.js';
