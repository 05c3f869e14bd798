/**
 * The paging engine: one algorithm for every connection (seed 003, DESIGN.md
 * "Paging"). It reads page size + 2 rows from the cursor, inclusive: the cursor's own
 * row proves a page on one side, the extra row proves a page on the other, so
 * `hasNextPage` and `hasPreviousPage` are exact in both directions in one round trip.
 */
import { stopIfAborted } from '../store/deadline.js';
import type { CursorCodec } from './cursor.js';
import { readRun, readingPositions } from './ranked-index.js';
import type { CursorKey, Direction, Edge, Located, OrderedSource, Page, PageArgs, PagePosition, PositionIndex } from './types.js';
import { PagingArgumentError } from './types.js';

/** Page sizes: the default, and the most a client may ask for. */
export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/** How a connection is paged: its public name (for messages) and the cursor codec. */
export interface PagingOptions {
  /** The field's name, as users see it in messages ("posts"). */
  readonly connectionName: string;
  readonly codec: CursorCodec;
  readonly defaultPageSize?: number;
  readonly maxPageSize?: number;
  /**
   * The request's signal: once its client has gone, no further read starts
   * (`RequestAbortedError`), so a walk over many buckets stops where it stands.
   */
  readonly signal?: AbortSignal;
  /**
   * How an `offset` finds its position: the connection's counted index (ranked-index.ts);
   * without one, the skipped edges are read.
   */
  readonly index?: PositionIndex;
}

/** Arguments after validation: a direction, a size, and decoded cursors. */
export interface ResolvedPageArgs {
  readonly direction: Direction;
  readonly size: number;
  readonly after: CursorKey | undefined;
  readonly before: CursorKey | undefined;
  /** Edges skipped before the page, in its direction (0 when not asked). */
  readonly offset: number;
}

function checkSize(name: 'first' | 'last', value: number | null | undefined, max: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new PagingArgumentError(name, `\`${name}\` must be between 0 and ${max}, got ${value}`);
  }
  return value;
}

function decode<N>(
  source: OrderedSource<N>,
  codec: CursorCodec,
  name: 'after' | 'before',
  cursor: string | null | undefined,
): CursorKey | undefined {
  if (cursor === undefined || cursor === null) return undefined;
  const key = codec.decodeCursor(source.id, cursor);
  if (key === null && codec.isOutdated(source.id, cursor)) {
    throw new PagingArgumentError(
      name,
      `\`${name}\` is a cursor of this connection in a format this release no longer reads: it is out of date; page again from the start (without \`${name}\`) to get current cursors`,
    );
  }
  if (key === null || !source.isKey(key)) {
    throw new PagingArgumentError(name, `\`${name}\` is not a valid cursor for this connection, got "${truncate(cursor)}"`);
  }
  return key;
}

function truncate(s: string): string {
  return typeof s === 'string' && s.length > 40 ? `${s.slice(0, 40)}…` : String(s);
}

/**
 * Validate Relay arguments before anything is read: sizes, the first/last clash, and
 * the cursors' signatures and connection. Throws `PagingArgumentError`.
 */
export function resolvePageArgs<N>(source: OrderedSource<N>, args: PageArgs, options: PagingOptions): ResolvedPageArgs {
  const max = options.maxPageSize ?? MAX_PAGE_SIZE;
  const first = checkSize('first', args.first, max);
  const last = checkSize('last', args.last, max);
  if (first !== undefined && last !== undefined) {
    throw new PagingArgumentError(
      'last',
      `Passing both \`first\` and \`last\` to paginate the \`${options.connectionName}\` connection is not supported.`,
    );
  }
  const after = decode(source, options.codec, 'after', args.after);
  const before = decode(source, options.codec, 'before', args.before);
  const size = first ?? last ?? options.defaultPageSize ?? DEFAULT_PAGE_SIZE;
  // `last`, or a lone `before`, pages backward; everything else pages forward.
  const direction: Direction = last !== undefined || (first === undefined && before && !after) ? 'backward' : 'forward';
  const offset = args.offset ?? 0;
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw new PagingArgumentError('offset', `\`offset\` must be 0 or more, got ${offset}`);
  }
  return { direction, size, after, before, offset };
}

/**
 * The edge of `node` in `source`'s connection: the cursor a page of that connection
 * gives it, character for character (a live change carries edges a client merges into
 * pages it already holds, matching cursors by string equality).
 */
export function edgeFromNode<N>(source: OrderedSource<N>, node: N, codec: CursorCodec): Edge<N> {
  return { cursor: codec.encodeCursor(source.id, source.keyOf(node)), node };
}

/**
 * One page of `source` for Relay arguments, with exact flags. Invalid arguments throw
 * `PagingArgumentError` before any read.
 */
export async function pageFromSource<N>(source: OrderedSource<N>, args: PageArgs, options: PagingOptions): Promise<Page<N>> {
  const resolved = resolvePageArgs(source, args, options);
  const window =
    resolved.offset > 0
      ? await readOffsetWindow(source, resolved, options.index ?? readingPositions, options.signal)
      : await readWindow(source, resolved, options.signal);
  const edges = window.rows.map((node) => edgeFromNode(source, node, options.codec));
  return {
    edges,
    pageInfo: {
      hasNextPage: window.hasNext,
      hasPreviousPage: window.hasPrevious,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges[edges.length - 1]?.cursor ?? null,
    },
  };
}

