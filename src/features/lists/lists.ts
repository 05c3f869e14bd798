/**
 * Ordered lists that people rearrange by hand (seed 002's ledger list). Every change is
 * appended to the list's transaction log; readers apply pending transactions to what
 * they read, and the background applier makes them permanent. Pages are exact while
 * transactions are pending.
 */
import type { Counted, CountWriter } from '../../counts/connection-counts.js';
import { scanRows, type Membership } from '../../counts/recount.js';
import { countedIndex, currentEntries, indexEntry, indexKeyOf } from '../../counts/count-ranks.js';
import { BIGINT_BOUNDS, RANK_TOP, bigintAtRank, bigintRank, uuidAtRank } from '../../paging/rank-orders.js';
import type { RankCache, RankOrder } from '../../paging/ranked-index.js';
import { DomainError, badInput, checkText } from '../../errors.js';
import type { Change } from '../../live/change-log.js';
import type { FeedSpec } from '../../live/live-hub.js';
import type { CursorCodec } from '../../paging/cursor.js';
import { edgeFromNode, pageFromSource } from '../../paging/engine.js';
import type { CursorKey, Direction, Edge, OrderedSource, Page, PageArgs } from '../../paging/types.js';
import type { Clock } from '../../store/clock.js';
import type { IdSource } from '../../store/id-source.js';
import type { Store } from '../../store/port.js';
import type { Row } from '../../store/table.js';
import { isUuid, validateValue } from '../../store/values.js';
import { microsOfTimeuuid } from '../../store/timeuuid.js';
import { requireOwnerOrAdmin, type Actor } from '../actor.js';
import type { KeyLoader } from '../key-loader.js';
import { NONE_PENDING, appendTransactions, compareItems, readLedger, readLedgerAfter, readLedgerTransactions, readRecentTransactions, type LedgerTransactions, type ListItem, type ListTx, type NewListTx } from './ledger.js';
import { reverseLookupPage } from '../reverse-lookup.js';
import { listItemsTable, listsByOwnerTable, listsTable } from './lists-tables.js';
import { comparePositions, isCrowded, positionBetween, type Position } from './positions.js';
import { planRebalance } from './rebalance.js';

export type { ListItem } from './ledger.js';

/** An end of a list, for moves that name no neighbour. */
export type ListEnd = 'TOP' | 'BOTTOM';

/** Where `move` puts an item: exactly one of the three. */
export interface MoveTarget {
  readonly beforeItemId?: string | null;
  readonly afterItemId?: string | null;
  readonly toEnd?: ListEnd | null;
}

/** A new position, and whether it landed in a crowded gap (the applier then rebalances). */
interface Slot {
  readonly to: Position;
  readonly crowded: boolean;
}

/** An owner's list, as `User.lists` pages it: the list is read through the loader. */
export interface OwnedListRef {
  readonly ownerId: string;
  readonly listId: string;
  readonly createdAt: Date;
}

/** A list as the API shows it. */
export interface OrderedList {
  readonly listId: string;
  readonly title: string;
  readonly ownerId: string;
  readonly createdAt: Date;
}

/** The loaders Lists reads and keeps true. */
export interface ListLoaders {
  readonly listById: KeyLoader<string, OrderedList | null>;
}

/** What the feature needs. */
export interface ListsDeps {
  readonly store: Store;
  readonly codec: CursorCodec;
  /** The request's signal: a page stops reading once its client has gone (`PagingOptions.signal`). */
  readonly signal?: AbortSignal;
  readonly actor: Actor | null;
  readonly loaders: ListLoaders;
  /** The process clock: new positions take its time as their seq. */
  readonly clock: Clock;
  /** Called after a transaction is appended (the server wakes its applier). */
  readonly onAppend?: (listId: string) => void;
  /** Records items added and removed in the list's `items` count. */
  readonly counts: CountWriter;
  /** The process's kept bucket lists of counted indexes (`offset`); without it, every page reads them. */
  readonly rankCache?: RankCache;
  /** New ids and "now": fresh, or an idempotency key's plan (a redo makes the same list, item, transaction). */
  readonly ids: IdSource;
}

/** A page of a list's items, with the key its `totalCount` is read by. */
export type ListItemPage = Page<ListItem> & Counted;

