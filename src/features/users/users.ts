/**
 * Users: creation with a unique username, and reads by id or username (batched by the
 * GraphQL layer's DataLoaders through `byIds` / `idsByUsername`).
 */
import { randomUUID } from 'node:crypto';
import type { Store } from '../../store/port.js';
import type { Row } from '../../store/table.js';
import { DomainError, badInput, checkText } from '../../errors.js';
import { usersByUsernameTable, usersTable } from './users-tables.js';

/** A user as the API shows it. */
export interface User {
  readonly id: string;
  readonly username: string;
  readonly displayName: string;
  readonly createdAt: Date;
}

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

function userFromRow(row: Row): User {
  return {
    id: row.user_id as string,
    username: row.username as string,
    displayName: row.display_name as string,
    createdAt: row.created_at as Date,
  };
}

/** The users feature over one store. */
export class Users {
  constructor(private readonly store: Store) {}

  /**
   * Create a user. The username is claimed first with insert-if-not-exists (a taken
   * name is CONFLICT); if writing the user then fails, the claim is released so the
   * name is not lost.
   */
  async create(input: { username: string; displayName: string }, now: Date = new Date()): Promise<User> {
    const username = checkUsername('username', input.username);
    const displayName = checkText('displayName', input.displayName, 1, 80);
    const id = randomUUID();
    const claim = await this.store.insertIfNotExists(usersByUsernameTable, { username, user_id: id });
    if (!claim.applied) throw new DomainError('CONFLICT', `the username "${username}" is taken`, 'username');
    try {
      await this.store.upsert(usersTable, { user_id: id, username, display_name: displayName, created_at: now });
    } catch (err) {
      await this.store.delete(usersByUsernameTable, { username }).catch(() => undefined);
      throw err;
    }
    return { id, username, displayName, createdAt: now };
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
