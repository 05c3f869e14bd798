/**
 * Users: creation with a unique username, profile updates, and reads by id or
 * username (batched per request by the loaders, through `readUsers` / `readUserIds`).
 * Users own the user row; the directory plans its index entries for them.
 */
import { newestOf, timestampAbove, type Clock } from '../../store/clock.js';
import type { IdSource } from '../../store/id-source.js';
import type { Mutation, Store } from '../../store/port.js';
import type { Row } from '../../store/table.js';
import { DomainError, badInput, checkText } from '../../errors.js';
import { requireOwnerOrAdmin, signedIn, type Actor } from '../actor.js';
import { deleteIfOwned } from '../../store/owned-rows.js';
import { changesOf, type IndexedField, type IndexedValues, type IndexPlan, type ProfileIndexes } from './profile-indexes.js';
import type { KeyLoader } from '../key-loader.js';
import { usersByUsernameTable, usersTable } from './users-tables.js';

/** A user as the API shows it. */
export interface User {
  readonly id: string;
  readonly username: string;
  readonly displayName: string;
  readonly createdAt: Date;
  readonly location: string | null;
  readonly lastName: string | null;
  readonly firstName: string | null;
  /**
   * The version of each indexed profile field: a new one each time the field is set
   * (null while it is unset). A directory entry counts only while its version is current.
   */
  readonly profileVersions: Readonly<Record<IndexedField, string | null>>;
  /**
   * The version of the user's name-index entries (name-index.ts): the write time (µs)
   * of the change that made them; null before any.
   */
  readonly nameVersion: bigint | null;
}

/** The profile fields a user can change. */
export type ProfileInput = { readonly displayName?: string | null; readonly firstName?: string | null } & IndexedValues;

/** The loaders Users reads and keeps true. */
export interface UserLoaders {
  readonly userById: KeyLoader<string, User | null>;
  readonly userIdByUsername: KeyLoader<string, string | null>;
}

/** What the feature needs. */
export interface UsersDeps {
  readonly store: Store;
  readonly actor: Actor | null;
  readonly loaders: UserLoaders;
  /** The indexes a profile change keeps (the directory, wired by the composition root). */
  readonly directory: ProfileIndexes;
  /** The process clock: a change's version and the write time of all its cells. */
  readonly clock: Clock;
  /** New ids and "now": fresh, or an idempotency key's plan (a redo makes the same user). */
  readonly ids: IdSource;
}

const USERNAME = /^[a-z0-9_]{3,32}$/;
const MAX_DISPLAY_NAME = 80;
const MAX_FIRST_NAME = 100;

/** Where each indexed field lives in the user row: its value, and its version. */
const PROFILE_COLUMNS: Record<IndexedField, { readonly value: string; readonly version: string }> = {
  location: { value: 'location', version: 'location_ts' },
  lastName: { value: 'last_name', version: 'last_name_ts' },
};

/** Check a username: 3-32 of a-z, 0-9 and underscore. */
export function checkUsername(argument: string, username: string): string {
  if (typeof username !== 'string' || !USERNAME.test(username)) {
    throw badInput(
      argument,
      `\`${argument}\` must be 3 to 32 characters of a-z, 0-9 and _, got ${JSON.stringify(String(username).slice(0, 40))}`,
    );
  }
  return username;
}

/** Check a display name (the rule of both creation and updates). */
function checkDisplayName(displayName: string): string {
  return checkText('displayName', displayName, 1, MAX_DISPLAY_NAME);
}

/** A first name as given: undefined (unchanged), null (cleared, from "") or the checked text. */
function checkFirstName(firstName: string | null | undefined): string | null | undefined {
  if (firstName === undefined || firstName === null) return undefined;
  return firstName === '' ? null : checkText('firstName', firstName, 1, MAX_FIRST_NAME);
}

/** Every mutation of a change at its version's write time, but those that carry their own. */
function stamped(mutations: readonly Mutation[], version: bigint): Mutation[] {
  return mutations.map((m) => (m.options?.timestamp !== undefined ? m : ({ ...m, options: { ...m.options, timestamp: version } } as Mutation)));
}

/** A user from a `users` row. */
export function userFromRow(row: Row): User {
  const column = (name: string) => (row[name] as string | null | undefined) ?? null;
  return {
    id: row.user_id as string,
    username: row.username as string,
    displayName: row.display_name as string,
    createdAt: row.created_at as Date,
    location: column(PROFILE_COLUMNS.location.value),
    lastName: column(PROFILE_COLUMNS.lastName.value),
    firstName: column('first_name'),
    profileVersions: { location: column(PROFILE_COLUMNS.location.version), lastName: column(PROFILE_COLUMNS.lastName.version) },
    nameVersion: (row.name_ts as bigint | null | undefined) ?? null,
  };
}

