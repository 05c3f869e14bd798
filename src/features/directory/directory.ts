/**
 * The user directory (seed 004): users searchable by location and by last-name prefix
 * through hand-built composite indexes. For a profile change (Users own the user row
 * and write it) the directory plans the index writes: given the user's old entries,
 * read from the entries table, delete them and their index rows and write new ones,
 * in the same logged batch as the user row. Each new entry carries the version of its
 * field, which the user row names as current. No lock: concurrent updates may leave
 * stale entries (false positives), which readers filter by checking each hit against
 * the user's current version, read through the request's user loader.
 */
import type { Logger } from 'pino';
import { badInput, checkCharacters, checkText } from '../../errors.js';
import { requireMember, type Actor } from '../actor.js';
import { bucketedSource } from '../../paging/bucketed-source.js';
import type { CursorCodec } from '../../paging/cursor.js';
import { pageFromSource } from '../../paging/engine.js';
import { filteredSource } from '../../paging/filtered-source.js';
import { sliceSource } from '../../paging/slice-source.js';
import type { Direction, Page, PageArgs } from '../../paging/types.js';
import type { ClusteringRange, Mutation, Store } from '../../store/port.js';
import type { Row } from '../../store/table.js';
import { newTimeuuid } from '../../store/timeuuid.js';
import type { KeyLoader } from '../key-loader.js';
import type { SagaDefinition, SagaRunner } from '../../saga/saga-runner.js';
import { ensureRegistered, listRegistered, pruneStep, type BucketRegistry } from '../bucket-registry.js';
import { allRowsOf } from '../../paging/partition-chunks.js';
import type { ClusterSettings } from '../../config.js';
import type { IndexedField, IndexedValues, IndexEntry, IndexName, IndexPlan, FieldChange, NamedProfile, ProfileIndexes } from '../users/profile-indexes.js';
import type { User } from '../users/users.js';
import { isNamed, nameIndexMutations, pageByName, type NameHit } from './name-index.js';
import { userIndexBucketsTable, userIndexEntriesTable, userIndexTable } from './directory-tables.js';

/** One index entry as read from the index. */
export interface IndexHit {
  readonly userId: string;
  readonly value: string;
  readonly ts: string;
  readonly bucket: string;
}

const LOCATION_SHARDS = ['0', '1', '2', '3'];
/** Entries per slice when reading a user's entries. */
const ENTRIES_SLICE = 100;

/** The registry of last-name buckets: entries in user_index_buckets, rows in user_index. */
export const lastNameBuckets: BucketRegistry = {
  table: userIndexBucketsTable,
  partition: { index_name: 'last_name' },
  bucketTable: userIndexTable,
  bucketPartition: (bucket) => ({ index_name: 'last_name', bucket }),
};

/** Up to `limit` buckets of a connection from `from` (inclusive), in `direction`. */
type ListBuckets = (from: string | undefined, direction: Direction, limit: number) => Promise<string[]>;
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
  { index: 'location' as const, field: 'location' as const },
  { index: 'last_name' as const, field: 'lastName' as const },
];

/** The version of each indexed field a user has now (a `User` has them). */
export interface VersionedProfile {
  readonly profileVersions: { readonly [F in IndexedField]: string | null };
}

/** What the directory needs. */
export interface DirectoryDeps {
  readonly store: Store;
  readonly codec: CursorCodec;
  /** The request's signal: a page stops reading once its client has gone (`PagingOptions.signal`). */
  readonly signal?: AbortSignal;
  /** Who searches: the directory is for members (where people live is personal). */
  readonly actor: Actor | null;
  /** The request's user loader: hits are checked against their user's current versions. */
  readonly users: Pick<KeyLoader<string, User | null>, 'load'>;
  /** The clock-skew and write-timeout bounds (which name entries are recent). */
  readonly cluster: ClusterSettings;
  /** The name sweeper's progress as this process last confirmed it (ms), or null. */
  readonly nameSwept: () => number | null;
  /** Runs the prunes of emptied buckets (as sagas: recovery finishes a failed one). */
  readonly sagas: Pick<SagaRunner, 'run'>;
  /** Where a failed prune is reported. */
  readonly logger?: Pick<Logger, 'warn'>;
}

