/**
 * The ready-to-call typed SDK: `createSdk(url, { token })` gives every operation of
 * documents/ as a typed method, e.g. `sdk.Timeline({ username, first })` over HTTP, and
 * with graphql-ws at hand `sdk.PostsChanged({ authorId })`, an async iterable of changes
 * over WebSocket.
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

/**
 * A subscription's socket closed under it (the server stopping: 1001, a reader too slow:
 * 1013, the token expired: 4403, the network: 1006): subscribe again with `after` set to
 * the last cursor received, to another server if need be, with a new token after 4403.
 */
export class SdkSocketClosed extends Error {
  override readonly name = 'SdkSocketClosed';
  constructor(
    readonly code: number,
    readonly reason: string,
  ) {
    super(`the WebSocket closed with ${code}${reason ? ` (${reason})` : ''}: subscribe again with \`after\` set to the last cursor received`);
  }
}

/**
 * The slice of graphql-ws the SDK's subscriptions run on: its `createClient` (graphql-ws
 * 6). Pass the package itself, `import * as graphqlWs from 'graphql-ws'`, so an app that
 * makes no subscription needs no graphql-ws, bundled or installed.
 */
export interface GraphqlWsLike {
  createClient(options: {
    url: string;
    connectionParams: Record<string, string>;
    webSocketImpl?: unknown;
    lazy: boolean;
    retryAttempts: number;
  }): { iterate(request: { query: string; variables?: Record<string, unknown> }): AsyncIterableIterator<unknown> };
}

/** Options of the SDK. */
export interface SdkOptions {
  /** A bearer token (see `npm run token`), sent over HTTP and in the socket's `connection_init`. */
  readonly token?: string;
  /** Headers of every HTTP request, also sent as the socket's `connection_init` payload. */
  readonly headers?: Record<string, string>;
  /** graphql-ws (`import * as graphqlWs from 'graphql-ws'`): without it, subscriptions are refused. */
  readonly graphqlWs?: GraphqlWsLike;
  /** The WebSocket URL of subscriptions; by default `url` with `ws:` for `http:` (`wss:` for `https:`). */
  readonly wsUrl?: string;
  /** A WebSocket class where there is no global one (Node 20: `import WebSocket from 'ws'`). */
  readonly webSocketImpl?: unknown;
}

/** One execution result of a subscription, as graphql-ws yields it. */
interface WsResult<R> {
  readonly data?: R | null;
  readonly errors?: SdkError['errors'];
}

function isCloseEvent(value: unknown): value is { code: number; reason: string } {
  return typeof value === 'object' && value !== null && typeof (value as { code?: unknown }).code === 'number' && 'reason' in value;
}

/** What graphql-ws ended a subscription with, as the SDK throws it. */
function subscriptionError(err: unknown): unknown {
  // graphql-ws's `error` message: the operation's errors, with their codes.
  if (Array.isArray(err)) return new SdkError(err as SdkError['errors'], null);
  if (isCloseEvent(err)) return new SdkSocketClosed(err.code, String(err.reason));
  return err;
}

/**
 * A subscription's data, one change per step; it subscribes on the first `next()`, and
 * `return()` (a `break` out of `for await`) unsubscribes at once, even while waiting.
 * A result with errors ends it with an `SdkError`; a closed socket with `SdkSocketClosed`.
 */
function dataOf<R>(open: () => AsyncIterableIterator<unknown>): AsyncIterableIterator<R> {
  let source: AsyncIterableIterator<unknown> | undefined;
  let ended = false;
  const done: IteratorReturnResult<undefined> = { done: true, value: undefined };
  const end = async () => {
    ended = true;
    await source?.return?.();
  };
  return {
    async next(): Promise<IteratorResult<R>> {
      if (ended) return done;
      source ??= open();
      let step: IteratorResult<unknown>;
      try {
        step = await source.next();
      } catch (err) {
        ended = true;
        throw subscriptionError(err);
      }
      if (step.done) {
        ended = true;
        return done;
      }
      const result = step.value as WsResult<R>;
      if (result.errors?.length) {
        await end();
        throw new SdkError(result.errors, result.data);
      }
      return { done: false, value: result.data as R };
    },
    async return(): Promise<IteratorResult<R>> {
      await end();
      return done;
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/**
 * A typed client of the server at `url` (its /graphql endpoint). Queries and mutations
 * go over HTTP with `fetch`; subscriptions, given `graphqlWs`, over one WebSocket shared
 * by all of them and open only while one runs.
 */
export function createSdk(url: string, options: SdkOptions = {}) {
  const headers = { ...(options.token ? { authorization: `Bearer ${options.token}` } : {}), ...options.headers };
  let socket: ReturnType<GraphqlWsLike['createClient']> | undefined;
  const subscribe = <R>(doc: DocumentNode, variables: unknown): AsyncIterableIterator<R> => {
    const graphqlWs = options.graphqlWs;
    if (!graphqlWs) {
      throw new Error('subscriptions run on graphql-ws: pass it, createSdk(url, { graphqlWs }) with `import * as graphqlWs from "graphql-ws"`');
    }
    // No retry inside graphql-ws: it would subscribe again with the first `after`, repeating
    // or missing changes; a closed socket ends the iteration, to be resumed with the last cursor.
    socket ??= graphqlWs.createClient({
      url: options.wsUrl ?? url.replace(/^http/, 'ws'),
      connectionParams: headers,
      webSocketImpl: options.webSocketImpl,
      lazy: true,
      retryAttempts: 0,
    });
    const client = socket;
    const request = { query: print(doc), variables: (variables ?? {}) as Record<string, unknown> };
    return dataOf<R>(() => client.iterate(request));
  };
  return getSdk(<R, V>(doc: DocumentNode, variables?: V): Promise<R> | AsyncIterable<R> => {
    if (getOperationAST(doc)?.operation === 'subscription') return subscribe<R>(doc, variables);
    return request<R>(url, headers, doc, variables);
  });
}

/** One query or mutation over HTTP. */
async function request<R>(url: string, headers: Record<string, string>, doc: DocumentNode, variables: unknown): Promise<R> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query: print(doc), variables }),
  });
  const body = (await res.json()) as { data?: R; errors?: SdkError['errors'] };
  if (body.errors?.length) throw new SdkError(body.errors, body.data);
  return body.data as R;
}

export type { Requester } from './sdk.js';
export * as Types from './graphql.js';