/** The count key of a list's items (`OrderedList.items.totalCount`). */
export function itemsCountKey(listId: string): string {
  return `items:${listId}`;
}

/**
 * How `OrderedList.items`' keys (`[weight, seq, item id]`) map to ranks: a position's
 * weight, a signed 64-bit number, has its top 60 bits kept (`bigintRank`). A position
 * is 128 bits and more with its item id, so it cannot be a rank itself: items whose
 * weights differ only in their low 4 bits, or not at all (a crowded gap, which the
 * applier rebalances), share a rank, and a jump reads past them in its leaf. Appended
 * items lie 2^32 apart, a rebalanced run at least 2^20: a leaf (2^12 weights) holds one.
 */
export const listOrder: RankOrder = {
  rankOf: (key) => bigintRank(BigInt(key[0] as string)),
  edgeKey: (rank, direction) =>
    direction === 'forward'
      ? [bigintAtRank(rank, 'lowest').toString(), BIGINT_BOUNDS.lowest.toString(), uuidAtRank(0n, 'lowest')]
      : [bigintAtRank(rank, 'highest').toString(), BIGINT_BOUNDS.highest.toString(), uuidAtRank(RANK_TOP, 'highest')],
  // A level-2 bucket spans 2^36 weights: 16 appended items. A cursor's rank stops there,
  // its lists above coming with the index's top; where moves crowd more than
  // SMALL_BUCKET items into one before the cursor, the levels below come a wave later.
  cursorLevel: 2,
};

/**
 * An item's entry at `position` in the counted index of its list's items (`offset`):
 * its rank, then the item and the position, under the count's index key (count-ranks.ts,
 * `indexKeyOf`). The applier, which makes positions permanent one transaction at a time
 * in order, adds the entry of an item's new position and removes its old one in the
 * batch that moves it (applier.ts), so the index follows the applied list exactly. An
 * item moved back to a position it held before (a midpoint of the same two neighbours)
 * takes the entry's next generation (`currentEntries`).
 */
export function placementEntry(itemId: string, position: Position): string {
  return indexEntry(bigintRank(position.weight), `${itemId}@${position.weight}@${position.seq}`);
}

/** What happened to an item, as a subscriber of the list sees it (the GraphQL enum's values). */
export type ListChangeKind = 'ADDED' | 'MOVED' | 'RENAMED' | 'REMOVED';

/**
 * A change to a list as the applier applied it: the item where it now stands (not for
 * a removal), and for an addition or a move the item now right before it (null: first).
 */
export interface ListChange {
  readonly kind: ListChangeKind;
  readonly listId: string;
  readonly itemId: string;
  readonly item: ListItem | null;
  readonly previousItemId: string | null;
}

const CHANGE_KINDS: Readonly<Record<ListTx['kind'], ListChangeKind>> = { add: 'ADDED', move: 'MOVED', rename: 'RENAMED', remove: 'REMOVED' };

/**
 * The live feed of a list's items. A change is made when its transaction is appended,
 * not when the applier logs it: readers apply pending transactions, so pages show it
 * from then (its transaction id's time, by the appending server's clock).
 */
export function listFeedOf(listId: string): FeedSpec {
  return { feed: `list:${listId}`, madeAt: (change) => microsOfTimeuuid(change.item) };
}

/**
 * The change announcing an applied transaction: identified by the transaction, so an
 * announcement repeated by a step run again reaches subscribers once.
 */
export function listChangeOf(
  listId: string,
  id: string,
  tx: ListTx,
  item: { label: string; weight: bigint; seq: bigint } | null,
  previousItemId: string | null,
): Change {
  return {
    feed: listFeedOf(listId).feed,
    id,
    kind: CHANGE_KINDS[tx.kind],
    item: tx.txId,
    payload: {
      itemId: tx.itemId,
      ...(item && { label: item.label, weight: item.weight.toString(), seq: item.seq.toString() }),
      ...(tx.kind === 'add' || tx.kind === 'move' ? { previousItemId } : {}),
    },
  };
}

