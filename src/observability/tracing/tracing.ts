/**
 * OpenTelemetry tracing, loaded only when `tracing-switch.ts` decides the process traces.
 *
 * The SDK is `NodeSDK`, for traces only (metrics are Prometheus', logs go to stdout): it
 * reads the standard variables itself (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
 * `OTEL_TRACES_EXPORTER`, `OTEL_EXPORTER_OTLP_*`, `OTEL_TRACES_SAMPLER`, `OTEL_PROPAGATORS`,
 * `OTEL_BSP_*`, ...). Spans:
 * - the HTTP request, from `@opentelemetry/instrumentation-http` (it also continues a
 *   caller's trace from its `traceparent` header);
 * - the GraphQL operation, from `traceOperation` around the server's execution hook:
 *   `@opentelemetry/instrumentation-graphql` wraps graphql-js's `execute`, which never
 *   runs here (graphql-jit executes), and its parse span would carry the document text,
 *   inline literals and all;
 * - each store round trip, from `traceStore` over the store port, on both stores; on
 *   Cassandra `@opentelemetry/instrumentation-cassandra-driver` adds a span per
 *   statement under it.
 * No span carries a variable, an argument or a stored value: operation names and types,
 * tables, statement kinds and counts only.
 */
import { createRequire } from 'node:module';
import type { IncomingMessage } from 'node:http';
import { SpanKind, SpanStatusCode, context, trace, type Attributes, type Span } from '@opentelemetry/api';
import { CassandraDriverInstrumentation } from '@opentelemetry/instrumentation-cassandra-driver';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { NodeSDK, resources, type tracing as sdkTracing } from '@opentelemetry/sdk-node';
import type { BaseContext, GraphQLRequestContextResponseForOperation, GraphQLResponse } from '@apollo/server';
import type { StoreObserver } from '../../store/store-observer.js';
import { storeSpans, type StoreTarget } from './store-spans.js';

/** The instrumentation scope of the spans this server makes itself. */
export const TRACER_NAME = 'cassandra-relay-graphql';

/** Apollo's `responseForOperation` hook, as the server's request plugin defines it. */
export type OperationResponder<C extends BaseContext> = (requestContext: GraphQLRequestContextResponseForOperation<C>) => Promise<GraphQLResponse | null>;

/** What the server asks of tracing once it is on. */
export interface Tracing {
  /** Fields for every log line (a pino `mixin`): the active span's `trace_id`, `span_id`, `trace_flags`. */
  logFields(): Record<string, string | undefined>;
  /** Run each operation `responder` executes in a span of its own, named by its type and name. */
  traceOperation<C extends BaseContext>(responder: OperationResponder<C>): OperationResponder<C>;
  /** An observer for `ObservedStore`: a span around each round trip made inside a trace. */
  storeObserver(target: StoreTarget): StoreObserver<any>;
  /** Export the spans still buffered, then stop. */
  shutdown(): Promise<void>;
}

/** Paths polled every few seconds (probes, the metrics scrape): a trace each would bury the requests. */
const UNTRACED_PATHS = new Set(['/healthz', '/livez', '/readyz', '/metrics']);

/** The routes a request span is named after (any other path is not a route: its name stays the method). */
const ROUTES = new Set(['/graphql', '/healthz', '/livez', '/readyz', '/metrics']);

function pathOf(url: string | undefined): string {
  const raw = url ?? '/';
  const question = raw.indexOf('?');
  return question === -1 ? raw : raw.slice(0, question);
}

/**
 * A GET request's query string carries the document and its variables: the span keeps
 * only the parameter names (and `operationName`, which names no value).
 */
export function redactedQuery(search: string): string {
  const params = new URLSearchParams(search);
  for (const [name] of params) if (name !== 'operationName') params.set(name, 'REDACTED');
  return params.toString();
}

/** GraphQL error codes of a response (codes only: messages may quote input). */
function errorCodes(response: GraphQLResponse | null): string[] {
  if (response?.body.kind !== 'single') return [];
  const errors = response.body.singleResult.errors ?? [];
  return errors.map((e) => String(e.extensions?.code ?? 'INTERNAL_SERVER_ERROR'));
}

