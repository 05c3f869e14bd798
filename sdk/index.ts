/**
 * The typed client SDK of the cassandra-relay-graphql server:
 * - typed document nodes and result/variable types for every operation in documents/
 *   (use them with Apollo Client, urql or any client that understands
 *   `TypedDocumentNode`);
 * - `getSdk(requester)`: every operation as a typed function over your own transport;
 * - `createSdk(url, { token })`: the same over `fetch`, ready to call.
 */
export * from './graphql.js';
export { getSdk, type Requester, type Sdk } from './sdk.js';
export { createSdk, SdkError, type SdkOptions } from './client.js';
