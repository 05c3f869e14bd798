/**
 * The user directory (seed 004): users searchable by location and by last-name prefix
 * through hand-built composite indexes. An update reads the user's old index entries
 * from the entries table, then in one logged batch deletes them and their index rows
 * and writes the new ones with the user row. No lock: concurrent updates may leave
 * stale entries (false positives), which readers filter by checking each hit against
 * the user's current entry, through the request's DataLoader.
 */
import { DomainError, badInput, checkText } from '../../errors.js';
import { bucketedSource } from '../../paging/bucketed-source.js';
import type { CursorCodec } from '../../paging/cursor.js';
import { pageFromSource } from '../../paging/engine.js';
import { filteredSource } from '../../paging/filtered-source.js';
import { sliceSource } from '../../paging/slice-source.js';
import type { Page, PageArgs } from '../../paging/types.js';
import type { ClusteringBound, Mutation, Store } from '../../store/port.js';
import type { Row } from '../../store/table.js';
import { newTimeuuid } from '../../store/timeuuid.js';
import { usersTable } from '../users/users-tables.js';
import type { ProfileValues, User } from '../users/users.js';
import { userIndexBucketsTable, userIndexEntriesTable, userIndexTable } from './directory-tables.js';

/** The indexes of the directory. */
export type IndexName = 'location' | 'last_name';

/** One index entry as read from the index. */
export interface IndexHit {
  readonly userId: string;
  readonly value: string;
  readonly ts: string;
  readonly bucket: string;
}

const LOCATION_SHARDS = ['0', '1', '2', '3'];
const MAX_VALUE_LENGTH = 100;
/** The highest code point: `prefix + TOP` bounds every value starting with `prefix`. */
const TOP = '\u{10FFFF}';

/** Index keys are case-insensitive: NFC, trimmed, lower-cased. */
export function indexKeyOf(value: string): string {
  return value.normalize('NFC').trim().toLowerCase();
}

function utf8Compare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** The partition bucket of an entry (see directory-tables.ts for why). */
export function bucketOf(index: IndexName, key: string, userId: string): string {
  if (index === 'last_name') return [...key].slice(0, 2).join('');
  return `${key}#${Math.floor(parseInt(userId[0]!, 16) / 4)}`;
}

function hitFromRow(row: Row): IndexHit {
  return { userId: row.user_id as string, value: row.value as string, ts: row.ts as string, bucket: row.bucket as string };
}

const FIELDS = [
  { index: 'location' as const, input: 'location' as const, column: 'location', tsColumn: 'location_ts' },
  { index: 'last_name' as const, input: 'lastName' as const, column: 'last_name', tsColumn: 'last_name_ts' },
];

/** What the directory needs. */
export interface DirectoryDeps {
  readonly store: Store;
  readonly codec: CursorCodec;
  /** Users by id (the request's DataLoader), to filter stale hits. */
  readonly loadUsers: (ids: readonly string[]) => Promise<Array<User | null>>;
}

/** The user directory. */
export class Directory {
  constructor(private readonly deps: DirectoryDeps) {}

  /**
   * The index writes for new profile values, given the user's current entries:
   * extra user-row columns and the mutations for the same logged batch. `undefined` or
   * null leaves a field unchanged; "" clears it.
   */
  plan(userId: string, values: ProfileValues, current: readonly Row[]): { columns: Row; mutations: Mutation[] } {
    const columns: Row = {};
    const mutations: Mutation[] = [];
    for (const f of FIELDS) {
      const raw = values[f.input];
      if (raw === undefined || raw === null) continue;
      const display = raw === '' ? null : checkText(f.input, raw, 1, MAX_VALUE_LENGTH);
      if (display?.includes(TOP)) throw badInput(f.input, `\`${f.input}\` must not contain U+10FFFF`);
      // seed 004: delete the old entries and their index rows…
      for (const old of current.filter((e) => e.index_name === f.index)) {
        mutations.push(
          { kind: 'delete', table: userIndexEntriesTable, key: { user_id: userId, index_name: f.index, ts: old.ts! } },
          {
            kind: 'delete',
            table: userIndexTable,
            key: { index_name: f.index, bucket: old.bucket!, value: old.value!, user_id: userId, ts: old.ts! },
          },
        );
      }
      columns[f.column] = display;
      columns[f.tsColumn] = null;
      if (display === null) continue;
      // …and write the new ones, with a fresh ts naming them current.
      const key = indexKeyOf(display);
      const ts = newTimeuuid();
      const bucket = bucketOf(f.index, key, userId);
      columns[f.tsColumn] = ts;
      mutations.push(
        { kind: 'upsert', table: userIndexEntriesTable, row: { user_id: userId, index_name: f.index, ts, value: key, bucket } },
        { kind: 'upsert', table: userIndexTable, row: { index_name: f.index, bucket, value: key, user_id: userId, ts } },
      );
      if (f.index === 'last_name') {
        mutations.push({ kind: 'upsert', table: userIndexBucketsTable, row: { index_name: f.index, bucket } });
      }
    }
    return { columns, mutations };
  }

