/**
 * The typed client SDK of the cassandra-relay-graphql server:
 * - typed document nodes and result/variable types for every operation in documents/
 *   (use them with Apollo Client, urql or any client that understands
 *   `TypedDocumentNode`);
 * - `getSdk(requester)`: every operation as a typed function over your own transport
 *   (subscriptions return what the requester returns for them: an `AsyncIterable`);
 * - `createSdk(url, { token, graphqlWs })`: the same over `fetch`, ready to call, and
 *   subscriptions as async iterables over WebSocket with graphql-ws.
 */
export * from './graphql.js';
export { getSdk, type Requester, type Sdk } from './sdk.js';
export { createSdk, SdkError, SdkSocketClosed, type GraphqlWsLike, type SdkOptions } from './client.js';
