/**
 * A span per store round trip, as a `StoreObserver`: the same spans on Cassandra and on
 * the embedded store (which no instrumentation sees). Each names its table, statement
 * kind and statement count, never a key or a value.
 */
import { SpanKind, SpanStatusCode, context, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import type { StoreOperation } from '../../store/store-decorator.js';
import type { StoreObserver } from '../../store/store-observer.js';

/** Which database a store is, for its spans' `db.*` attributes. */
export interface StoreTarget {
  /** `db.system.name`: `cassandra` or `sqlite`. */
  readonly system: 'cassandra' | 'sqlite';
  /** `db.namespace`: the keyspace, or the SQLite file. */
  readonly namespace: string;
}

/** The CQL statement kind each port operation sends (`db.operation.name`). */
export const STATEMENT_KINDS: Readonly<Record<StoreOperation, string>> = Object.freeze({
  get: 'SELECT',
  getMany: 'SELECT',
  getInPartition: 'SELECT',
  slice: 'SELECT',
  scan: 'SELECT',
  readCells: 'SELECT',
  ping: 'SELECT',
  checkSchema: 'SELECT',
  upsert: 'INSERT',
  insertIfNotExists: 'INSERT',
  increment: 'UPDATE',
  delete: 'DELETE',
  deleteRange: 'DELETE',
  deleteIf: 'DELETE',
  batch: 'BATCH',
});

/** A call's span and the context to run it in (the span active), or, outside any trace, a context that traces nothing. */
interface CallState {
  readonly span: Span | null;
  readonly context: Context;
}

/**
 * Spans for the store `ObservedStore` wraps (the process's, under every request's
 * `CountingStore`). Only calls made inside a trace (a request's) get one; the background
 * jobs' calls (heartbeats, live polls, the applier) run with tracing suppressed, so
 * neither this nor the Cassandra driver's instrumentation makes a one-span trace of each.
 */
export function storeSpans(tracer: Tracer, target: StoreTarget): StoreObserver<CallState | undefined> {
  return {
    started(call) {
      const active = context.active();
      if (!trace.getSpan(active)) return { span: null, context: suppressTracing(active) };
      const kind = STATEMENT_KINDS[call.operation];
      const attributes: Attributes = {
        'db.system.name': target.system,
        // The name before semantic conventions 1.26, which many backends still read.
        'db.system': target.system,
        'db.namespace': target.namespace,
        'db.operation.name': kind,
        'store.operation': call.operation,
      };
      if (call.table !== null) attributes['db.collection.name'] = call.table;
      if (call.tables.length > 1) attributes['store.tables'] = [...call.tables];
      const span = tracer.startSpan(call.table === null ? kind : `${kind} ${call.table}`, { kind: SpanKind.CLIENT, attributes }, active);
      return { span, context: trace.setSpan(active, span) };
    },
    // `state` is undefined only if `started` threw (ObservedStore then carries on without it).
    within(state, run) {
      return state ? context.with(state.context, run) : run();
    },
    finished(trip, state) {
      const span = state?.span;
      if (!span) return;
      span.setAttribute('store.statements', trip.statements);
      if (trip.lwt !== null) span.setAttribute('store.lwt.outcome', trip.lwt);
      if (trip.errorKind !== null) {
        // The kind only (unavailable, timeout, ...): an error's message may quote a key.
        span.setAttribute('error.type', trip.errorKind);
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    },
  };
}
