/**
 * Ordered lists that people rearrange by hand (seed 002's ledger list). Every change is
 * appended to the list's transaction log; readers apply pending transactions to what
 * they read, and the background applier makes them permanent. Pages are exact while
 * transactions are pending.
 */
import { randomUUID } from 'node:crypto';
import { DomainError, badInput, checkText } from '../../errors.js';
import type { CursorCodec } from '../../paging/cursor.js';
import { pageFromSource } from '../../paging/engine.js';
import type { CursorKey, Direction, OrderedSource, Page, PageArgs } from '../../paging/types.js';
import type { Clock } from '../../store/clock.js';
import type { Store } from '../../store/port.js';
import type { Row } from '../../store/table.js';
import { microsOfTimeuuid, newTimeuuid } from '../../store/timeuuid.js';
import { isUuid, validateValue } from '../../store/values.js';
import { requireOwnerOrAdmin, type Actor } from '../actor.js';
import type { KeyLoader } from '../key-loader.js';
import { compareItems, readLedger, txToRow, type ListItem, type ListTx } from './ledger.js';
import { reverseLookupPage } from '../reverse-lookup.js';
import { listTransactionsTable, listsByOwnerTable, listsTable, pendingListsTable, pendingShardOf } from './lists-tables.js';
import { positionBetween } from './positions.js';

export type { ListItem } from './ledger.js';

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
  readonly actor: Actor | null;
  readonly loaders: ListLoaders;
  /** The process clock: new positions take its time as their seq. */
  readonly clock: Clock;
  /** Called after a transaction is appended (the server wakes its applier). */
  readonly onAppend?: (listId: string) => void;
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

