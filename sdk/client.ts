/**
 * The ready-to-call typed SDK over HTTP: `createSdk(url, { token })` gives every
 * operation of documents/ as a typed method, e.g. `sdk.Timeline({ username, first })`.
 */
import { print, type DocumentNode } from 'graphql';
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
  /** A bearer token (see `npm run token`). */
  readonly token?: string;
  readonly headers?: Record<string, string>;
}

/** A typed client of the server at `url` (its /graphql endpoint). */
export function createSdk(url: string, options: SdkOptions = {}) {
  return getSdk(async <R, V>(doc: DocumentNode, variables?: V): Promise<R> => {
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
  });
}

export type { Requester } from './sdk.js';
export * as Types from './graphql.js';
