/**
 * Execution through graphql-jit inside Apollo Server. Apollo Server keeps its request
 * pipeline (parse cache, validation with our limits, plugins, error formatting); only
 * execution changes, through the gateway interface's `executor`: each operation is
 * compiled once to a specialised function, then run per request. Measured in
 * BENCHMARKS.md: graphql-js's generic `execute` was most of our per-request cost.
 */
import type { GatewayInterface } from '@apollo/server-gateway-interface';
import { GraphQLError, getOperationAST, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { operationResolutionMessage } from './operation-guard.js';

/** How many compiled operations to keep (oldest dropped first). */
const CACHE_SIZE = 1_000;

/**
 * graphql-jit's errors are not graphql-js `GraphQLError` instances; Apollo's error
 * formatting needs real ones (with the resolver's error as `originalError`).
 */
function asGraphQLError(e: GraphQLError, coercion: boolean): GraphQLError {
  const jit = e as GraphQLError & { originalError?: Error };
  const error = new GraphQLError(jit.message, {
    path: jit.path,
    originalError: jit.originalError ?? undefined,
    extensions: coercion ? { ...jit.extensions, code: 'BAD_USER_INPUT' } : jit.extensions,
  });
  (error as { locations?: unknown }).locations = jit.locations;
  return error;
}

/** A gateway that serves `schema` and executes with graphql-jit. */
export function jitGateway(schema: GraphQLSchema, sdl: string): GatewayInterface {
  const compiled = new Map<string, CompiledQuery>();
  return {
    async load() {
      return {
        async executor(request) {
          const key = `${request.queryHash}:${request.operationName ?? ''}`;
          let query = compiled.get(key);
          if (!query) {
            // Apollo resolves the operation from what the executor reports: name the
            // problem here (graphql-jit compiles an unknown name without an error, and
            // Apollo would then answer 500).
            // (`request.operationName` is the resolved name: null here; the client's is in `request.request`.)
            const asked = request.request.operationName ?? undefined;
            // (The operation guard refuses these first; this keeps the executor safe alone.)
            if (!getOperationAST(request.document, asked)) return { errors: [new GraphQLError(operationResolutionMessage(asked))] };
            const result = compileQuery(schema, request.document, request.operationName ?? undefined);
            if (!isCompiledQuery(result)) return result;
            if (compiled.size >= CACHE_SIZE) compiled.delete(compiled.keys().next().value!);
            compiled.set(key, result);
            query = result;
          }
          const result = await query.query(undefined, request.context, request.request.variables ?? {});
          if (!result.errors) return result;
          // No data at all: the variables did not coerce (graphql-js reports these as
          // request errors with BAD_USER_INPUT; do the same).
          const coercion = result.data === undefined;
          return { ...result, errors: result.errors.map((e) => asGraphQLError(e, coercion)) };
        },
      };
    },
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema: schema, coreSupergraphSdl: sdl });
      return () => undefined;
    },
    async stop() {},
  };
}