/** A change read from a list's feed, in the list's own terms. */
export function listChangeFrom(listId: string, change: Change): ListChange {
  const p = change.payload as { itemId: string; label?: string; weight?: string; seq?: string; previousItemId?: string | null };
  const item: ListItem | null =
    p.label !== undefined && p.weight !== undefined && p.seq !== undefined
      ? { listId, itemId: p.itemId, label: p.label, weight: BigInt(p.weight), seq: BigInt(p.seq) }
      : null;
  return { kind: change.kind as ListChangeKind, listId, itemId: p.itemId, item, previousItemId: p.previousItemId ?? null };
}

function listFromRow(row: Row): OrderedList {
  return {
    listId: row.list_id as string,
    title: row.title as string,
    ownerId: row.owner_id as string,
    createdAt: row.created_at as Date,
  };
}

const KEY = /^-?\d{1,20}$/;

/**
 * A cursor key part that holds a CQL bigint (weight and seq are 64-bit): twenty digits
 * can exceed the range, and such a value must be a bad cursor, not a store error.
 */
function isBigintText(part: unknown): boolean {
  if (typeof part !== 'string' || !KEY.test(part)) return false;
  try {
    validateValue('bigint', BigInt(part), 'weight');
    return true;
  } catch {
    return false;
  }
}

/**
 * A connection over a ledger list: the key is (weight, seq, item id). For one page
 * (`onePage`), its reads share one read of the list's pending transactions
 * (`readLedgerTransactions`), started as the page begins where it is at an offset
 * (`OrderedSource.begin`): beside the index's first read, so that neither the read of
 * the cursor's bucket nor the page's own read waits a round trip of its own for them.
 */
function ledgerSource(store: Store, listId: string, onePage = false): OrderedSource<ListItem> {
  const position = (key: CursorKey) => ({ weight: BigInt(key[0] as string), seq: BigInt(key[1] as string), itemId: key[2] as string });
  let transactions: Promise<LedgerTransactions> | undefined;
  const pending = () => {
    if (!transactions) {
      transactions = readLedgerTransactions(store, listId);
      // (Awaited by the page's reads; a page that fails before any fails there.)
      transactions.catch(() => {});
    }
    return transactions;
  };
  const slice = (from: CursorKey | undefined, direction: Direction, limit: number) => ({ slice: { from: from && position(from), direction, limit } });
  return {
    id: `OrderedList.items:${listId}`,
    ...(onePage && { begin: () => void pending() }),
    read: async (from, direction, limit) => (await readLedger(store, listId, slice(from, direction, limit), onePage ? pending() : undefined)).items,
    // The rows as the applier left them, no transaction applied: the placements the
    // counted index counts, once settled (a pending move's is not in it yet).
    readStored: async (from, direction, limit) => (await readLedgerAfter(store, listId, slice(from, direction, limit), NONE_PENDING)).items,
    keyOf: (item) => [item.weight.toString(), item.seq.toString(), item.itemId],
    compare: (a, b) => compareItems(position(a), position(b)),
    isKey: (key) =>
      key.length === 3 &&
      isBigintText(key[0]) &&
      isBigintText(key[1]) &&
      typeof key[2] === 'string' &&
      isUuid(key[2]),
  };
}

/** Lists by id, in order, null for misses (one round trip). */
export async function readLists(store: Store, ids: readonly string[]): Promise<Array<OrderedList | null>> {
  const rows = await store.getMany(listsTable, ids.map((list_id) => ({ list_id })));
  return rows.map((r) => (r ? listFromRow(r) : null));
}

/**
 * Every list's items as its pages show them (pending transactions applied), and their
 * entries in the counted index, for recounts: a scan of the lists, then each list read
 * in order. An entry of a move still pending is the one its applier will add.
 */
export async function* listMemberships(store: Store): AsyncGenerator<Membership> {
  for await (const lists of scanRows(store, listsTable)) {
    for (const row of lists) {
      const source = ledgerSource(store, row.list_id as string);
      let from: CursorKey | undefined;
      for (;;) {
        let items = await source.read(from, 'forward', 500);
        if (from !== undefined) items = items.filter((item) => source.compare(source.keyOf(item), from!) !== 0);
        if (items.length === 0) break;
        yield { key: itemsCountKey(row.list_id as string), items: items.map((i) => i.itemId) };
        const countKey = itemsCountKey(row.list_id as string);
        yield { key: indexKeyOf(countKey), items: await currentEntries(store, countKey, items.map((i) => placementEntry(i.itemId, i))) };
        from = source.keyOf(items[items.length - 1]!);
      }
    }
  }
}