  /** Update a user's profile (the caller checks who may). NOT_FOUND for an unknown user. */
  async update(userId: string, input: { displayName?: string | null } & ProfileValues): Promise<void> {
    const { store } = this.deps;
    const [user] = await this.deps.loadUsers([userId]);
    if (!user) throw new DomainError('NOT_FOUND', 'no such user', 'id');
    // seed 004: the old values come from the entries table, not from the user row.
    const current = await store.slice(userIndexEntriesTable, { partition: { user_id: userId }, limit: 10_000 });
    const { columns, mutations } = this.plan(userId, input, current);
    const row: Row = { user_id: userId, ...columns };
    if (input.displayName !== undefined && input.displayName !== null) {
      row.display_name = checkText('displayName', input.displayName, 1, 80);
    }
    // One logged batch: re-running it is harmless (same keys, same values).
    await store.batch([{ kind: 'upsert', table: usersTable, row }, ...mutations]);
  }

  /** Users whose location is `location` (case-insensitive), by user id. */
  byLocation(location: string, args: PageArgs): Promise<Page<IndexHit>> {
    const key = indexKeyOf(checkText('location', location, 1, MAX_VALUE_LENGTH));
    const buckets = LOCATION_SHARDS.map((s) => `${key}#${s}`);
    return this.page('location', `Query.usersByLocation:${key}`, 'usersByLocation', args, {
      listBuckets: async () => buckets,
      range: {},
    });
  }

  /** Users whose last name starts with `prefix` (case-insensitive), by last name then id. */
  byLastName(prefix: string, args: PageArgs): Promise<Page<IndexHit>> {
    if (prefix.length > MAX_VALUE_LENGTH) {
      throw badInput('prefix', `\`prefix\` must be at most ${MAX_VALUE_LENGTH} characters, got ${prefix.length}`);
    }
    const key = indexKeyOf(prefix);
    const range = key === '' ? {} : { lower: { values: [key], inclusive: true }, upper: { values: [key + TOP], inclusive: true } };
    const chars = [...key];
    const listBuckets =
      chars.length >= 2
        ? async () => [chars.slice(0, 2).join('')]
        : async () => {
            const rows = await this.deps.store.slice(userIndexBucketsTable, { partition: { index_name: 'last_name' }, limit: 100_000 });
            return rows.map((r) => r.bucket as string).filter((b) => b.startsWith(key));
          };
    return this.page('last_name', `Query.usersByLastName:${key}`, 'usersByLastName', args, { listBuckets, range });
  }

  private page(
    index: IndexName,
    id: string,
    connectionName: string,
    args: PageArgs,
    options: { listBuckets: () => Promise<string[]>; range: { lower?: ClusteringBound; upper?: ClusteringBound } },
  ): Promise<Page<IndexHit>> {
    const { store, codec, loadUsers } = this.deps;
    const source = bucketedSource<IndexHit>({
      id,
      async listBuckets(from, direction) {
        const all = await options.listBuckets();
        const kept = from === undefined ? all : all.filter((b) => (direction === 'forward' ? utf8Compare(b, from) >= 0 : utf8Compare(b, from) <= 0));
        return direction === 'forward' ? kept : kept.reverse();
      },
      compareBuckets: utf8Compare,
      bucketSource: (bucket) =>
        sliceSource<IndexHit>({
          id: '',
          store,
          table: userIndexTable,
          partition: { index_name: index, bucket },
          range: options.range,
          toNode: (row) => ({ ...hitFromRow(row), bucket }),
          rowOf: (h) => ({ value: h.value, user_id: h.userId, ts: h.ts }),
        }),
      bucketOf: (h) => h.bucket,
    });
    // seed 004: "if this is a problem, filter on read": a hit counts only if it is the
    // user's current entry (stale and duplicate entries from concurrent updates drop out).
    const filtered = filteredSource(source, async (hits) => {
      const users = await loadUsers(hits.map((h) => h.userId));
      return hits.map((h, i) => users[i]?.indexTs[index] === h.ts);
    });
    return pageFromSource(filtered, args, { connectionName, codec });
  }
}
