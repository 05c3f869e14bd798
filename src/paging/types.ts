/**
 * Types of the paging engine, apart from its algorithm (graphql-relay-js keeps
 * `connection.ts` apart from `arrayConnection.ts` the same way). Nothing here knows
 * GraphQL or a store.
 */

/** One component of a cursor key: what a clustering value becomes in JSON. */
export type CursorKeyPart = string | number | boolean | null;

/** The position of a row in its connection: its clustering values (and bucket). */
export type CursorKey = readonly CursorKeyPart[];

/** Direction of a read, relative to the connection's order. */
export type Direction = 'forward' | 'backward';

/**
 * An ordered source of keyed rows: one partition slice, a walk over buckets, an index
 * range. The engine asks only "up to n rows from this key, inclusive, this way".
 */
export interface OrderedSource<Node> {
  /** Identity of the connection (type, field and parent), bound into every cursor. */
  readonly id: string;
  /**
   * Up to `limit` rows in connection order (`forward`) or its reverse, starting at
   * `from` inclusive; with no `from`, from the first (or last) row. With `until`, no row
   * past that key (in `direction`) is wanted: a source may leave them unread (a slice
   * ends there, a bucketed source reads no bucket after `until`'s) or give them all the
   * same.
   */
  read(from: CursorKey | undefined, direction: Direction, limit: number, until?: CursorKey): Promise<Node[]>;
  /**
   * Where `read` makes more of the rows than the store holds (a list's pending
   * transactions applied), the same read of the rows as stored, without waiting for
   * anything else: what a counted index ranks a cursor by (its bucket's edges up to it,
   * ranked-index.ts), since the index counts what is stored and settled, and a rank is
   * exact once writes have settled; the read then goes beside the index's first read.
   */
  readStored?(from: CursorKey | undefined, direction: Direction, limit: number, until?: CursorKey): Promise<Node[]>;
  /**
   * Called once a page at an offset has valid arguments, before its index is read: a
   * source may start there a read that every read of the page waits for (a list's
   * pending transactions), so that it goes beside the index's first read, not after it.
   */
  begin?(): void;
  /** The key of a row. */
  keyOf(node: Node): CursorKey;
  /** Order of two keys in this connection. */
  compare(a: CursorKey, b: CursorKey): number;
  /** True when a decoded key has this connection's shape (checked before any read). */
  isKey(key: CursorKey): boolean;
}

/** The Relay connection arguments. */
export interface PageArgs {
  readonly first?: number | null;
  readonly after?: string | null;
  readonly last?: number | null;
  readonly before?: string | null;
  /**
   * Edges to skip before the page, in the paging direction: from the cursor (`after`
   * forward, `before` backward), or from the start (forward) or the end (backward).
   */
  readonly offset?: number | null;
}

/** Where a page starts: `skip` edges on from `key` (inclusive; the start or end when undefined), in the paging direction. */
export interface PagePosition {
  readonly key: CursorKey | undefined;
  readonly skip: number;
  /**
   * Rows already read from `key` (inclusive) in the page's direction, enough for the
   * page (skip + size + 1 of them, or every row there is: `short`): read them instead.
   */
  readonly read?: { readonly rows: readonly unknown[]; readonly short: boolean };
}

/** What `PositionIndex.locate` found. */
export interface Located {
  /** Where the page starts; null past the end. */
  readonly position: PagePosition | null;
  /**
   * Present when `position` came from index reads kept from earlier requests, before
   * this page's read of the index's settlement came back: resolves to null once that
   * read confirms them, or to the position found again from the store when it does not
   * (read the page from there instead).
   */
  readonly recheck?: Promise<Located | null>;
}

/**
 * How a connection finds the edge `offset` edges after a cursor (or from its start or
 * end) without paging through the edges in between: a counted index (ranked-index.ts),
 * or, for a connection without one, reading them (`readingPositions`).
 */
export interface PositionIndex {
  /**
   * Where the edge lies that comes `offset` edges after every edge at or before `from`
   * (after none when `from` is undefined), in `direction`; null when there is none.
   * `size` is the page's: what a position's rows read ahead must cover.
   */
  locate<N>(source: OrderedSource<N>, from: CursorKey | undefined, direction: Direction, offset: number, size: number): Promise<Located>;
}

/** One edge of a page. */
export interface Edge<Node> {
  readonly cursor: string;
  readonly node: Node;
}

/** Relay's PageInfo, exact in both directions. */
export interface PageInfo {
  readonly hasNextPage: boolean;
  readonly hasPreviousPage: boolean;
  readonly startCursor: string | null;
  readonly endCursor: string | null;
}

/** A page of a connection. */
export interface Page<Node> {
  readonly edges: Array<Edge<Node>>;
  readonly pageInfo: PageInfo;
}

/** A paging argument was refused; `argument` names it. Nothing was read. */
export class PagingArgumentError extends Error {
  override readonly name = 'PagingArgumentError';
  constructor(
    readonly argument: string,
    message: string,
  ) {
    super(message);
  }
}