/** Items of one list by id, as they stand with pending transactions applied (one ledger read). */
export async function readListItems(store: Store, listId: string, itemIds: readonly string[]): Promise<Array<ListItem | null>> {
  const view = await readLedger(store, listId, { itemIds });
  return itemIds.map((id) => view.byId.get(id) ?? null);
}

/** The ordered-lists feature. Changing a list's items is for its owner and admins. */
export class Lists {
  /**
   * Per list, the newest transaction time the current change's reads found (null: none):
   * its append goes above it without reading it again (`appendTransactions`). Cleared
   * when a change begins, so it only ever holds what was read since.
   */
  private readonly newestSeen = new Map<string, bigint | null>();

  constructor(private readonly deps: ListsDeps) {}

  /** Note what a read of the current change found of `listId`'s newest transaction. */
  private saw(listId: string, newest: bigint | null): void {
    const known = this.newestSeen.get(listId);
    if (known === undefined || (newest !== null && (known === null || newest > known))) this.newestSeen.set(listId, newest);
  }

  /**
   * Create a list. The list row and its owner's lookup row go in one logged batch: both
   * or neither, so a list is never unreachable from `User.lists`. A batch is not
   * isolated across partitions, so `ofOwner` still skips a lookup row whose list it
   * cannot see yet.
   */
  async create(title: string, ownerId: string, now = this.deps.ids.now()): Promise<OrderedList> {
    const list: OrderedList = { listId: this.deps.ids.uuid(), title: checkText('title', title, 1, 200), ownerId, createdAt: now };
    await this.deps.store.batch([
      { kind: 'upsert', table: listsByOwnerTable, row: { owner_id: ownerId, created_at: now, list_id: list.listId } },
      { kind: 'upsert', table: listsTable, row: { list_id: list.listId, title: list.title, owner_id: ownerId, created_at: now } },
    ]);
    this.deps.loaders.listById.prime(list.listId, list);
    return list;
  }

  /**
   * One page of the lists `ownerId` owns, newest first (`User.lists`). Lists are read
   * through the request's loader, in one batch per page; a lookup row whose list is
   * missing is skipped.
   */
  ofOwner(ownerId: string, args: PageArgs): Promise<Page<OwnedListRef>> {
    const { listById } = this.deps.loaders;
    return reverseLookupPage<OwnedListRef>(
      {
        id: `User.lists:${ownerId}`,
        connectionName: 'lists',
        store: this.deps.store,
        codec: this.deps.codec,
        signal: this.deps.signal,
        table: listsByOwnerTable,
        partition: { owner_id: ownerId },
        toNode: (row) => ({ ownerId, listId: row.list_id as string, createdAt: row.created_at as Date }),
        rowOf: (ref) => ({ created_at: ref.createdAt, list_id: ref.listId }),
        visible: async (refs) => (await Promise.all(refs.map((r) => listById.load(r.listId)))).map((list) => list !== null),
      },
      args,
    );
  }

  /** The live feed of a list's items (readable by anyone, like the list). NOT_FOUND for an unknown list. */
  async feed(listId: string): Promise<FeedSpec> {
    const list = await this.deps.loaders.listById.load(listId);
    if (!list) throw new DomainError('NOT_FOUND', 'no such list', 'listId');
    return listFeedOf(listId);
  }

  /** The `OrderedList.items` edge of an item, cursor and all, as a page of that connection gives it. */
  itemEdge(item: ListItem): Edge<ListItem> {
    return edgeFromNode(ledgerSource(this.deps.store, item.listId), item, this.deps.codec);
  }

  /**
   * One page of a list's items, in order, with its count's key; an `offset` is found
   * through the counted index of the items' placements (`listOrder`, `placementEntry`).
   */
  async items(listId: string, args: PageArgs): Promise<ListItemPage> {
    const index = countedIndex(this.deps.store, indexKeyOf(itemsCountKey(listId)), listOrder, this.deps.rankCache);
    const page = await pageFromSource(ledgerSource(this.deps.store, listId, true), args, { connectionName: 'items', codec: this.deps.codec, index, signal: this.deps.signal });
    return { ...page, countKey: itemsCountKey(listId) };
  }

