/**
 * Refuses, before anything executes, a request whose operation cannot run here:
 * an `operationName` that names no operation of the document (or a name on an
 * anonymous one, or `""`), and subscriptions, which this server serves over WebSocket.
 * Without this, the executor would pick an operation on its own while every guard
 * that reads the resolved operation (the cost limit among them) saw none.
 */
import type { BaseContext, GraphQLRequestContextDidResolveOperation } from '@apollo/server';
import { GraphQLError, OperationTypeNode } from 'graphql';

/**
 * Why no operation of the document was resolved for the `operationName` a client sent
 * (null or undefined when it sent none).
 */
export function operationResolutionMessage(operationName: string | null | undefined): string {
  return operationName == null
    ? 'the document has several operations: name the one to run in operationName'
    : `the document has no operation named ${JSON.stringify(operationName.slice(0, 100))}`;
}

/**
 * Refuses a request whose operationName resolves to no operation, and subscriptions
 * (served over WebSocket, see ws-server.ts).
 * Must run before every other `didResolveOperation` hook: Apollo runs those hooks at
 * once and answers with the first refusal, so this one speaks before guards that would
 * stumble on a missing operation.
 */
export function checkOperation({ request, operation }: Pick<GraphQLRequestContextDidResolveOperation<BaseContext>, 'request' | 'operation'>): void {
  if (!operation) {
    throw new GraphQLError(operationResolutionMessage(request.operationName), {
      extensions: { code: 'OPERATION_RESOLUTION_FAILURE', http: { status: 400 } },
    });
  }
  if (operation.operation === OperationTypeNode.SUBSCRIPTION) {
    throw new GraphQLError('subscriptions are served over WebSocket (protocol graphql-transport-ws) at /graphql, not over HTTP', {
      extensions: { code: 'BAD_REQUEST', http: { status: 400 } },
    });
  }
}