/** The user-row columns of the fields a plan changes. */
function profileColumns(plan: IndexPlan): Row {
  const columns: Row = {};
  for (const [field, change] of changesOf(plan)) {
    columns[PROFILE_COLUMNS[field].value] = change.value;
    columns[PROFILE_COLUMNS[field].version] = change.version;
  }
  return columns;
}

/** A user's indexed fields and their versions after a plan is written. */
function profileFields(user: User, plan: IndexPlan): Pick<User, IndexedField | 'profileVersions'> {
  const fields = { location: user.location, lastName: user.lastName };
  const versions = { ...user.profileVersions };
  for (const [field, change] of changesOf(plan)) {
    fields[field] = change.value;
    versions[field] = change.version;
  }
  return { ...fields, profileVersions: versions };
}

/** Every regular column of the user row: a change reads the write times of them all. */
const USER_CELLS = Object.keys(usersTable.columns).filter((c) => !usersTable.partitionKey.includes(c));

/** A user as a change reads them: the row, and the newest write time of its cells. */
export interface UserForChange {
  readonly user: User;
  /** The newest write time (µs) of the row's cells: a change writes above it. */
  readonly writtenAt: bigint | null;
}

/**
 * A user and the newest write time of their row, for a change of the row (one round
 * trip, at the consistency writes use); null for an unknown user. The change's
 * timestamp goes above `writtenAt` (`timestampAbove`), so it is ordered after every
 * change acknowledged before it, whichever server's clock wrote that one.
 */
export async function readUserForChange(store: Store, userId: string): Promise<UserForChange | null> {
  const cells = await store.readCells(usersTable, { user_id: userId }, USER_CELLS);
  if (!cells.row) return null;
  return { user: userFromRow(cells.row), writtenAt: newestOf(Object.values(cells.writetime)) };
}

/** Users by id, in the order asked, null for unknown ids (one round trip: the loader's batch). */
export async function readUsers(store: Store, ids: readonly string[]): Promise<Array<User | null>> {
  const rows = await store.getMany(
    usersTable,
    ids.map((user_id) => ({ user_id })),
  );
  return rows.map((r) => (r ? userFromRow(r) : null));
}

/** User ids by username, in the order asked, null for unknown names (one round trip). */
export async function readUserIds(store: Store, usernames: readonly string[]): Promise<Array<string | null>> {
  const rows = await store.getMany(
    usersByUsernameTable,
    usernames.map((username) => ({ username })),
  );
  return rows.map((r) => (r ? (r.user_id as string) : null));
}

/** The users feature. */
export class Users {
  constructor(private readonly deps: UsersDeps) {}

  /**
   * Create a user: an admin may create anyone, a member only the user named by their
   * token. A taken name is CONFLICT.
   *
   * Ordered so that a process dying between any two calls leaves no name claimed
   * without its user (no recovery needed):
   *   1. the user row, under a fresh random id: unreachable, since nothing names it yet;
   *   2. the username claim (insert-if-not-exists), which makes it reachable: from here
   *      on the name has its user;
   *   3. the directory fields, with their index entries (one logged batch), last, so a
   *      directory search never finds a user whose name was not claimed.
   * A crash after 1 leaves a row nothing can reach; a crash after 2 a user without the
   * directory fields of this request (which was never acknowledged).
   */
  async create(input: { username: string; displayName: string; firstName?: string | null } & IndexedValues, now: Date = this.deps.ids.now()): Promise<User> {
    const actor = signedIn(this.deps.actor);
    if (!actor.isAdmin && actor.username !== input.username) {
      throw new DomainError('FORBIDDEN', "a token may only create the user named by its subject (or be an admin's)");
    }
    const { store, loaders } = this.deps;
    const username = checkUsername('username', input.username);
    const displayName = checkDisplayName(input.displayName);
    const firstName = checkFirstName(input.firstName) ?? null;
    const id = this.deps.ids.uuid();
    const version = this.deps.clock.nowMicros();
    // Validate the indexed fields before claiming anything.
    const index = this.deps.directory.plan(id, input, []);
    const base: Row = { user_id: id, username, display_name: displayName, created_at: now };
    await store.upsert(usersTable, base);
    const claim = await store.insertIfNotExists(usersByUsernameTable, { username, user_id: id });
    // The name held by this very id is this key's own earlier attempt (a redo): go on.
    if (!claim.applied && claim.existing?.user_id !== id) {
      // Only this request knows the id: removing the row is tidiness, not correctness.
      await store.delete(usersTable, { user_id: id }).catch(() => undefined);
      throw new DomainError('CONFLICT', `the username "${username}" is taken`, 'username');
    }
    const fields: Row = { ...profileColumns(index), ...(firstName !== null && { first_name: firstName }) };
    const after = { id, username, displayName, createdAt: now, ...profileFields(userFromRow(base), index), firstName };
    // The name index's entries, when the user has a name (name-index.ts).
    const names = this.deps.directory.nameMutations(null, after, [], version);
    if (names.length > 0) fields.name_ts = version;
    if (index.mutations.length > 0 || names.length > 0) {
      try {
        await this.deps.directory.beforeWrite(index);
        // Every cell at the change's version: its fields agree whatever the order of arrival.
        await store.batch(stamped([{ kind: 'upsert', table: usersTable, row: { user_id: id, ...fields } }, ...index.mutations, ...names], version));
        await this.deps.directory.afterWrite(index);
      } catch (err) {
        // Not acknowledged: give the name back (the claim is ours) and drop the row.
        await deleteIfOwned(store, usersByUsernameTable, { username }, 'user_id', id).catch(() => undefined);
        await store.delete(usersTable, { user_id: id }).catch(() => undefined);
        throw err;
      }
    }
    const row: Row = { ...base, ...fields };
    const user = userFromRow(row);
    loaders.userById.prime(user.id, user);
    loaders.userIdByUsername.prime(user.username, user.id);
    return user;
  }