/**
 * The prune of a last-name bucket a rename emptied, as a saga: a prune that deleted the
 * entry must check the bucket again even if its process dies or its store fails
 * (bucket-registry.ts), so a failure leaves it in the log (a pivot before the first
 * step: nothing to compensate) and recovery runs it again, whole.
 */
export const pruneLastNameBucketSaga: SagaDefinition<{ bucket: string }> = {
  kind: 'pruneLastNameBucket',
  recovery: 'forward',
  pivot: -1,
  steps: (store, env) => [{ name: 'prune the bucket if it emptied', run: (p) => pruneStep(store, lastNameBuckets, p.bucket, env.onRegistryPrune) }],
};

/** The directory's sagas, for the saga registry. */
export const directorySagas = [pruneLastNameBucketSaga];

/** The user directory. */
export class Directory implements ProfileIndexes {
  constructor(private readonly deps: DirectoryDeps) {}

  /**
   * The index writes for new profile values, given the user's current entries, and
   * the values and versions the user row must hold, for the same logged batch.
   */
  plan(userId: string, values: IndexedValues, current: readonly IndexEntry[]): IndexPlan {
    const fields: { [F in IndexedField]?: FieldChange } = {};
    const mutations: Mutation[] = [];
    const bucketsWritten: string[] = [];
    const bucketsLeft: string[] = [];
    for (const f of FIELDS) {
      const raw = values[f.field];
      if (raw === undefined || raw === null) continue;
      const display = raw === '' ? null : checkText(f.field, raw, 1, MAX_VALUE_LENGTH);
      if (display?.includes(TOP)) throw badInput(f.field, `\`${f.field}\` must not contain U+10FFFF`);
      // seed 004: delete the old entries and their index rows…
      for (const old of current.filter((e) => e.index === f.index)) {
        if (f.index === 'last_name') bucketsLeft.push(old.bucket);
        mutations.push(
          { kind: 'delete', table: userIndexEntriesTable, key: { user_id: userId, index_name: f.index, ts: old.ts } },
          {
            kind: 'delete',
            table: userIndexTable,
            key: { index_name: f.index, bucket: old.bucket, value: old.value, user_id: userId, ts: old.ts },
          },
        );
      }
      if (display === null) {
        fields[f.field] = { value: null, version: null };
        continue;
      }
      // …and write the new ones, with a fresh version naming them current.
      const key = indexKeyOf(display);
      const ts = newTimeuuid();
      const bucket = bucketOf(f.index, key, userId);
      fields[f.field] = { value: display, version: ts };
      mutations.push(
        { kind: 'upsert', table: userIndexEntriesTable, row: { user_id: userId, index_name: f.index, ts, value: key, bucket } },
        { kind: 'upsert', table: userIndexTable, row: { index_name: f.index, bucket, value: key, user_id: userId, ts } },
      );
      // Registered around the batch, with Paxos (bucket-registry.ts), not inside it.
      if (f.index === 'last_name') bucketsWritten.push(bucket);
    }
    return { fields, mutations, bucketsWritten, bucketsLeft: [...new Set(bucketsLeft)].filter((b) => !bucketsWritten.includes(b)) };
  }

  /** A user's current index entries (seed 004: the old values come from here, not the user row). */
  async currentEntries(userId: string): Promise<IndexEntry[]> {
    // One entry per index, more only after concurrent updates: read in small slices.
    const rows = await allRowsOf(this.deps.store, userIndexEntriesTable, { user_id: userId }, { chunk: ENTRIES_SLICE });
    return rows.map((r) => ({ index: r.index_name as IndexName, ts: r.ts as string, value: r.value as string, bucket: r.bucket as string }));
  }

  /** Register the buckets a plan writes into, before its batch (bucket-registry.ts, w1). */
  async beforeWrite(plan: IndexPlan): Promise<void> {
    await Promise.all(plan.bucketsWritten.map((b) => ensureRegistered(this.deps.store, lastNameBuckets, b)));
  }