  /** Add an item at the end, or before `beforeItemId`. */
  async add(listId: string, label: string, beforeItemId?: string | null): Promise<ListItem> {
    await this.requireWritable(listId, 'listId');
    const text = checkText('label', label, 1, 200);
    const { to, crowded } = beforeItemId
      ? await this.slotNextTo(listId, await this.requireItem(listId, beforeItemId, 'beforeItemId'), 'backward', undefined)
      : await this.slotAtEnd(listId, 'BOTTOM');
    const itemId = this.deps.ids.uuid();
    await this.append(listId, [{ kind: 'add', itemId, to, label: text, ...(crowded && { crowded }) }]);
    return { listId, itemId, label: text, ...to };
  }

  /** Move an item before one item, after another, or to the top or the bottom of the list (exactly one of the three). */
  async move(listId: string, itemId: string, target: MoveTarget): Promise<ListItem> {
    await this.requireWritable(listId, 'itemId');
    const before = target.beforeItemId ?? null;
    const after = target.afterItemId ?? null;
    const toEnd = target.toEnd ?? null;
    const given = [before !== null, after !== null, toEnd !== null].filter(Boolean).length;
    if (given !== 1) {
      const argument = before === null ? (after === null ? 'toEnd' : 'afterItemId') : 'beforeItemId';
      throw badInput(argument, `give exactly one of \`beforeItemId\`, \`afterItemId\` and \`toEnd\`, got ${given}`);
    }
    if (toEnd !== null && toEnd !== 'TOP' && toEnd !== 'BOTTOM') throw badInput('toEnd', `\`toEnd\` must be TOP or BOTTOM, got ${String(toEnd)}`);
    const anchorId = before ?? after;
    const argument = before !== null ? 'beforeItemId' : 'afterItemId';
    if (anchorId === itemId) throw badInput(argument, 'an item cannot be moved relative to itself');
    const item = await this.requireItem(listId, itemId, 'itemId');
    const slot =
      anchorId === null
        ? await this.slotAtEnd(listId, toEnd!)
        : await this.slotNextTo(listId, await this.requireItem(listId, anchorId, argument), before !== null ? 'backward' : 'forward', itemId);
    await this.append(listId, [{ kind: 'move', itemId, to: slot.to, ...(slot.crowded && { crowded: true }) }]);
    return { ...item, ...slot.to };
  }

  /** Change an item's label. */
  async rename(listId: string, itemId: string, label: string): Promise<ListItem> {
    await this.requireWritable(listId, 'itemId');
    const text = checkText('label', label, 1, 200);
    const item = await this.requireItem(listId, itemId, 'itemId');
    await this.append(listId, [{ kind: 'rename', itemId, label: text }]);
    return { ...item, label: text };
  }

  /** Remove an item. */
  async remove(listId: string, itemId: string): Promise<void> {
    await this.requireWritable(listId, 'itemId');
    await this.requireItem(listId, itemId, 'itemId');
    await this.append(listId, [{ kind: 'remove', itemId }]);
  }

  /** The list, through the request's loader, if the actor may change it. */
  private async requireWritable(listId: string, argument: string): Promise<OrderedList> {
    // Every change begins here: what earlier changes of this request read is not since it began.
    this.newestSeen.clear();
    const list = await this.deps.loaders.listById.load(listId);
    if (!list) throw new DomainError('NOT_FOUND', 'no such list', argument);
    await requireOwnerOrAdmin(this.deps.actor, list.ownerId, "only the list's owner or an admin may change it");
    return list;
  }

  private async requireItem(listId: string, itemId: string, argument: string): Promise<ListItem> {
    const view = await readLedger(this.deps.store, listId, { itemIds: [itemId] });
    this.saw(listId, view.newestTx);
    const item = view.byId.get(itemId) ?? null;
    if (!item) throw new DomainError('NOT_FOUND', `\`${argument}\` names no item of this list`, argument);
    return item;
  }