interface Window<N> {
  readonly rows: N[];
  readonly hasNext: boolean;
  readonly hasPrevious: boolean;
}

/**
 * The rows of one page, in connection order. Written once for the forward case; the
 * backward case is the same walk with the roles of the two ends exchanged.
 */
async function readWindow<N>(source: OrderedSource<N>, args: ResolvedPageArgs, signal: AbortSignal | undefined): Promise<Window<N>> {
  const forward = args.direction === 'forward';
  const opposite: Direction = forward ? 'backward' : 'forward';
  // `from` is where the read starts; closeWindow cuts at the far cursor.
  const from = forward ? args.after : args.before;
  const n = args.size;

  // seed 003: fetch page size + 2 from a cursor (the cursor row and one extra), + 1 without.
  stopIfAborted(signal);
  let rows = await source.read(from, args.direction, n + (from ? 2 : 1));
  let behind = false;
  if (from) {
    if (rows.length > 0 && source.compare(source.keyOf(rows[0]!), from) === 0) {
      // The cursor's own row: proof that a page exists behind us.
      behind = true;
      rows = rows.slice(1);
    } else {
      // The cursor's row was deleted meanwhile: the page is still right; one probe settles the flag.
      stopIfAborted(signal);
      behind = (await source.read(from, opposite, 1)).length > 0;
    }
  }
  return closeWindow(source, args, rows, behind);
}

/**
 * A window from the rows read in its direction (up to page size + 1 from where it
 * starts) and whether rows lie behind its start: cut at the far cursor, flags set,
 * put in connection order.
 */
function closeWindow<N>(source: OrderedSource<N>, args: ResolvedPageArgs, read: N[], behind: boolean): Window<N> {
  const forward = args.direction === 'forward';
  // `stop` is where the window ends (exclusive); signed so that "beyond the stop" reads the same in both directions.
  const stop = forward ? args.before : args.after;
  const sign = forward ? 1 : -1;
  const n = args.size;
  let rows = read;
  let ahead: boolean;
  const cut = stop ? rows.findIndex((r) => sign * source.compare(source.keyOf(r), stop) >= 0) : -1;
  if (cut >= 0 && cut <= n) {
    // The window's far cursor (or a row past it) was read: rows exist beyond the page.
    rows = rows.slice(0, cut);
    ahead = true;
  } else {
    ahead = rows.length > n;
    rows = rows.slice(0, n);
  }
  if (!forward) rows.reverse();
  return forward
    ? { rows, hasNext: ahead, hasPrevious: behind }
    : { rows, hasNext: behind, hasPrevious: ahead };
}

/**
 * The rows of a page `offset` edges on (see PageArgs.offset): the index gives where the
 * page starts, a read from there takes it and one more row (`hasNext`); the edges
 * skipped within the read, or one probe the other way, prove `hasPrevious` (forward;
 * the flags swap backward). Past the end, the page is empty and `hasPrevious` (forward)
 * tells whether the connection has any edge at all. A position the index found from
 * reads kept from earlier requests is read at once, alongside the index's check of
 * them; when they are refused, the page is read again from the position found anew.
 */
async function readOffsetWindow<N>(source: OrderedSource<N>, args: ResolvedPageArgs, index: PositionIndex, signal: AbortSignal | undefined): Promise<Window<N>> {
  const forward = args.direction === 'forward';
  const opposite: Direction = forward ? 'backward' : 'forward';
  const from = forward ? args.after : args.before;
  // Whether any row lies before `key` (exclusive), in the paging direction.
  const anyBefore = async (key: CursorKey | undefined) =>
    (await source.read(key, opposite, 2)).some((r) => key === undefined || source.compare(source.keyOf(r), key) !== 0);
  const windowAt = async (start: PagePosition | null): Promise<Window<N>> => {
    stopIfAborted(signal);
    if (start === null) return closeWindow(source, args, [], await anyBefore(undefined));
    // Rows the index read ahead from the position, when they cover the page (the type's promise).
    const ahead = start.read && (start.read.short || start.read.rows.length >= start.skip + args.size + 1) ? (start.read.rows as N[]) : undefined;
    const rows = ahead ?? readRun(source, start.key, args.direction, start.skip + args.size + 1);
    // (A probe beside the read only where the page starts its position: no promise of `false` otherwise.)
    const [read, before] = start.skip === 0 && start.key !== undefined ? await Promise.all([rows, anyBefore(start.key)]) : [await rows, false];
    const behind = start.skip > 0 ? read.length > 0 || (await anyBefore(start.key)) : before;
    return closeWindow(source, args, read.slice(start.skip), behind);
  };
  stopIfAborted(signal);
  source.begin?.();
  let located: Located = await index.locate(source, from, args.direction, args.offset, args.size);
  for (;;) {
    // (Nothing to check again, most often: the window alone.)
    if (!located.recheck) return windowAt(located.position);
    const [window, again]: [Window<N>, Located | null] = await Promise.all([windowAt(located.position), located.recheck ?? null]);
    if (again === null) return window;
    located = again;
  }
}
