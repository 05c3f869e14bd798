/**
 * Search by name (`usersByName`): seed 004's closing ideas, built. The index is
 * derived from two columns (first and last name), folded, multi-term, and carries the
 * values a result page shows, so a page is one slice of one partition.
 *
 * Derived and folded values. A name is folded for matching and ordering: Unicode NFKD,
 * combining marks stripped, a few letters NFKD keeps (ø, ł, ß, æ, …) spelled out, lower
 * case: "Müller" is "muller", "Zoë" is "zoe". Its parts are the words of the first and
 * the last name (split at spaces and hyphens): "Anne-Marie van Dijk" has the parts anne,
 * marie, van, dijk.
 *
 * Entries. For every part, one entry under each of its first one, two and three folded
 * characters (the entry's partition, `prefix`), clustered by the "last first" form
 * (folded last name, then folded first name, then the user id and the entry's version),
 * so every partition is in result order. Each entry carries the "first last" parts it
 * matches against and the denormalized values a page shows (username, display name,
 * location, the names as written, the creation time).
 *
 * A query is one to three terms; each must be a prefix of a different part. It is read
 * from the partition of its longest term's first (up to) three characters, in order, and
 * an entry is kept if its parts take every term. Entries of other partitions never
 * belong: a matching part starts with those characters.
 *
 * Updates, without locks (seed 004). A profile change that touches what an entry holds
 * (names, display name, location) writes a new version of all the user's entries, in the
 * change's logged batch: the version is a timestamp above the user row's newest write
 * time (read with the row) and taken before the entries are read, every cell of the
 * change (the user row's too, `name_ts` naming the version) is written at it, and the entries of the versions the entries table lists (`user_index_entries`,
 * index `name`) are deleted at their own version plus one, a tombstone no late write of
 * theirs can beat, whichever server's clock wrote it. Two changes of one user made
 * concurrently may each miss the other's entries: the older version is left behind.
 *
 * Stale entries, filtered without reading the user. Every change marks the user on the
 * sweeper's work list (windowed-job.ts); once its window has closed, the sweeper reads
 * the user and their entries (all landed by then) and deletes every version but the
 * user row's, rewriting that one if its values are not the user row's (two concurrent
 * changes of different fields). A stale version exists only beside a change that did
 * not see it, which read the entries table before that version landed: so its own
 * version is at most the clock-skew bound S plus the write timeout T above the stale
 * one (a version raised above a write time it read is still no higher than the fastest
 * clock of the cluster, since every write time came from one). Hence an entry whose version is more than S + T below what the sweeper has
 * cleaned (its progress) is current and its values are the user's, and a page of such
 * entries is served from the slice alone. A newer entry (a change of the last few
 * seconds) is checked against the user row, through the request's loader (one batch
 * for the page), and its node is then the user as read.
 */
import type { ClusterSettings } from '../../config.js';
import { badInput, checkCharacters } from '../../errors.js';
import { sliceSource } from '../../paging/slice-source.js';
import { filteredSource } from '../../paging/filtered-source.js';
import { pageFromSource } from '../../paging/engine.js';
import type { CursorCodec } from '../../paging/cursor.js';
import type { Page, PageArgs } from '../../paging/types.js';
import { timestampAbove, type Clock } from '../../store/clock.js';
import type { Mutation, Store } from '../../store/port.js';
import type { Row } from '../../store/table.js';
import { microsOfTimeuuid, timeuuidOfMicros } from '../../store/timeuuid.js';
import { markMutation, type WindowedJobSpec } from '../../background/windowed-job.js';
import type { KeyLoader } from '../key-loader.js';
import type { NamedProfile } from '../users/profile-indexes.js';
import type { User, UserForChange } from '../users/users.js';
import { usersTable } from '../users/users-tables.js';
import { userIndexEntriesTable, userNameIndexTable } from './directory-tables.js';

/** The sweeper's job name (marks and progress). */
export const NAME_SWEEP_JOB = 'names';
/** The entries table's index name for this index. */
const INDEX = 'name';
/** Entries per part: under its first one, two and three characters. */
const PREFIX_LENGTHS = [1, 2, 3];
const MAX_TERMS = 3;
const MAX_QUERY_LENGTH = 200;

/** A result of a name search: the user, as the entry showed them or, for a recent entry, to be read. */
export interface NameHit {
  readonly userId: string;
  /** The user as the entry holds them; absent when the node must be read (a recent entry, checked). */
  readonly user?: User;
}