  /** The effective neighbour next to `anchor` in `direction`, skipping the item being moved. */
  private async neighbour(listId: string, anchor: ListItem, direction: Direction, skip: string | undefined): Promise<ListItem | undefined> {
    const view = await readLedger(this.deps.store, listId, { slice: { from: anchor, direction, limit: 3 } });
    this.saw(listId, view.newestTx);
    return view.items.find((i) => i.itemId !== anchor.itemId && i.itemId !== skip);
  }

  /**
   * A position right before (`backward`) or after (`forward`) `anchor`. When moves have
   * used up that gap, rebalance around the anchor first (a transaction of its own,
   * appended now), then place the item in the room it made: a move never fails for
   * want of room. Normally the applier has rebalanced long before, when a move landed
   * in a crowded gap.
   */
  private async slotNextTo(listId: string, anchor: ListItem, direction: Direction, moving: string | undefined): Promise<Slot> {
    for (let attempt = 0; ; attempt++) {
      const other = await this.neighbour(listId, anchor, direction, moving);
      const [lo, hi] = direction === 'forward' ? [anchor, other] : [other, anchor];
      try {
        const to = positionBetween(lo, hi, this.deps.clock.nowMicros());
        return { to, crowded: isCrowded(lo, to, hi) };
      } catch (err) {
        if (!(err instanceof DomainError) || err.code !== 'CONFLICT' || attempt > 0) throw err;
      }
      const moves = await planRebalance(this.deps.store, listId, anchor, this.deps.clock.nowMicros());
      if (moves.length) await this.append(listId, moves);
      const moved = moves.find((m) => m.itemId === anchor.itemId);
      if (moved && moved.kind === 'move') anchor = { ...anchor, ...moved.to };
    }
  }

  /**
   * A position at the top or the bottom of the list: beyond every stored row (the last
   * or first, markers included) and the target of every pending or recently applied
   * transaction. Applied ones count too: on Cassandra the batch that applies a
   * transaction is not isolated across partitions, so its applied mark can be read
   * before its item's row, and an add placed by the rows alone would go before that
   * item (items added one after another came back out of order, on a ring under load).
   * The item there may have moved or gone since, which only leaves a wider gap, so this
   * needs neither the item index nor probes: two reads.
   */
  private async slotAtEnd(listId: string, end: ListEnd): Promise<Slot> {
    const { store, clock } = this.deps;
    const [{ recent: txs, newest }, [row]] = await Promise.all([
      readRecentTransactions(store, listId),
      store.slice(listItemsTable, { partition: { list_id: listId }, limit: 1, reverse: end === 'BOTTOM' }),
    ]);
    this.saw(listId, newest);
    const sign = end === 'TOP' ? -1 : 1;
    let extreme: Position | undefined = row && { weight: row.weight as bigint, seq: row.seq as bigint };
    for (const tx of txs) {
      if ((tx.kind === 'add' || tx.kind === 'move') && (!extreme || sign * comparePositions(tx.to, extreme) > 0)) extreme = tx.to;
    }
    const now = clock.nowMicros();
    return { to: end === 'TOP' ? positionBetween(undefined, extreme, now) : positionBetween(extreme, undefined, now), crowded: false };
  }

  /**
   * Append transactions (one logged batch, see `appendTransactions`), then tell the
   * server, which wakes its applier. The list's count moves in the same batch, when the
   * transaction is appended rather than when the applier applies it: readers apply
   * pending transactions, so that is when the connection shows the change, and the
   * count follows what the connection shows. Two removals of one item (two requests
   * that both saw it) count once (counts/connection-counts.ts).
   */
  private async append(listId: string, txs: readonly NewListTx[]): Promise<void> {
    const counted = txs.flatMap((tx) =>
      tx.kind === 'add' || tx.kind === 'remove'
        ? this.deps.counts.mutations({ key: itemsCountKey(listId), item: tx.itemId, sign: tx.kind === 'add' ? 1 : -1 })
        : [],
    );
    const appended = await appendTransactions(this.deps.store, this.deps.clock, listId, txs, counted, this.newestSeen.get(listId));
    this.newestSeen.set(listId, microsOfTimeuuid(appended[appended.length - 1]!.txId));
    this.deps.onAppend?.(listId);
  }
}
