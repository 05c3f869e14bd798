/**
 * Execution through graphql-jit inside Apollo Server. Apollo Server keeps its request
 * pipeline (parse cache, validation with our limits, plugins, error formatting); only
 * execution changes, through the gateway interface's `executor`: each operation is
 * compiled once to a specialised function, then run per request. Measured in
 * BENCHMARKS.md: graphql-js's generic `execute` was most of our per-request cost.
 */
import type { GatewayInterface } from '@apollo/server-gateway-interface';
import { BREAK, GraphQLError, Kind, getOperationAST, visit, type DocumentNode, type FormattedExecutionResult, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { operationResolutionMessage } from './operation-guard.js';

/** How many compiled operations to keep (oldest dropped first). */
const CACHE_SIZE = 1_000;

/**
 * The compiled serialiser of each error-free result's `data`, for `stringifyResult`.
 * Apollo hands `stringifyResult` the executor's `data` object itself, so the result
 * finds its serialiser by identity; a weak map forgets it with the response.
 */
const serialisers = new WeakMap<object, CompiledQuery['stringify']>();

/**
 * True when the document has fragments. graphql-jit's serialiser merges the fields of
 * every possible type of an abstract type into one shape, which can write a
 * fragment's fields in another order than the query asked for.
 */
function hasFragments(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    enter(node) {
      if (node.kind === Kind.INLINE_FRAGMENT || node.kind === Kind.FRAGMENT_SPREAD) {
        found = true;
        return BREAK;
      }
      return undefined;
    },
  });
  return found;
}

/**
 * Compile an operation with graphql-jit's serialiser (fast-json-stringify, specialised
 * to the operation's response shape). graphql-jit cannot describe a custom scalar
 * (DateTime) to it and refuses such an operation; those compile again without it and
 * keep `JSON.stringify`.
 */
function compile(schema: GraphQLSchema, document: DocumentNode, operationName: string | undefined) {
  if (hasFragments(document)) return { compiled: compileQuery(schema, document, operationName), serialises: false };
  const withSerialiser = compileQuery(schema, document, operationName, { customJSONSerializer: true });
  if (isCompiledQuery(withSerialiser)) return { compiled: withSerialiser, serialises: true };
  return { compiled: compileQuery(schema, document, operationName), serialises: false };
}

/**
 * Apollo's `stringifyResult`: a result without errors whose operation has a compiled
 * serialiser is written by it (the same text as `JSON.stringify`: same fields, same
 * order), extensions appended; anything else goes through `JSON.stringify`.
 */
export function stringifyResult(value: FormattedExecutionResult): string {
  const serialise = value.data && !value.errors ? serialisers.get(value.data) : undefined;
  if (!serialise) return JSON.stringify(value);
  const text = serialise({ data: value.data });
  return value.extensions === undefined ? text : `${text.slice(0, -1)},"extensions":${JSON.stringify(value.extensions)}}`;
}

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
  const compiled = new Map<string, { query: CompiledQuery; serialises: boolean }>();
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
            const result = compile(schema, request.document, request.operationName ?? undefined);
            if (!isCompiledQuery(result.compiled)) return result.compiled;
            if (compiled.size >= CACHE_SIZE) compiled.delete(compiled.keys().next().value!);
            query = { query: result.compiled, serialises: result.serialises };
            compiled.set(key, query);
          }
          const result = await query.query.query(undefined, request.context, request.request.variables ?? {});
          if (!result.errors) {
            if (query.serialises && result.data) serialisers.set(result.data, query.query.stringify);
            return result;
          }
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