/** One entry as read from a partition. */
interface NameEntry {
  readonly version: bigint;
  /** The folded parts the entry matches against. */
  readonly parts: readonly string[];
  readonly profile: NamedProfile;
}

/** Letters NFKD leaves whole, spelled as a reader of Latin script would type them. */
const SPELLED: Readonly<Record<string, string>> = {
  ø: 'o', đ: 'd', ð: 'd', ħ: 'h', ı: 'i', ł: 'l', ŀ: 'l', ß: 'ss', æ: 'ae', œ: 'oe', þ: 'th', ŧ: 't', ĸ: 'k',
};

/** Fold a name for matching and ordering: NFKD, no combining marks, spelled out, lower case. */
export function foldName(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[øđðħıłŀßæœþŧĸ]/gu, (c) => SPELLED[c] ?? c)
    .trim();
}

/** The words of a folded name, split at spaces and hyphens. */
function wordsOf(folded: string): string[] {
  return folded.split(/[\s\p{Pd}]+/u).filter((w) => w.length > 0);
}

/** A user's folded name parts, first name first ("first last"). */
export function namePartsOf(firstName: string | null, lastName: string | null): string[] {
  return [...wordsOf(foldName(firstName ?? '')), ...wordsOf(foldName(lastName ?? ''))];
}

/** The first `n` code points of a part. */
function head(part: string, n: number): string {
  return [...part].slice(0, n).join('');
}

/** The partitions a user's entries go in: every part's first one, two and three characters. */
function prefixesOf(parts: readonly string[]): string[] {
  return [...new Set(parts.flatMap((p) => PREFIX_LENGTHS.filter((n) => n <= [...p].length || n === 1).map((n) => head(p, n))))];
}

/**
 * The terms of a query: folded, split as names are. One to three, else BAD_USER_INPUT
 * stating the rule and what was received; nothing is read.
 */
export function parseNameQuery(query: string): string[] {
  checkCharacters('query', query);
  if (query.length > MAX_QUERY_LENGTH) {
    throw badInput('query', `\`query\` must be at most ${MAX_QUERY_LENGTH} characters, got ${query.length}`);
  }
  const terms = wordsOf(foldName(query));
  if (terms.length < 1 || terms.length > MAX_TERMS) {
    throw badInput(
      'query',
      `\`query\` must hold one to three name terms separated by spaces, each the start of a different part of the name, got ${terms.length}: ${JSON.stringify(query.slice(0, 60))}`,
    );
  }
  return terms;
}

/** Whether every term is a prefix of a different part (a matching, found by trying: at most 3 terms). */
export function matchesTerms(terms: readonly string[], parts: readonly string[]): boolean {
  const used = new Set<number>();
  const assign = (t: number): boolean => {
    if (t === terms.length) return true;
    for (let p = 0; p < parts.length; p++) {
      if (used.has(p) || !parts[p]!.startsWith(terms[t]!)) continue;
      used.add(p);
      if (assign(t + 1)) return true;
      used.delete(p);
    }
    return false;
  };
  return assign(0);
}

/** One version of a user's entries, as the entries table lists it. */
interface NameVersion {
  readonly version: bigint;
  /** The entries table's row (its clustering `ts`). */
  readonly ts: string;
  readonly profile: NamedProfile;
}

/** What the entries table holds for a version: everything its entries were written from, in a fixed order. */
function versionPayload(p: NamedProfile): string {
  const { id, username, displayName, createdAt, location, firstName, lastName } = p;
  return JSON.stringify({ id, username, displayName, createdAt: createdAt.getTime(), location, firstName, lastName });
}

function versionFromEntry(entry: { ts: string; value: string }): NameVersion {
  const raw = JSON.parse(entry.value) as Omit<NamedProfile, 'createdAt'> & { createdAt: number };
  return { version: microsOfTimeuuid(entry.ts), ts: entry.ts, profile: { ...raw, createdAt: new Date(raw.createdAt) } };
}

/** Whether a profile has a name to index. */
export function isNamed(p: Pick<NamedProfile, 'firstName' | 'lastName'>): boolean {
  return namePartsOf(p.firstName, p.lastName).length > 0;
}

/** The index rows of one version of a profile's entries: each row's primary key, and the row. */
function entryRows(p: NamedProfile, version: bigint): Array<{ key: Row; row: Row }> {
  const parts = namePartsOf(p.firstName, p.lastName);
  const sortKey = { last_key: foldName(p.lastName ?? ''), first_key: foldName(p.firstName ?? ''), user_id: p.id, version };
  const cells = {
    parts: parts.join(' '),
    username: p.username,
    display_name: p.displayName,
    location: p.location,
    first_name: p.firstName,
    last_name: p.lastName,
    created_at: p.createdAt,
  };
  return prefixesOf(parts).map((prefix) => ({ key: { prefix, ...sortKey }, row: { prefix, ...sortKey, ...cells } }));
}

