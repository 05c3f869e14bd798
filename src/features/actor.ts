/**
 * Who is acting, as features see it, and the rules every feature shares. Features
 * decide who may do what (owner or admin); the GraphQL layer only authenticates.
 */
import { DomainError } from '../errors.js';
import type { KeyLoader } from './key-loader.js';

/** The caller of a feature function: a signed-in member or admin. */
export interface Actor {
  readonly username: string;
  readonly isAdmin: boolean;
  /**
   * The actor's user id; FORBIDDEN when their user has not been created yet (such a
   * token is nobody's: it may only create the user it names).
   */
  userId(): Promise<string>;
}

/** The actor, or UNAUTHENTICATED for an anonymous caller. */
export function signedIn(actor: Actor | null): Actor {
  if (!actor) throw new DomainError('UNAUTHENTICATED', 'sign in: send "Authorization: Bearer <token>"');
  return actor;
}

/** The actor if an admin; UNAUTHENTICATED or FORBIDDEN otherwise. */
export function requireAdmin(actor: Actor | null): Actor {
  const signed = signedIn(actor);
  if (!signed.isAdmin) throw new DomainError('FORBIDDEN', 'this requires an admin token');
  return signed;
}

/**
 * The actor if a member: an admin (the signed role is the grant), or the token of a
 * user that exists. UNAUTHENTICATED for an anonymous caller, FORBIDDEN for a token of
 * no user (it must not search or read what members do).
 */
export async function requireMember(actor: Actor | null): Promise<Actor> {
  const signed = signedIn(actor);
  if (!signed.isAdmin) await signed.userId();
  return signed;
}

/** Go on if the actor is an admin or the user `ownerId`; FORBIDDEN with `message` otherwise. */
export async function requireOwnerOrAdmin(actor: Actor | null, ownerId: string, message: string): Promise<void> {
  const signed = signedIn(actor);
  if (!signed.isAdmin && (await signed.userId()) !== ownerId) throw new DomainError('FORBIDDEN', message);
}

/**
 * The actor of a signed-in caller; their user id is looked up on first use, through
 * the request's username loader.
 */
export function actorOf(
  caller: { readonly username: string; readonly isAdmin: boolean },
  userIdByUsername: KeyLoader<string, string | null>,
): Actor {
  return {
    username: caller.username,
    isAdmin: caller.isAdmin,
    async userId() {
      const id = await userIdByUsername.load(caller.username);
      if (!id) {
        throw new DomainError(
          'FORBIDDEN',
          `no user named "${caller.username}" exists: its token may only create it, with createUser`,
        );
      }
      return id;
    },
  };
}
