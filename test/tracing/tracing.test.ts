/**
 * Tracing, on: real GraphQL requests to a real server (in-memory SQLite), their spans
 * caught by an in-memory exporter. The tree is HTTP request > GraphQL operation > one
 * span per store round trip; no attribute carries a variable or a stored value; log
 * lines carry the request's trace id.
 */
import { Writable } from 'node:stream';
import { SpanKind } from '@opentelemetry/api';
import { tracing as sdk } from '@opentelemetry/sdk-node';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ALL_TABLES } from '../../src/composition-root.js';
import { startTracing, type Tracing } from '../../src/observability/tracing/tracing.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

type Span = sdk.ReadableSpan;

/** Values this file writes and asks for: none may appear in any span. */
const SECRET = { username: 'zq_tracer_zebulon', displayName: 'Zebulon Quixotic', location: 'Xanadu Quux', lastName: 'Quillfeather' };

const exporter = new sdk.InMemorySpanExporter();
let tracing: Tracing;
let server: TestServer;
let admin: string;
const logLines: Array<Record<string, unknown>> = [];

function spanId(span: Span): string {
  return span.spanContext().spanId;
}
function parentId(span: Span): string | undefined {
  return span.parentSpanContext?.spanId;
}
function childrenOf(parent: Span, spans: readonly Span[]): Span[] {
  return spans.filter((s) => parentId(s) === spanId(parent));
}
/** The one HTTP server span of the spans caught so far, and its whole trace. */
function theRequest(): { http: Span; trace: Span[] } {
  const spans = exporter.getFinishedSpans();
  const servers = spans.filter((s) => s.kind === SpanKind.SERVER);
  expect(servers).toHaveLength(1);
  const http = servers[0]!;
  return { http, trace: spans.filter((s) => s.spanContext().traceId === http.spanContext().traceId) };
}