/**
 * The mutations that make `next` (or nothing, when it has no name) the user's entries at
 * `version`, replacing every version in `current`: for the change's logged batch (see
 * the file comment). Marks the user for the sweeper.
 */
export function nameIndexMutations(next: NamedProfile, current: ReadonlyArray<{ ts: string; value: string }>, version: bigint): Mutation[] {
  const out = versionDeletions(next.id, current);
  if (isNamed(next)) {
    const options = { timestamp: version };
    for (const { row } of entryRows(next, version)) out.push({ kind: 'upsert', table: userNameIndexTable, row, options });
    out.push({
      kind: 'upsert',
      table: userIndexEntriesTable,
      row: { user_id: next.id, index_name: INDEX, ts: timeuuidOfMicros(version), value: versionPayload(next), bucket: '' },
      options,
    });
  }
  // Tagged with the version: a late change beside another of the user in its window is found.
  out.push(markMutation(NAME_SWEEP_JOB, next.id, Number(version / 1000n), String(version)));
  return out;
}

/**
 * The deletes of every version in `versions`: its entries and its row of the entries
 * table, at the version plus one, above every write of that version wherever it came from.
 */
function versionDeletions(userId: string, versions: ReadonlyArray<{ ts: string; value: string }>): Mutation[] {
  const out: Mutation[] = [];
  for (const old of versions.map(versionFromEntry)) {
    const options = { timestamp: old.version + 1n };
    for (const { key } of entryRows(old.profile, old.version)) out.push({ kind: 'delete', table: userNameIndexTable, key, options });
    out.push({ kind: 'delete', table: userIndexEntriesTable, key: { user_id: userId, index_name: INDEX, ts: old.ts }, options });
  }
  return out;
}

/** The profile a name entry shows. */
function profileFromRow(row: Row): NamedProfile {
  return {
    id: row.user_id as string,
    username: row.username as string,
    displayName: row.display_name as string,
    createdAt: row.created_at as Date,
    location: (row.location as string | null) ?? null,
    firstName: (row.first_name as string | null) ?? null,
    lastName: (row.last_name as string | null) ?? null,
  };
}

/** The user as the name index needs them: their profile and the version their row names. */
export interface NamedUser extends NamedProfile {
  readonly nameVersion: bigint | null;
}

/** What the name index needs to read. */
export interface NameIndexDeps {
  readonly store: Store;
  readonly codec: CursorCodec;
  /** The request's user loader: recent entries are checked against the user row. */
  readonly users: Pick<KeyLoader<string, NamedUser | null>, 'load'>;
  readonly cluster: ClusterSettings;
  /** The sweeper's progress as this process last confirmed it (ms), or null. */
  readonly swept: () => number | null;
  /** The request's signal (`PagingOptions.signal`). */
  readonly signal?: AbortSignal;
}

/**
 * The user an entry shows, without reading them. Its versions of the other indexes are
 * unknown (null): such a user is never checked against those indexes' entries.
 */
function userOfEntry(entry: NameEntry): User {
  return { ...entry.profile, profileVersions: { location: null, lastName: null }, nameVersion: entry.version };
}

/**
 * One page of the users whose name parts take every term of `query`, by last name,
 * first name and user id (see the file comment). The caller checks who may search.
 */