  /**
   * Update a profile: the user themself or an admin. `undefined` or null leaves a field
   * unchanged; "" clears a location or last name. NOT_FOUND for an unknown user.
   */
  async update(userId: string, input: ProfileInput): Promise<User> {
    await requireOwnerOrAdmin(this.deps.actor, userId, 'only the user or an admin may update a profile');
    const { store, loaders, directory } = this.deps;
    const read = await readUserForChange(store, userId);
    if (!read) throw new DomainError('NOT_FOUND', 'no such user', 'id');
    const { user } = read;
    // The change's version: above every write time of the row, so this change wins over
    // every change acknowledged before it began, whatever the clocks of the servers that
    // made them (docs/how-it-works.md, "Ordering writes across servers"). Taken before
    // the entries are read (name-index.ts: what makes a stale name entry provably recent).
    const version = timestampAbove(this.deps.clock, read.writtenAt);
    // seed 004: the old values come from the entries table, not from the user row.
    const entries = await directory.currentEntries(userId);
    const plan = directory.plan(userId, input, entries);
    // The username never changes: rewritten at the version, it keeps the time of the
    // row's last change readable even when the change only cleared cells (a cleared
    // cell is a tombstone, which has no WRITETIME).
    const row: Row = { user_id: userId, username: user.username, ...profileColumns(plan) };
    let displayName = user.displayName;
    if (input.displayName !== undefined && input.displayName !== null) {
      displayName = checkDisplayName(input.displayName);
      row.display_name = displayName;
    }
    const firstName = checkFirstName(input.firstName);
    if (firstName !== undefined) row.first_name = firstName;
    const after = { ...user, displayName, ...profileFields(user, plan), firstName: firstName === undefined ? user.firstName : firstName };
    // Everything a name entry shows may have changed: a new version of the name index's
    // entries, replacing every version the entries table lists.
    const shown = [input.displayName, input.firstName, input.lastName, input.location].some((v) => v !== undefined && v !== null);
    const names = shown ? directory.nameMutations(user, after, entries, version) : [];
    if (names.length > 0) row.name_ts = version;
    // One logged batch, every cell at the change's version: re-running it is harmless
    // (same keys, same values), and concurrent changes resolve field by field alike.
    await directory.beforeWrite(plan);
    await store.batch(stamped([{ kind: 'upsert', table: usersTable, row }, ...plan.mutations, ...names], version));
    await directory.afterWrite(plan);
    const updated: User = { ...after, nameVersion: names.length > 0 ? version : user.nameVersion };
    loaders.userById.clear(userId);
    loaders.userById.prime(userId, updated);
    return updated;
  }

  /**
   * A profile field only members read (where someone lives, their last name): the
   * user themself, admins, and tokens of existing users. Anonymous callers and tokens
   * of no user get FORBIDDEN (the GraphQL field is then null, the rest of the answer stands).
   */
  async memberOnlyField(user: User, field: IndexedField | 'firstName'): Promise<string | null> {
    const actor = this.deps.actor;
    if (!actor) throw new DomainError('FORBIDDEN', `\`${field}\` is visible to members only: send a member's token`);
    if (!actor.isAdmin && actor.username !== user.username) await actor.userId();
    return user[field];
  }

  /** Users by id, in the order asked, null for unknown ids (one round trip). */
  byIds(ids: readonly string[]): Promise<Array<User | null>> {
    return readUsers(this.deps.store, ids);
  }

  /** User ids by username, in the order asked, null for unknown names (one round trip). */
  idsByUsername(usernames: readonly string[]): Promise<Array<string | null>> {
    return readUserIds(this.deps.store, usernames);
  }
}
