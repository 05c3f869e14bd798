/**
 * Execution through graphql-jit inside Apollo Server. Apollo Server runs in its plain
 * `schema` mode and keeps its whole request pipeline (parse cache, validation with our
 * limits, plugins, error formatting); only execution changes, through the documented
 * `responseForOperation` plugin hook: each operation is compiled once to a specialised
 * function, then run per request, and Apollo skips its own execution.
 *
 * Why not Apollo's gateway interface (`gateway.load()` returning an `executor`), which
 * this used before: Apollo builds the executor's request context with a `status`
 * getter and setter in an object literal, and V8 keeps such accessor pairs in the old
 * generation. Every request's whole state (context, loaders, rows, result) was then
 * reachable from old-generation garbage until the next full collection, so scavenges
 * promoted it: 9% of all allocation, against 0.2% here (docs/benchmarks-history.md,
 * "The gateway executor's garbage, found and removed").
 */
import {
  HeaderMap,
  type BaseContext,
  type GraphQLRequestContextDidEncounterErrors,
  type GraphQLRequestContextResponseForOperation,
  type GraphQLResponse,
  type HTTPGraphQLHead,
} from '@apollo/server';
import { GraphQLError, type ExecutionResult, type OperationDefinitionNode, type FormattedExecutionResult, type GraphQLFormattedError, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';

/**
 * Apollo's `stringifyResult`: `JSON.stringify`, without Apollo's default pretty-printing.
 * graphql-jit's compiled serialiser (fast-json-stringify) builds its text by
 * concatenation, which must be flattened before it is written: with that, it saves
 * under 1 µs on a 20-edge timeline result (`bench/serialise.ts`), and it cannot describe
 * the DateTime scalar at all. So every response goes through `JSON.stringify`.
 */
export function stringifyResult(value: FormattedExecutionResult): string {
  return JSON.stringify(value);
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

/** What the responder needs from the server's configuration, for results with errors. */
export interface JitResponderOptions<C extends BaseContext> {
  /** The `formatError` Apollo Server was given: errors leave formatted by it, as Apollo's own do. */
  readonly formatError: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;
  /** The `didEncounterErrors` hook of the plugin this responder belongs to (Apollo calls it for its own errors). */
  readonly didEncounterErrors?: (requestContext: GraphQLRequestContextDidEncounterErrors<C>) => Promise<void>;
  /**
   * The root value of an operation (none by default: the application's root fields have
   * resolvers). The benchmarks' Apollo floor gives a recorded response here, which
   * default resolvers then serve.
   */
  readonly rootValue?: (requestContext: GraphQLRequestContextResponseForOperation<C>) => unknown;
}

/** True for an `extensions.http` Apollo would merge into the response's head. */
function isHttpHead(value: unknown): value is Partial<HTTPGraphQLHead> {
  if (typeof value !== 'object' || value === null) return false;
  const head = value as Partial<HTTPGraphQLHead>;
  return (head.status === undefined || typeof head.status === 'number') && (head.headers === undefined || head.headers instanceof Map);
}

/**
 * Format execution errors as Apollo Server formats the errors of its own execution
 * (its `normalizeAndFormatErrors`): `extensions.code` defaults to
 * INTERNAL_SERVER_ERROR, an `extensions.http` status or header moves to the response's
 * head, then `formatError` runs, and a formatter that throws yields "Internal server
 * error". Apollo leaves a `responseForOperation` response as it is, so this is ours to do.
 */
function formatErrors(errors: readonly GraphQLError[], formatError: JitResponderOptions<BaseContext>['formatError']) {
  const http: HTTPGraphQLHead = { headers: new HeaderMap() };
  const formatted = errors.map((error) => {
    try {
      const extensions: Record<string, unknown> = { ...error.extensions, code: error.extensions.code ?? 'INTERNAL_SERVER_ERROR' };
      if (isHttpHead(extensions.http)) {
        if (extensions.http.status) http.status = extensions.http.status;
        for (const [name, value] of extensions.http.headers ?? []) http.headers.set(name, value);
        delete extensions.http;
      }
      return formatError({ ...error.toJSON(), extensions }, error);
    } catch {
      return { message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } };
    }
  });
  return { formatted, http };
}

/**
 * The `responseForOperation` hook that executes the resolved operation with
 * graphql-jit (compiled once per query and operation) and answers for Apollo Server,
 * which then skips its own execution. Results with errors get what Apollo's pipeline
 * gives its own: the plugin's `didEncounterErrors`, formatting, and status 400 when the
 * variables did not coerce (no `data` at all).
 */
export function jitResponder<C extends BaseContext>(schema: GraphQLSchema, options: JitResponderOptions<C>) {
  // Compiled with their operation's node: Apollo hands every request of a cached query
  // text the same document, and a document its cache lets go takes its compilation along.
  const compiled = new WeakMap<OperationDefinitionNode, CompiledQuery>();
  const rootValue = options.rootValue;
  return async (requestContext: GraphQLRequestContextResponseForOperation<C>): Promise<GraphQLResponse | null> => {
    const { document, operationName, operation, request } = requestContext;
    // No operation resolved: Apollo's own path answers (the operation guard refuses these first).
    if (!operation) return null;
    let query = compiled.get(operation);
    let result: ExecutionResult;
    if (!query) {
      const built = compileQuery(schema, document, operationName ?? undefined);
      if (isCompiledQuery(built)) {
        query = built;
        compiled.set(operation, query);
      } else {
        result = built;
      }
    }
    let errors: GraphQLError[];
    if (query) {
      result = await query.query(rootValue && rootValue(requestContext), requestContext.contextValue, request.variables ?? {});
      if (!result.errors) {
        // The head stays as Apollo has it (it merges this one into itself).
        return { http: requestContext.response.http, body: { kind: 'single', singleResult: result } };
      }
      // No data at all: the variables did not coerce (graphql-js reports these as
      // request errors with BAD_USER_INPUT; do the same).
      const coercion = result.data === undefined;
      errors = result.errors.map((e) => asGraphQLError(e, coercion));
    } else {
      // graphql-jit could not compile a validated operation: an internal error (masked and logged).
      errors = result!.errors!.map((e) => new GraphQLError(e.message, { originalError: e }));
    }
    // The context carries its errors whether or not a listener is there to see them.
    const withErrors = Object.assign(requestContext, { errors });
    await options.didEncounterErrors?.(withErrors);
    const { formatted, http } = formatErrors(errors, options.formatError);
    if (result!.data === undefined && !http.status) http.status = 400;
    return { http, body: { kind: 'single', singleResult: { ...result!, errors: formatted } } };
  };
}