/** POST one operation with an operation name (the HTTP span ends as the response is sent). */
async function post(query: string, variables: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}`, ...headers },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: any; errors?: any[]; extensions: { storeRoundTrips: number; storeStatements: number } };
  // The server span ends on the response's 'finish', just after the client has the body.
  await waitFor(() => exporter.getFinishedSpans().some((s) => s.kind === SpanKind.SERVER));
  return body;
}

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}

const CREATE = `mutation CreateTracedUser($input: CreateUserInput!) { createUser(input: $input) { user { id username displayName location } } }`;
const FIND = `query FindTracedUser($username: String!) { userByUsername(username: $username) { id displayName location } }`;

beforeAll(async () => {
  tracing = startTracing({ spanProcessors: [new sdk.SimpleSpanProcessor(exporter)] });
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const logger = pino({ level: 'debug', mixin: tracing.logFields }, stream);
  server = await startTestServer({ logger, tracing, env: { LIST_APPLIER: 'false' } });
  admin = await server.token('root', { admin: true });
  const created = await post(CREATE, { input: SECRET });
  expect(created.errors).toBeUndefined();
});

afterAll(async () => {
  await server?.close();
  await tracing?.shutdown();
});

beforeEach(() => {
  exporter.reset();
  logLines.length = 0;
});

describe('tracing, on', () => {
  it('nests a query: HTTP request > GraphQL operation > one span per store round trip', async () => {
    const body = await post(FIND, { username: SECRET.username });
    expect(body.data.userByUsername.displayName).toBe(SECRET.displayName);
    const { http, trace } = theRequest();

    expect(http.name).toBe('POST /graphql');
    expect(http.parentSpanContext).toBeUndefined();
    expect(http.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/graphql', 'url.path': '/graphql', 'http.response.status_code': 200 });

    const operations = childrenOf(http, trace);
    expect(operations.map((s) => ({ name: s.name, kind: s.kind, attributes: s.attributes }))).toEqual([
      {
        name: 'query FindTracedUser',
        kind: SpanKind.INTERNAL,
        attributes: { 'graphql.operation.type': 'query', 'graphql.operation.name': 'FindTracedUser' },
      },
    ]);

    // Every store span hangs under the operation; as many as the request's round trips,
    // their statements adding up to the request's.
    const store = trace.filter((s) => s.kind === SpanKind.CLIENT);
    expect(store.length).toBe(body.extensions.storeRoundTrips);
    expect(store.length).toBeGreaterThan(0);
    expect(store.every((s) => parentId(s) === spanId(operations[0]!))).toBe(true);
    expect(store.reduce((n, s) => n + (s.attributes['store.statements'] as number), 0)).toBe(body.extensions.storeStatements);
    expect(trace).toHaveLength(2 + store.length);
    // userByUsername: the username index, then the user's row, each through its loader.
    expect(store.map((s) => [s.attributes['store.operation'], s.attributes['db.collection.name'], s.attributes['store.statements']])).toEqual([
      ['getMany', 'users_by_username', 1],
      ['getMany', 'users', 1],
    ]);

    const tables = new Set(ALL_TABLES.map((t) => t.name));
    for (const span of store) {
      expect(span.attributes).toMatchObject({ 'db.system.name': 'sqlite', 'db.system': 'sqlite', 'db.namespace': ':memory:', 'db.operation.name': 'SELECT' });
      expect(tables.has(span.attributes['db.collection.name'] as string), String(span.attributes['db.collection.name'])).toBe(true);
      expect(span.name).toBe(`SELECT ${span.attributes['db.collection.name']}`);
      expect(['get', 'getMany', 'slice']).toContain(span.attributes['store.operation']);
      expect(span.attributes['store.statements']).toBeGreaterThanOrEqual(1);
      // A store span starts and ends inside its operation.
      expect(span.startTime[0] * 1e9 + span.startTime[1]).toBeGreaterThanOrEqual(operations[0]!.startTime[0] * 1e9 + operations[0]!.startTime[1]);
    }
  });

  it('names the statement kinds of a mutation, and never its input or the stored values', async () => {
    const input = { username: 'zq_second_tracer', displayName: 'Ophelia Wrenfield', location: 'Atlantis Vale', lastName: 'Thistlewood' };
    const body = await post(CREATE, { input });
    expect(body.data.createUser.user.displayName).toBe(input.displayName);
    const { http, trace } = theRequest();
    const [operation] = childrenOf(http, trace);
    expect(operation!.name).toBe('mutation CreateTracedUser');
    expect(operation!.attributes['graphql.operation.type']).toBe('mutation');

    const store = trace.filter((s) => s.kind === SpanKind.CLIENT);
    expect(store.length).toBe(body.extensions.storeRoundTrips);
    // The username is claimed by a lightweight transaction; the user's rows go in one logged batch.
    expect(store.map((s) => s.attributes)).toContainEqual(
      expect.objectContaining({
        'db.operation.name': 'INSERT',
        'store.operation': 'insertIfNotExists',
        'db.collection.name': 'users_by_username',
        'store.lwt.outcome': 'applied',
        'store.statements': 1,
      }),
    );
    const batch = store.find((s) => s.attributes['store.operation'] === 'batch');
    expect(batch?.name).toBe('BATCH users');
    expect(batch?.attributes).toMatchObject({ 'db.operation.name': 'BATCH', 'db.collection.name': 'users' });
    expect(batch?.attributes['store.tables']).toContain('users');
    for (const span of store) expect(['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'BATCH']).toContain(span.attributes['db.operation.name']);
    expectNoValues(trace, [...Object.values(input), ...Object.values(SECRET)]);
  });

  it('puts no variable or stored value in any span, nor the query string of a GET request', async () => {
    const search = new URLSearchParams({ query: FIND, variables: JSON.stringify({ username: SECRET.username }), operationName: 'FindTracedUser' });
    const res = await fetch(`${server.url}?${search}`, { headers: { authorization: `Bearer ${admin}`, 'apollo-require-preflight': 'true' } });
    expect(((await res.json()) as any).data.userByUsername.location).toBe(SECRET.location);
    await waitFor(() => exporter.getFinishedSpans().some((s) => s.kind === SpanKind.SERVER));
    const { http, trace } = theRequest();
    expect(http.name).toBe('GET /graphql');
    expect(http.attributes['url.query']).toBe('query=REDACTED&variables=REDACTED&operationName=FindTracedUser');
    expect(trace.filter((s) => s.kind === SpanKind.CLIENT).length).toBeGreaterThan(0);
    expectNoValues(trace, Object.values(SECRET));
  });

  it('records the error codes of an operation that fails, not its messages', async () => {
    const body = await post(`query BadId($id: ID!) { node(id: $id) { id } }`, { id: 'not-a-global-id-Zebulon' });
    expect(body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const { http, trace } = theRequest();
    const [operation] = childrenOf(http, trace);
    expect(operation!.attributes['graphql.error.codes']).toEqual(['BAD_USER_INPUT']);
    expectNoValues(trace, ['Zebulon']);
  });

  it("continues a caller's trace from its traceparent header", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    await post(FIND, { username: SECRET.username }, { traceparent: `00-${traceId}-${callerSpan}-01` });
    const { http } = theRequest();
    expect(http.spanContext().traceId).toBe(traceId);
    expect(parentId(http)).toBe(callerSpan);
  });

  it("writes the request's trace id and its span ids into the log lines", async () => {
    await post(FIND, { username: SECRET.username });
    const { http } = theRequest();
    const line = logLines.find((l) => l.path === '/graphql');
    expect(line).toMatchObject({ method: 'POST', status: 200, trace_id: http.spanContext().traceId, span_id: spanId(http), trace_flags: '01' });
    // A line logged outside any request has no trace fields.
    server.app.services.logger.info('outside a request');
    const outside = logLines.find((l) => l.msg === 'outside a request');
    expect(outside).toBeDefined();
    expect(outside).not.toHaveProperty('trace_id');
  });

  it('traces neither the probes nor store calls made outside a request', async () => {
    expect((await fetch(server.url.replace('/graphql', '/healthz'))).status).toBe(200);
    expect((await fetch(server.url.replace('/graphql', '/readyz'))).status).toBe(200);
    await server.app.store.ping();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});

/** No attribute of any span, and no span name, contains any of `values`. */
function expectNoValues(spans: readonly Span[], values: readonly string[]): void {
  const texts = spans.flatMap((s) => [s.name, ...Object.values(s.attributes).map((v) => (Array.isArray(v) ? v.join(' ') : String(v)))]);
  expect(texts.length).toBeGreaterThan(spans.length);
  for (const value of values) {
    const hits = texts.filter((t) => t.toLowerCase().includes(value.toLowerCase()));
    expect(hits, `"${value}" appears in a span`).toEqual([]);
  }
}
