/**
 * Tracing on Cassandra (runs where a Cassandra is reachable, else is reported skipped
 * with the reason): the store spans say `cassandra`, and the driver's own spans
 * (`@opentelemetry/instrumentation-cassandra-driver`) nest under them, carrying the
 * keyspace and no statement text or value.
 */
import { SpanKind } from '@opentelemetry/api';
import { tracing as sdk } from '@opentelemetry/sdk-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTracing, type Tracing } from '../../src/observability/tracing/tracing.js';
import { STORES, describeEachStore } from '../support/stores.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const CASSANDRA = STORES.filter((target) => target.name === 'Cassandra');

describeEachStore(
  'tracing',
  (target) => {
    const exporter = new sdk.InMemorySpanExporter();
    let tracing: Tracing;
    let server: TestServer;
    let admin: string;

    beforeAll(async () => {
      tracing = startTracing({ spanProcessors: [new sdk.SimpleSpanProcessor(exporter)] });
      server = await startTestServer({ target, tracing, env: { STORE: 'cassandra', LIST_APPLIER: 'false' } });
      admin = await server.token('root', { admin: true });
    });

    afterAll(async () => {
      await server?.close();
      await tracing?.shutdown();
    });

    it("nests the driver's spans under the store round trips, and no span holds a value", async () => {
      const input = { username: 'zq_cassandra_tracer', displayName: 'Cornelius Vantablack', location: 'Ultima Thule' };
      const created = await server.gql(`mutation CreateTraced($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`, { input }, admin);
      expect(created.errors).toBeUndefined();
      exporter.reset();
      const found = await server.gql(`query FindTraced($u: String!) { userByUsername(username: $u) { displayName } }`, { u: input.username }, admin);
      expect(found.data).toEqual({ userByUsername: { displayName: input.displayName } });
      for (let i = 0; i < 100 && !exporter.getFinishedSpans().some((s) => s.kind === SpanKind.SERVER); i++) await new Promise((r) => setTimeout(r, 10));

      const spans = exporter.getFinishedSpans();
      const operation = spans.find((s) => s.name === 'query FindTraced');
      expect(operation).toBeDefined();
      const store = spans.filter((s) => s.attributes['store.operation'] !== undefined);
      expect(store.length).toBe(found.extensions!.storeRoundTrips);
      const storeIds = new Set(store.map((s) => s.spanContext().spanId));
      for (const span of store) {
        expect(span.parentSpanContext?.spanId).toBe(operation!.spanContext().spanId);
        expect(span.attributes['db.system.name']).toBe('cassandra');
      }
      const driver = spans.filter((s) => s.name.startsWith('cassandra-driver.'));
      expect(driver.length).toBeGreaterThanOrEqual(store.length);
      for (const span of driver) {
        expect(storeIds.has(span.parentSpanContext?.spanId ?? '')).toBe(true);
        expect(span.attributes['db.system.name']).toBe('cassandra');
        expect(span.attributes['db.query.text']).toBeUndefined();
      }
      const texts = spans.flatMap((s) => [s.name, ...Object.values(s.attributes).map(String)]).join('\n').toLowerCase();
      for (const value of Object.values(input)) expect(texts).not.toContain(value.toLowerCase());
    });
  },
  CASSANDRA,
);