/** A connection over a ledger list: the key is (weight, seq, item id). */
function ledgerSource(store: Store, listId: string): OrderedSource<ListItem> {
  const position = (key: CursorKey) => ({ weight: BigInt(key[0] as string), seq: BigInt(key[1] as string), itemId: key[2] as string });
  return {
    id: `OrderedList.items:${listId}`,
    async read(from: CursorKey | undefined, direction: Direction, limit: number) {
      const view = await readLedger(store, listId, { slice: { from: from && position(from), direction, limit } });
      return view.items;
    },
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

/** Items of one list by id, as they stand with pending transactions applied (one ledger read). */
export async function readListItems(store: Store, listId: string, itemIds: readonly string[]): Promise<Array<ListItem | null>> {
  const view = await readLedger(store, listId, { itemIds });
  return itemIds.map((id) => view.byId.get(id) ?? null);
}

/** The ordered-lists feature. Changing a list's items is for its owner and admins. */
export class Lists {
  constructor(private readonly deps: ListsDeps) {}

  /**
   * Create a list. The list row and its owner's lookup row go in one logged batch: both
   * or neither, so a list is never unreachable from `User.lists`. A batch is not
   * isolated across partitions, so `ofOwner` still skips a lookup row whose list it
   * cannot see yet.
   */
  async create(title: string, ownerId: string, now = new Date()): Promise<OrderedList> {
    const list: OrderedList = { listId: randomUUID(), title: checkText('title', title, 1, 200), ownerId, createdAt: now };
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
        table: listsByOwnerTable,
        partition: { owner_id: ownerId },
        toNode: (row) => ({ ownerId, listId: row.list_id as string, createdAt: row.created_at as Date }),
        rowOf: (ref) => ({ created_at: ref.createdAt, list_id: ref.listId }),
        visible: async (refs) => (await Promise.all(refs.map((r) => listById.load(r.listId)))).map((list) => list !== null),
      },
      args,
    );
  }

  /** One page of a list's items, in order. */
  items(listId: string, args: PageArgs): Promise<Page<ListItem>> {
    return pageFromSource(ledgerSource(this.deps.store, listId), args, { connectionName: 'items', codec: this.deps.codec });
  }

  /** Add an item at the end, or before `beforeItemId`. */
  async add(listId: string, label: string, beforeItemId?: string | null): Promise<ListItem> {
    await this.requireWritable(listId, 'listId');
    const text = checkText('label', label, 1, 200);
    const to = beforeItemId
      ? await this.slotBefore(listId, await this.requireItem(listId, beforeItemId, 'beforeItemId'), undefined)
      : await this.slotAtEnd(listId);
    const itemId = randomUUID();
    await this.append(listId, { txId: newTimeuuid(), kind: 'add', itemId, to, label: text });
    return { listId, itemId, label: text, ...to };
  }

  /** Move an item before one item or after another (exactly one of the two). */
  async move(listId: string, itemId: string, target: { beforeItemId?: string | null; afterItemId?: string | null }): Promise<ListItem> {
    await this.requireWritable(listId, 'itemId');
    const before = target.beforeItemId ?? null;
    const after = target.afterItemId ?? null;
    if ((before === null) === (after === null)) {
      throw badInput(before === null ? 'beforeItemId' : 'afterItemId', 'give exactly one of `beforeItemId` and `afterItemId`');
    }
    const item = await this.requireItem(listId, itemId, 'itemId');
    const anchorId = (before ?? after)!;
    if (anchorId === itemId) throw badInput(before ? 'beforeItemId' : 'afterItemId', 'an item cannot be moved relative to itself');
    const anchor = await this.requireItem(listId, anchorId, before ? 'beforeItemId' : 'afterItemId');
    const to = before ? await this.slotBefore(listId, anchor, itemId) : await this.slotAfter(listId, anchor, itemId);
    await this.append(listId, { txId: newTimeuuid(), kind: 'move', itemId, to });
    return { ...item, ...to };
  }

  /** Change an item's label. */
  async rename(listId: string, itemId: string, label: string): Promise<ListItem> {
    await this.requireWritable(listId, 'itemId');
    const text = checkText('label', label, 1, 200);
    const item = await this.requireItem(listId, itemId, 'itemId');
    await this.append(listId, { txId: newTimeuuid(), kind: 'rename', itemId, label: text });
    return { ...item, label: text };
  }

  /** Remove an item. */
  async remove(listId: string, itemId: string): Promise<void> {
    await this.requireWritable(listId, 'itemId');
    await this.requireItem(listId, itemId, 'itemId');
    await this.append(listId, { txId: newTimeuuid(), kind: 'remove', itemId });
  }

  /** The list, through the request's loader, if the actor may change it. */
  private async requireWritable(listId: string, argument: string): Promise<OrderedList> {
    const list = await this.deps.loaders.listById.load(listId);
    if (!list) throw new DomainError('NOT_FOUND', 'no such list', argument);
    await requireOwnerOrAdmin(this.deps.actor, list.ownerId, "only the list's owner or an admin may change it");
    return list;
  }

  private async requireItem(listId: string, itemId: string, argument: string): Promise<ListItem> {
    const [item] = await readListItems(this.deps.store, listId, [itemId]);
    if (!item) throw new DomainError('NOT_FOUND', `\`${argument}\` names no item of this list`, argument);
    return item;
  }

  /** The effective neighbours next to `anchor`, skipping the item being moved. */
  private async neighbour(listId: string, anchor: ListItem, direction: Direction, skip: string | undefined): Promise<ListItem | undefined> {
    const view = await readLedger(this.deps.store, listId, { slice: { from: anchor, direction, limit: 3 } });
    return view.items.find((i) => i.itemId !== anchor.itemId && i.itemId !== skip);
  }

  private async slotBefore(listId: string, anchor: ListItem, moving: string | undefined) {
    const previous = await this.neighbour(listId, anchor, 'backward', moving);
    return positionBetween(previous, anchor, this.deps.clock.nowMicros());
  }

  private async slotAfter(listId: string, anchor: ListItem, moving: string | undefined) {
    const next = await this.neighbour(listId, anchor, 'forward', moving);
    return positionBetween(anchor, next, this.deps.clock.nowMicros());
  }

  private async slotAtEnd(listId: string) {
    const view = await readLedger(this.deps.store, listId, { slice: { direction: 'backward', limit: 1 } });
    return positionBetween(view.items[0], undefined, this.deps.clock.nowMicros());
  }

  /**
   * Append a transaction and mark the list pending, in one logged batch. The
   * transaction row is stamped with its id's time, which the applier also uses to
   * delete it: whichever server's clock is ahead, the delete hides it.
   */
  private async append(listId: string, tx: ListTx): Promise<void> {
    await this.deps.store.batch([
      { kind: 'upsert', table: listTransactionsTable, row: txToRow(listId, tx), options: { timestamp: microsOfTimeuuid(tx.txId) } },
      { kind: 'upsert', table: pendingListsTable, row: { shard: pendingShardOf(listId), list_id: listId } },
    ]);
    this.deps.onAppend?.(listId);
  }
}