/** End an operation span with what the response says: its error codes, an error status for a server fault. */
function endOperation(span: Span, response: GraphQLResponse | null): void {
  const codes = errorCodes(response);
  if (codes.length > 0) {
    span.setAttribute('graphql.error.codes', [...new Set(codes)]);
    if (codes.includes('INTERNAL_SERVER_ERROR')) span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/** Options for tests: where spans go instead of the exporters the environment names. */
export interface TracingOptions {
  readonly spanProcessors?: sdkTracing.SpanProcessor[];
}

/**
 * Start the SDK, register the HTTP and Cassandra instrumentations and patch their
 * modules. Must run before the server's modules are imported (`main.ts` imports them
 * after it); `startTracingFromEnv` is the way in.
 */
export function startTracing(options: TracingOptions = {}): Tracing {
  const sdk = new NodeSDK({
    // The product's name unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names it (detected resources win).
    resource: resources.resourceFromAttributes({ 'service.name': TRACER_NAME }),
    spanProcessors: options.spanProcessors,
    // Traces only: no metric readers or log processors from the environment's defaults.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has(pathOf(req.url)),
        // The server calls no HTTP service; the exporter's own requests must not be traced.
        disableOutgoingRequestInstrumentation: true,
        startIncomingSpanHook(req): Attributes {
          const url = req.url ?? '/';
          const question = url.indexOf('?');
          return question === -1 ? {} : { 'url.query': redactedQuery(url.slice(question + 1)) };
        },
        requestHook(span, req) {
          const path = pathOf((req as IncomingMessage).url);
          if (!ROUTES.has(path)) return;
          span.setAttribute('http.route', path);
          span.updateName(`${(req as IncomingMessage).method ?? 'GET'} ${path}`);
        },
      }),
      // The driver's spans carry no statement text (`enhancedDatabaseReporting` stays off).
      new CassandraDriverInstrumentation(),
    ],
  });
  sdk.start();
  // The instrumentations patch a module when it is `require`d; this ESM server `import`s
  // them, which that hook does not see. Requiring them once here, before the server's
  // modules load, patches the objects those imports will get (one module cache):
  // `http.Server.prototype.emit` and `cassandra-driver`'s `Client.prototype`. No loader
  // hook (`--import @opentelemetry/instrumentation/hook.mjs`) is needed for these two.
  const require = createRequire(import.meta.url);
  require('http');
  require('cassandra-driver');

  const tracer = trace.getTracer(TRACER_NAME);
  return {
    logFields() {
      const span = trace.getSpan(context.active());
      // A new object each time: pino merges the line's own fields into it.
      if (!span) return {};
      const { traceId, spanId, traceFlags } = span.spanContext();
      return { trace_id: traceId, span_id: spanId, trace_flags: traceFlags.toString(16).padStart(2, '0') };
    },
    traceOperation<C extends BaseContext>(responder: OperationResponder<C>): OperationResponder<C> {
      return (requestContext) => {
        const type = requestContext.operation?.operation ?? 'query';
        const name = requestContext.operationName;
        const attributes: Attributes = { 'graphql.operation.type': type };
        if (name) attributes['graphql.operation.name'] = name;
        const span = tracer.startSpan(name ? `${type} ${name}` : type, { kind: SpanKind.INTERNAL, attributes });
        let pending: Promise<GraphQLResponse | null>;
        try {
          pending = context.with(trace.setSpan(context.active(), span), responder, undefined, requestContext);
        } catch (err) {
          pending = Promise.reject(err);
        }
        return pending.then(
          (response) => {
            endOperation(span, response);
            return response;
          },
          (err: unknown) => {
            // The error's class only: its message may quote an argument.
            span.setAttribute('error.type', err instanceof Error ? err.name : 'unknown');
            span.setStatus({ code: SpanStatusCode.ERROR });
            span.end();
            throw err;
          },
        );
      };
    },
    storeObserver: (target) => storeSpans(tracer, target),
    shutdown: () => sdk.shutdown(),
  };
}
