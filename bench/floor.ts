/**
 * Apollo's floor: what a request costs our GraphQL server stack when no store work is
 * done. The same stack as the application (`serveGraphql`: Apollo Server on node:http,
 * the request plugin that executes with graphql-jit, the limits, the error masking,
 * the token check, the product's schema and DateTime scalar), answering each query it
 * was given a response for from that response, held in memory and served by default
 * resolvers: no store, no loaders, no cursors. Only the execution and serialisation of
 * the same response shape remain. `npm run bench:cassandra` records the responses from
 * the real server, then loads this one (bench/servers/apollo-floor.ts) beside it.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { ApolloServerPlugin, BaseContext, GraphQLRequest, GraphQLRequestListener } from '@apollo/server';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { execute, GraphQLError, GraphQLScalarType, parse } from 'graphql';
import type { Logger } from 'pino';
import { graphqlHttpServer, serveGraphql, typeDefs } from '../src/app.js';
import { createMetrics } from '../src/composition-root.js';
import type { Config } from '../src/config.js';
import { createTokenVerifier, type Viewer } from '../src/graphql/auth.js';
import { createFormatError } from '../src/graphql/errors.js';
import { limitProtections } from '../src/graphql/limits.js';
import { DateTimeScalar } from '../src/graphql/scalars.js';
import type { GraphqlCounts } from '../src/observability/metrics.js';

/**
 * A query the floor answers, and the `data` the real server answered it with. Default
 * resolvers serve it, so it must not use aliases, and must select `__typename` under
 * every field of an abstract type (such as `node`).
 */
export interface RecordedResponse {
  readonly query: string;
  readonly variables?: Record<string, unknown>;
  readonly data: Record<string, unknown>;
}

/** The code of the floor's refusal of a query it holds no response for. */
export const NOT_RECORDED = 'BAD_REQUEST';

/** A running floor server. */
export interface Floor {
  readonly httpServer: Server;
  /** Listen on `port` (0: any) at `host`; resolves to the bound port. */
  listen(port: number, host: string): Promise<number>;
  close(): Promise<void>;
}

/** One request's context: the viewer, and no store round trips. */
interface FloorContext extends BaseContext, GraphqlCounts {
  readonly viewer: Viewer | null;
}

const noRoundTrips = () => 0;

/** How a request is matched to a recorded response: its text and its variables. */
function keyOf(query: string | undefined, variables: Record<string, unknown> | undefined): string {
  return `${query}\u0000${variables === undefined ? '{}' : JSON.stringify(variables)}`;
}

/**
 * The root value that gives `recorded` when served by default resolvers: the data
 * executed once over the schema with a DateTime scalar that turns the answered text back
 * into a `Date`, so that serving it runs the product's DateTime serialisation as the real
 * server's does; then copied into ordinary objects (graphql-js builds prototype-less
 * ones, which V8 keeps as slower dictionaries).
 */
function rootFrom(recorded: RecordedResponse): Record<string, unknown> {
  const reviving = makeExecutableSchema({
    typeDefs,
    resolvers: { DateTime: new GraphQLScalarType({ name: 'DateTime', serialize: (value) => new Date(value as string) }) },
  });
  const result = execute({ schema: reviving, document: parse(recorded.query), rootValue: recorded.data, variableValues: recorded.variables });
  if ('then' in result || result.errors?.length || !result.data) {
    // An abstract type (Node) is resolved from `__typename`: a query whose response has none there cannot be served.
    const why = 'then' in result ? 'asynchronous' : JSON.stringify(result.errors?.map((e) => e.message));
    throw new Error(`the floor cannot serve the response to ${recorded.query.slice(0, 80)}: ${why}`);
  }
  return structuredClone(result.data) as Record<string, unknown>;
}

/** Start the floor over `responses`, configured by `config` as the application is. */
export async function createFloor(config: Config, responses: readonly RecordedResponse[], logger: Logger): Promise<Floor> {
  const roots = new Map(responses.map((r) => [keyOf(r.query, r.variables), rootFrom(r)]));
  // `source`, not `request.query`: a request the HTTP handler made a persisted query has no text of its own.
  const rootOf = (requestContext: { source?: string; request: GraphQLRequest }) => roots.get(keyOf(requestContext.source, requestContext.request.variables));
  // One listener and one settled promise for every request, as the request plugin has.
  const refusal: GraphQLRequestListener<FloorContext> = {
    async didResolveOperation(requestContext) {
      if (rootOf(requestContext) === undefined) {
        throw new GraphQLError(`the Apollo floor answers only the ${roots.size} queries it was given a response for, and this is not one of them`, {
          extensions: { code: NOT_RECORDED, http: { status: 400 } },
        });
      }
    },
  };
  const refusing = Promise.resolve(refusal);
  const plugin: ApolloServerPlugin<FloorContext> = { requestDidStart: () => refusing };
  const tokens = createTokenVerifier(config.auth, { maxAgeSeconds: config.maxTokenAgeSeconds, clockSkewMs: config.cluster.clockSkewMs }, { logger });
  const httpServer = graphqlHttpServer(config);
  const apollo = await serveGraphql<FloorContext>(config, httpServer, {
    logger,
    // The product's schema and scalar, and nothing else: every other field is a default resolver.
    schema: makeExecutableSchema({ typeDefs, resolvers: { DateTime: DateTimeScalar } }),
    limits: limitProtections(config.limits, { hideSuggestions: !config.introspection }),
    formatError: createFormatError(logger),
    metrics: createMetrics(config),
    plugins: [plugin],
    rootValue: rootOf,
    readiness: async () => null,
    contextFor: async (req) => {
      const header = req.headers.authorization;
      const viewer = header === undefined ? null : await tokens.viewer(header);
      return { viewer, startedAt: performance.now(), storeRoundTrips: noRoundTrips, storeStatements: noRoundTrips };
    },
  });
  return {
    httpServer,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        httpServer.once('error', reject);
        httpServer.listen(port, host, () => resolve((httpServer.address() as AddressInfo).port));
      });
    },
    close: () => apollo.stop(),
  };
}
