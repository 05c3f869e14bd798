/**
 * Wrap a store to observe or alter each call: round-trip counting and, in tests,
 * fault injection both extend `StoreDecorator` and override `around`.
 */
import type {
  CellRead,
  ClusteringRange,
  ConditionalResult,
  DeleteOptions,
  Mutation,
  ScanPage,
  SliceQuery,
  Store,
  WriteOptions,
} from './port.js';
import { DeadlineExceededError, RequestAbortedError, type RequestDeadline } from './deadline.js';
import type { CallPermits } from './call-permits.js';
import { activeTally, withTally, type StatementTally } from './statements.js';
import type { Row, TableSpec } from './table.js';

/** Names of the store operations that reach the database. */
export type StoreOperation = Exclude<keyof Store, 'close' | 'ensureTables'>;

/** What a decorator learns about each call. */
export interface StoreCall {
  readonly operation: StoreOperation;
  /** The table addressed (the first one, for a batch). */
  readonly table: string | null;
  /** For a batch, every table it writes. */
  readonly tables: readonly string[];
}

/** Base class: delegates every operation through `around`. */
export abstract class StoreDecorator implements Store {
  constructor(protected readonly inner: Store) {}

  /**
   * Runs one call; subclasses add behaviour before or after `run()`. `tally` is what
   * `statementTally()` gave for this call (the call's statements count into it).
   */
  protected abstract around<T>(call: StoreCall, run: () => Promise<T>, tally: StatementTally | undefined): Promise<T>;

  /**
   * The tally the statements of calls through this decorator count into, taken once per
   * call (CountingStore's own; a StoreObserver's, one per call).
   */
  protected statementTally(): StatementTally | undefined {
    return activeTally();
  }

  private call<T>(operation: StoreOperation, table: TableSpec | null, run: () => Promise<T>): Promise<T> {
    const name = table?.name ?? null;
    return this.dispatch({ operation, table: name, tables: name ? [name] : [] }, run);
  }

  private dispatch<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    // Taken now, restored whenever `around` starts the inner call (even after an await).
    const tally = this.statementTally();
    return this.around(call, () => withTally(tally, run), tally);
  }

  ensureTables(tables: readonly TableSpec[]): Promise<void> {
    return this.inner.ensureTables(tables);
  }
  get(table: TableSpec, key: Row): Promise<Row | null> {
    return this.call('get', table, () => this.inner.get(table, key));
  }
  getMany(table: TableSpec, keys: readonly Row[]): Promise<Array<Row | null>> {
    return this.call('getMany', table, () => this.inner.getMany(table, keys));
  }
  getInPartition(table: TableSpec, partition: Row, keys: readonly Row[]): Promise<Array<Row | null>> {
    return this.call('getInPartition', table, () => this.inner.getInPartition(table, partition, keys));
  }
  slice(table: TableSpec, query: SliceQuery): Promise<Row[]> {
    return this.call('slice', table, () => this.inner.slice(table, query));
  }
  scan(table: TableSpec, options: { readonly limit: number; readonly after?: string | null }): Promise<ScanPage> {
    return this.call('scan', table, () => this.inner.scan(table, options));
  }
  readCells(table: TableSpec, key: Row, columns: readonly string[]): Promise<CellRead> {
    return this.call('readCells', table, () => this.inner.readCells(table, key, columns));
  }
  upsert(table: TableSpec, row: Row, options?: WriteOptions): Promise<void> {
    return this.call('upsert', table, () => this.inner.upsert(table, row, options));
  }
  delete(table: TableSpec, key: Row, options?: DeleteOptions): Promise<void> {
    return this.call('delete', table, () => this.inner.delete(table, key, options));
  }
  deleteRange(table: TableSpec, partition: Row, range: ClusteringRange, options?: DeleteOptions): Promise<void> {
    return this.call('deleteRange', table, () => this.inner.deleteRange(table, partition, range, options));
  }
  increment(table: TableSpec, key: Row, deltas: Readonly<Record<string, bigint | number>>): Promise<void> {
    return this.call('increment', table, () => this.inner.increment(table, key, deltas));
  }
  insertIfNotExists(table: TableSpec, row: Row, options?: { ttl?: number }): Promise<ConditionalResult> {
    return this.call('insertIfNotExists', table, () => this.inner.insertIfNotExists(table, row, options));
  }
  deleteIf(table: TableSpec, key: Row, expected?: Row): Promise<boolean> {
    return this.call('deleteIf', table, () => this.inner.deleteIf(table, key, expected));
  }
  batch(mutations: readonly Mutation[]): Promise<void> {
    const tables = [...new Set(mutations.map((m) => m.table.name))];
    return this.dispatch({ operation: 'batch', table: tables[0] ?? null, tables }, () => this.inner.batch(mutations));
  }
  ping(): Promise<void> {
    return this.call('ping', null, () => this.inner.ping());
  }
  checkSchema(tables: readonly TableSpec[]): Promise<string[]> {
    return this.call('checkSchema', null, () => this.inner.checkSchema(tables));
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/**
 * Counts round trips (one per port call: what a request waits for) and statements (what
 * the adapter actually sent); one per request gives the per-request figures. Given the
 * request's deadline, it also refuses every call that would start after it; given the
 * request's signal, every call that would start after its client went away. Given the
 * process's request permits, each call first takes one (background work keeps the rest).
 */
export class CountingStore extends StoreDecorator {
  private count = 0;
  private readonly tally: StatementTally = { statements: 0 };

  constructor(
    inner: Store,
    private readonly deadline?: RequestDeadline,
    private readonly signal?: AbortSignal,
    private readonly permits?: CallPermits,
  ) {
    super(inner);
  }

  /** Round trips made through this wrapper so far. */
  get roundTrips(): number {
    return this.count;
  }

  /** Statements the adapter sent for calls through this wrapper so far. */
  get statements(): number {
    return this.tally.statements;
  }

  protected override statementTally(): StatementTally {
    return this.tally;
  }

  protected around<T>(_call: StoreCall, run: () => Promise<T>): Promise<T> {
    return this.refused() ?? (this.count++, this.permits ? this.permits.run(run) : run());
  }

  // The reads every page makes skip the generic path's per-call objects (a StoreCall
  // and two closures): this wrapper looks at nothing but the deadline.
  override get(table: TableSpec, key: Row): Promise<Row | null> {
    return this.refused() ?? this.issue(() => this.inner.get(table, key));
  }
  override getMany(table: TableSpec, keys: readonly Row[]): Promise<Array<Row | null>> {
    return this.refused() ?? this.issue(() => this.inner.getMany(table, keys));
  }
  override getInPartition(table: TableSpec, partition: Row, keys: readonly Row[]): Promise<Array<Row | null>> {
    return this.refused() ?? this.issue(() => this.inner.getInPartition(table, partition, keys));
  }
  override slice(table: TableSpec, query: SliceQuery): Promise<Row[]> {
    return this.refused() ?? this.issue(() => this.inner.slice(table, query));
  }

  /** One counted call, in its statement tally, under a permit when there are permits. */
  private issue<T>(call: () => Promise<T>): Promise<T> {
    this.count++;
    return this.permits ? this.permits.run(() => withTally(this.tally, call)) : withTally(this.tally, call);
  }

  /** A rejection once the request's deadline has passed or its client has gone: no call starts after either. */
  private refused(): Promise<never> | undefined {
    if (this.deadline && Date.now() >= this.deadline.at) return Promise.reject(new DeadlineExceededError(this.deadline.timeoutMs));
    if (this.signal?.aborted) return Promise.reject(new RequestAbortedError());
    return undefined;
  }
}