  /**
   * After a plan's batch: register its buckets again (w3: a prune may have dropped one
   * meanwhile), then drop the buckets it left if they emptied. The prune does not fail
   * the update: until recovery finishes it, a bucket keeps an extra entry, which costs
   * paging one empty read.
   */
  async afterWrite(plan: IndexPlan): Promise<void> {
    const { store, sagas, logger } = this.deps;
    await Promise.all(plan.bucketsWritten.map((b) => ensureRegistered(store, lastNameBuckets, b)));
    await Promise.all(
      plan.bucketsLeft.map((bucket) =>
        sagas.run(pruneLastNameBucketSaga, { bucket }).catch((err: unknown) => logger?.warn({ err, bucket }, 'pruning a last-name bucket failed')),
      ),
    );
  }

  /**
   * The name index's mutations of a profile change (name-index.ts): `after`'s entries at
   * `version`, replacing every name version in `current`; none when neither profile has
   * a name and there is no version to replace.
   */
  nameMutations(before: NamedProfile | null, after: NamedProfile, current: readonly IndexEntry[], version: bigint): Mutation[] {
    const versions = current.filter((e) => e.index === 'name');
    if (!(before && isNamed(before)) && !isNamed(after) && versions.length === 0) return [];
    return nameIndexMutations(after, versions, version);
  }

  /** Users whose location is `location` (case-insensitive), by user id. */
  async byLocation(location: string, args: PageArgs): Promise<Page<IndexHit>> {
    await requireMember(this.deps.actor);
    const key = indexKeyOf(checkText('location', location, 1, MAX_VALUE_LENGTH));
    const buckets = LOCATION_SHARDS.map((s) => `${key}#${s}`);
    const listBuckets: ListBuckets = async (from, direction, limit) => {
      const ordered = direction === 'forward' ? buckets : [...buckets].reverse();
      const start = from === undefined ? 0 : Math.max(0, ordered.indexOf(from));
      return ordered.slice(start, start + limit);
    };
    return this.page('location', `Query.usersByLocation:${key}`, 'usersByLocation', args, { listBuckets, range: {} });
  }

  /** Users whose last name starts with `prefix` (case-insensitive), by last name then id. */
  async byLastName(prefix: string, args: PageArgs): Promise<Page<IndexHit>> {
    await requireMember(this.deps.actor);
    if (prefix.length > MAX_VALUE_LENGTH) {
      throw badInput('prefix', `\`prefix\` must be at most ${MAX_VALUE_LENGTH} characters, got ${prefix.length}`);
    }
    const key = indexKeyOf(checkCharacters('prefix', prefix));
    const range = key === '' ? {} : { lower: { values: [key], inclusive: true }, upper: { values: [key + TOP], inclusive: true } };
    const chars = [...key];
    // A two-letter prefix names its bucket; a shorter one walks the registry, lazily.
    const listBuckets: ListBuckets =
      chars.length >= 2
        ? async (from, direction) => {
            const bucket = chars.slice(0, 2).join('');
            return from === undefined || (direction === 'forward' ? utf8Compare(bucket, from) >= 0 : utf8Compare(bucket, from) <= 0) ? [bucket] : [];
          }
        : (from, direction, limit) =>
            listRegistered(this.deps.store, lastNameBuckets, from, direction, limit, key === '' ? {} : { lower: { values: [key], inclusive: true }, upper: { values: [key + TOP], inclusive: true } });
    return this.page('last_name', `Query.usersByLastName:${key}`, 'usersByLastName', args, { listBuckets, range });
  }

  /**
   * Users whose name has a part starting with each term of `query` (one to three terms,
   * each a different part), by last name, first name and user id: name-index.ts.
   */
  async byName(query: string, args: PageArgs): Promise<Page<NameHit>> {
    await requireMember(this.deps.actor);
    const { store, codec, users, cluster, nameSwept, signal } = this.deps;
    return pageByName({ store, codec, users, cluster, swept: nameSwept, signal }, query, args);
  }

  private page(
    index: IndexName,
    id: string,
    connectionName: string,
    args: PageArgs,
    options: { listBuckets: ListBuckets; range: ClusteringRange },
  ): Promise<Page<IndexHit>> {
    const { store, codec, users, signal } = this.deps;
    const field = FIELDS.find((f) => f.index === index)!.field;
    const source = bucketedSource<IndexHit>({
      id,
      listBuckets: options.listBuckets,
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
      const found = await Promise.all(hits.map((h) => users.load(h.userId)));
      return hits.map((h, i) => found[i]?.profileVersions[field] === h.ts);
    });
    return pageFromSource(filtered, args, { connectionName, codec, signal });
  }
}
