/**
 * Users: creation with a unique username, and reads by id or username (batched by the
 * GraphQL layer's DataLoaders through `byIds` / `idsByUsername`).
 */
import { randomUUID } from 'node:crypto';
import type { Mutation, Store } from '../../store/port.js';
import type { Row } from '../../store/table.js';
import { DomainError, badInput, checkText } from '../../errors.js';
import { usersByUsernameTable, usersTable } from './users-tables.js';

/** A user as the API shows it. */
export interface User {
  readonly id: string;
  readonly username: string;
  readonly displayName: string;
  readonly createdAt: Date;
  readonly location: string | null;
  readonly lastName: string | null;
  /** The directory index entries that are current, by index (internal). */
  readonly indexTs: { readonly location: string | null; readonly last_name: string | null };
}

/** The profile fields a directory indexes. */
export interface ProfileValues {
  readonly location?: string | null;
  readonly lastName?: string | null;
}

/**
 * Writes the directory index for a new user: extra columns of the user row and the
 * mutations that go in the same logged batch. Supplied by the directory feature.
 */
export type ProfileIndexer = (userId: string, values: ProfileValues) => { columns: Row; mutations: Mutation[] };

const USERNAME = /^[a-z0-9_]{3,32}$/;

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

/** A user from a `users` row. */
export function userFromRow(row: Row): User {
  return {
    id: row.user_id as string,
    username: row.username as string,
    displayName: row.display_name as string,
    createdAt: row.created_at as Date,
    location: (row.location as string | null) ?? null,
    lastName: (row.last_name as string | null) ?? null,
    indexTs: { location: (row.location_ts as string | null) ?? null, last_name: (row.last_name_ts as string | null) ?? null },
  };
}

/** The users feature over one store. */
export class Users {
  constructor(
    private readonly store: Store,
    private readonly indexer?: ProfileIndexer,
  ) {}

  /**
   * Create a user. The username is claimed first with insert-if-not-exists (a taken
   * name is CONFLICT); if writing the user then fails, the claim is released so the
   * name is not lost.
   */
  async create(
    input: { username: string; displayName: string } & ProfileValues,
    now: Date = new Date(),
  ): Promise<User> {
    const username = checkUsername('username', input.username);
    const displayName = checkText('displayName', input.displayName, 1, 80);
    const id = randomUUID();
    // Validate the indexed fields before claiming anything.
    const index = this.indexer?.(id, input) ?? { columns: {}, mutations: [] };
    const claim = await this.store.insertIfNotExists(usersByUsernameTable, { username, user_id: id });
    if (!claim.applied) throw new DomainError('CONFLICT', `the username "${username}" is taken`, 'username');
    const row: Row = { user_id: id, username, display_name: displayName, created_at: now, ...index.columns };
    try {
      if (index.mutations.length === 0) await this.store.upsert(usersTable, row);
      else await this.store.batch([{ kind: 'upsert', table: usersTable, row }, ...index.mutations]);
    } catch (err) {
      await this.store.delete(usersByUsernameTable, { username }).catch(() => undefined);
      throw err;
    }
    return userFromRow(row);
  }

  /** Users by id, in the order asked, null for unknown ids (one round trip). */
  async byIds(ids: readonly string[]): Promise<Array<User | null>> {
    const rows = await this.store.getMany(
      usersTable,
      ids.map((user_id) => ({ user_id })),
    );
    return rows.map((r) => (r ? userFromRow(r) : null));
  }

  /** User ids by username, in the order asked, null for unknown names (one round trip). */
  async idsByUsername(usernames: readonly string[]): Promise<Array<string | null>> {
    const rows = await this.store.getMany(
      usersByUsernameTable,
      usernames.map((username) => ({ username })),
    );
    return rows.map((r) => (r ? (r.user_id as string) : null));
  }
}