export async function pageByName(deps: NameIndexDeps, query: string, args: PageArgs): Promise<Page<NameHit>> {
  const terms = parseNameQuery(query);
  const longest = terms.reduce((a, b) => ([...b].length > [...a].length ? b : a));
  // Versions below this are current and hold the user's values (see the file comment).
  const swept = deps.swept();
  const trustedBelow = swept === null ? null : (BigInt(swept) - BigInt(deps.cluster.clockSkewMs + deps.cluster.writeTimeoutMs)) * 1000n;
  const trusted = (e: NameEntry) => trustedBelow !== null && e.version < trustedBelow;
  const source = sliceSource<NameEntry>({
    id: `Query.usersByName:${terms.join(' ')}`,
    store: deps.store,
    table: userNameIndexTable,
    partition: { prefix: head(longest, 3) },
    toNode: (row) => ({ version: row.version as bigint, parts: (row.parts as string).split(' '), profile: profileFromRow(row) }),
    rowOf: (e) => ({ last_key: foldName(e.profile.lastName ?? ''), first_key: foldName(e.profile.firstName ?? ''), user_id: e.profile.id, version: e.version }),
  });
  const filtered = filteredSource(source, async (entries) => {
    const matching = entries.map((e) => matchesTerms(terms, e.parts));
    const users = await Promise.all(entries.map((e, i) => (matching[i] && !trusted(e) ? deps.users.load(e.profile.id) : null)));
    return entries.map((e, i) => {
      if (!matching[i] || trusted(e)) return matching[i]!;
      const user = users[i];
      return !!user && user.nameVersion === e.version && matchesTerms(terms, namePartsOf(user.firstName, user.lastName));
    });
  });
  const page = await pageFromSource(filtered, args, { connectionName: 'usersByName', codec: deps.codec, signal: deps.signal });
  // A recent entry's node is the user as read (the loader has them): they may be newer.
  return { ...page, edges: page.edges.map((e) => ({ cursor: e.cursor, node: { userId: e.node.profile.id, ...(trusted(e.node) && { user: userOfEntry(e.node) }) } })) };
}

/** The entries table's rows of this index for a user (every version it lists). */
export async function nameEntriesOf(store: Store, userId: string): Promise<Array<{ ts: string; value: string }>> {
  const rows = await store.slice(userIndexEntriesTable, {
    partition: { user_id: userId },
    lower: { values: [INDEX], inclusive: true },
    upper: { values: [INDEX], inclusive: true },
    limit: 1_000,
  });
  return rows.map((r) => ({ ts: r.ts as string, value: r.value as string }));
}

/** Whether two profiles show the same (what an entry holds). */
function sameProfile(a: NamedProfile, b: NamedProfile): boolean {
  return versionPayload(a) === versionPayload(b);
}

/**
 * The sweeper (see the file comment): for each user marked in a closed window, keep
 * only the version the user row names, and make it hold the user's values. Idempotent:
 * what it deletes stays deleted (tombstones at each version plus one), and what it
 * writes is a fresh version of what the user row holds, itself marked and swept again.
 */
export function nameSweepJob(deps: SweepDeps): WindowedJobSpec {
  return {
    job: NAME_SWEEP_JOB,
    async handle(userIds) {
      for (const userId of userIds) await sweepUser(deps, userId);
    },
    // A change that landed late (its entries, its row): sweeping the user again, as
    // read now, converges whatever the order (the sweep reads the user and every
    // version the entries table lists, and rewrites and marks anew what disagrees).
    async handleLate(userIds, { store }) {
      const counted = { ...deps, store, readUser: (id: string) => deps.readUser(id, store) };
      for (const userId of userIds) await sweepUser(counted, userId);
    },
  };
}

/** What the sweeper needs: the store, the process clock, and a user with their row's newest write time. */
export interface SweepDeps {
  readonly store: Store;
  readonly clock: Clock;
  /** `readUserForChange` (users.ts): the row, and the newest write time of its cells. */
  readonly readUser: (userId: string, store?: Store) => Promise<UserForChange | null>;
}

/** Sweep one user's entries (the sweeper, and `--reindex` for users written before the index). */
export async function sweepUser(deps: SweepDeps, userId: string): Promise<'kept' | 'rewritten' | 'none'> {
  const { store } = deps;
  const [read, entries] = await Promise.all([deps.readUser(userId), nameEntriesOf(store, userId)]);
  if (!read) return 'none';
  const user = read.user;
  const versions = entries.map(versionFromEntry);
  const named = isNamed(user);
  const current = versions.find((v) => v.version === user.nameVersion);
  if ((named && current && sameProfile(current.profile, user)) || (!named && !current)) {
    const stale = entries.filter((e) => microsOfTimeuuid(e.ts) !== user.nameVersion);
    if (stale.length === 0) return 'kept';
    await store.batch(versionDeletions(userId, stale));
    return 'kept';
  }
  // The version the row names is missing or holds other values: write the row's values
  // as a new version, named by the row, every other version gone. Above the row's
  // newest write time, so the row names it whatever this server's clock says.
  const version = timestampAbove(deps.clock, read.writtenAt);
  await store.batch([
    ...nameIndexMutations(user, entries, version),
    { kind: 'upsert', table: usersTable, row: { user_id: userId, name_ts: version }, options: { timestamp: version } },
  ]);
  return 'rewritten';
}
