/**
 * A span per store round trip, over the store port: the same spans on Cassandra and on
 * the embedded store (which no instrumentation sees). Each names its table, statement
 * kind and statement count, never a key or a value.
 */
import { SpanKind, SpanStatusCode, context, trace, type Attributes, type Tracer } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import type { Store } from '../store/port.js';
import { activeTally, type StatementTally } from '../store/statements.js';
import { StoreDecorator, type StoreCall, type StoreOperation } from '../store/store-decorator.js';

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
  slice: 'SELECT',
  scan: 'SELECT',
  readCells: 'SELECT',
  ping: 'SELECT',
  upsert: 'INSERT',
  insertIfNotExists: 'INSERT',
  increment: 'UPDATE',
  delete: 'DELETE',
  deleteRange: 'DELETE',
  deleteIf: 'DELETE',
  batch: 'BATCH',
});

/**
 * One call's statement count, passed on at once to the tally it was started under (the
 * request's `CountingStore`), so the request's own count stays exact.
 */
class CallTally implements StatementTally {
  private own = 0;

  constructor(private readonly outer: StatementTally | undefined) {}

  get statements(): number {
    return this.own;
  }

  set statements(value: number) {
    if (this.outer) this.outer.statements += value - this.own;
    this.own = value;
  }
}

/**
 * Wraps the process's store once, under every request's `CountingStore`. Only calls made
 * inside a trace (a request's) get a span; the background jobs' calls (heartbeats, live
 * polls, the applier) run with tracing suppressed, so neither this nor the Cassandra
 * driver's instrumentation makes a one-span trace of each.
 */
export class TracedStore extends StoreDecorator {
  /** The tally `statementTally` just made for the call `around` is about to run (handed over synchronously). */
  private nextTally: CallTally | undefined;

  constructor(
    inner: Store,
    private readonly tracer: Tracer,
    private readonly target: StoreTarget,
  ) {
    super(inner);
  }

  protected override statementTally(): StatementTally | undefined {
    const outer = activeTally();
    this.nextTally = trace.getSpan(context.active()) ? new CallTally(outer) : undefined;
    return this.nextTally ?? outer;
  }

  protected around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    const tally = this.nextTally;
    this.nextTally = undefined;
    const active = context.active();
    if (!tally) return context.with(suppressTracing(active), run);
    const kind = STATEMENT_KINDS[call.operation];
    const attributes: Attributes = {
      'db.system.name': this.target.system,
      // The name before semantic conventions 1.26, which many backends still read.
      'db.system': this.target.system,
      'db.namespace': this.target.namespace,
      'db.operation.name': kind,
      'store.operation': call.operation,
    };
    if (call.table !== null) attributes['db.collection.name'] = call.table;
    if (call.tables.length > 1) attributes['store.tables'] = [...call.tables];
    const span = this.tracer.startSpan(call.table === null ? kind : `${kind} ${call.table}`, { kind: SpanKind.CLIENT, attributes }, active);
    let pending: Promise<T>;
    try {
      pending = context.with(trace.setSpan(active, span), run);
    } catch (err) {
      pending = Promise.reject(err);
    }
    return pending.then(
      (value) => {
        span.setAttribute('store.statements', tally.statements);
        span.end();
        return value;
      },
      (err: unknown) => {
        span.setAttribute('store.statements', tally.statements);
        // The error's class only (StoreUnavailableError, ...): a message may quote a key.
        span.setAttribute('error.type', err instanceof Error ? err.name : 'unknown');
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
        throw err;
      },
    );
  }
}
