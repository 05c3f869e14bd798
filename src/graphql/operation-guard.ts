/**
 * Refuses, before anything executes, a request whose operation cannot run here:
 * an `operationName` that names no operation of the document (or a name on an
 * anonymous one, or `""`), and subscriptions, which this server does not serve.
 * Without this, the executor would pick an operation on its own while every guard
 * that reads the resolved operation (the cost limit among them) saw none.
 */
import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError, OperationTypeNode, type DocumentNode } from 'graphql';

/** The names of a document's operations, for the refusal message. */
function operationNames(document: DocumentNode): string[] {
  return document.definitions.flatMap((d) => (d.kind === 'OperationDefinition' ? [d.name?.value ?? '(anonymous)'] : []));
}

/** Explains why no operation was resolved. */
function resolutionMessage(document: DocumentNode, operationName: string | null | undefined): string {
  const names = operationNames(document);
  if (operationName == null) {
    return `the document holds ${names.length} operations (${names.join(', ')}); name the one to run with \`operationName\``;
  }
  return `\`operationName\` must name an operation of the document (${names.join(', ')}), got ${JSON.stringify(operationName.slice(0, 100))}`;
}

/**
 * Must come first among the plugins: Apollo runs every `didResolveOperation` hook at
 * once and answers with the first refusal, so this one speaks before guards that would
 * stumble on a missing operation.
 */
export function operationGuardPlugin(): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ request, document, operation }) {
          if (!operation) {
            throw new GraphQLError(resolutionMessage(document, request.operationName), {
              extensions: { code: 'OPERATION_RESOLUTION_FAILURE', http: { status: 400 } },
            });
          }
          if (operation.operation === OperationTypeNode.SUBSCRIPTION) {
            throw new GraphQLError('subscriptions are not supported: this server answers queries and mutations only', {
              extensions: { code: 'BAD_REQUEST', http: { status: 400 } },
            });
          }
        },
      };
    },
  };
}
