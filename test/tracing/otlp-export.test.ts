/**
 * Tracing from the environment, end to end: the real entry point (`src/main.ts`) in a
 * child process, an OTLP/HTTP receiver (JSON encoding) on a loopback port in this one.
 * With `OTEL_EXPORTER_OTLP_ENDPOINT` set, a request's spans arrive there, named by
 * `OTEL_SERVICE_NAME`, and the request's log line carries their trace id; unset, no log
 * line has a trace id (tracing-off.test.ts proves no tracer is registered then).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startChildServer, type ChildServer } from '../support/child-server.js';

/** An OTLP/JSON span as the exporter sends it (the fields read here). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Array<{ key: string; value: { stringValue?: string; intValue?: string | number } }>;
}
interface OtlpExport {
  resourceSpans: Array<{ resource: { attributes: OtlpSpan['attributes'] }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
}

const exports: OtlpExport[] = [];
let receiver: Server;
let endpoint: string;
let dir: string;
let server: ChildServer | undefined;

function received(): OtlpSpan[] {
  return exports.flatMap((e) => e.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));
}
function attribute(attributes: OtlpSpan['attributes'], key: string): string | number | undefined {
  const value = attributes.find((a) => a.key === key)?.value;
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : Number(value.intValue));
}
/** The child's JSON log lines. */
function logLines(child: ChildServer): Array<Record<string, unknown>> {
  return child
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The child's request log line for /graphql (written as the response finishes, just after the client has it). */
async function requestLine(child: ChildServer): Promise<Record<string, unknown> | undefined> {
  for (let i = 0; i < 100 && !logLines(child).some((l) => l.path === '/graphql'); i++) await sleep(20);
  return logLines(child).find((l) => l.path === '/graphql');
}

const PROBE = `query Probe($username: String!) { userByUsername(username: $username) { id } }`;

async function probe(child: ChildServer): Promise<void> {
  const res = await fetch(child.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: PROBE, variables: { username: 'nobody_zz_otlp' } }) });
  expect(((await res.json()) as { data: unknown }).data).toEqual({ userByUsername: null });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'otlp-'));
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.url === '/v1/traces') exports.push(JSON.parse(body) as OtlpExport);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});

afterEach(async () => {
  server?.process.kill('SIGTERM');
  await server?.exited;
  server = undefined;
  exports.length = 0;
});

afterAll(async () => {
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

describe('tracing from the environment (the real entry point)', () => {
  it('exports the spans of a request to OTEL_EXPORTER_OTLP_ENDPOINT, named by OTEL_SERVICE_NAME, and logs their trace id', async () => {
    server = await startChildServer(join(dir, 'on.db'), {
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      OTEL_SERVICE_NAME: 'relay-under-test',
      LOG_LEVEL: 'debug',
    });
    await probe(server);
    for (let i = 0; i < 100 && !received().some((s) => s.name === 'POST /graphql'); i++) await sleep(50);

    const http = received().find((s) => s.name === 'POST /graphql');
    expect(http).toBeDefined();
    const trace = received().filter((s) => s.traceId === http!.traceId);
    const operation = trace.find((s) => s.parentSpanId === http!.spanId);
    expect(operation?.name).toBe('query Probe');
    const store = trace.filter((s) => s.parentSpanId === operation!.spanId);
    expect(store.map((s) => s.name)).toEqual(['SELECT users_by_username']);
    expect(attribute(store[0]!.attributes, 'db.system.name')).toBe('sqlite');
    expect(attribute(store[0]!.attributes, 'store.statements')).toBe(1);
    expect(exports.every((e) => e.resourceSpans.every((r) => attribute(r.resource.attributes, 'service.name') === 'relay-under-test'))).toBe(true);
    // Only the request's spans: the probes that found the server ready and the background jobs made none.
    expect(trace).toHaveLength(received().length);
    expect(JSON.stringify(exports)).not.toContain('nobody_zz_otlp');

    const line = await requestLine(server);
    expect(line).toMatchObject({ status: 200, trace_id: http!.traceId, span_id: http!.spanId });
  });

  it('traces nothing with OTEL_EXPORTER_OTLP_ENDPOINT unset: no log line has a trace id', async () => {
    server = await startChildServer(join(dir, 'off.db'), { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '', LOG_LEVEL: 'debug' });
    await probe(server);
    const line = await requestLine(server);
    expect(line).toMatchObject({ method: 'POST', status: 200 });
    expect(line).not.toHaveProperty('trace_id');
  });
});
