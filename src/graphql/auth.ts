/**
 * Authentication: `Authorization: Bearer <JWT>`, HS256 through `jose`. Claim `sub` is
 * the username; claim `roles` an array in which "admin" grants admin rights.
 */
import { SignJWT, jwtVerify } from 'jose';
import { GraphQLError } from 'graphql';

/** UNAUTHENTICATED, answered with HTTP 401 when raised while building the context. */
function unauthenticated(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'UNAUTHENTICATED', http: { status: 401 } } });
}

/** Who is calling. */
export interface Viewer {
  readonly username: string;
  readonly isAdmin: boolean;
}

/** The HMAC key for a secret string. */
export function authKey(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

/**
 * The viewer named by an Authorization header: null when there is none; an
 * UNAUTHENTICATED error when it is malformed, forged or expired.
 */
export async function viewerFromAuthorization(header: string | undefined, key: Uint8Array): Promise<Viewer | null> {
  if (header === undefined || header === '') return null;
  const match = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(header);
  if (!match) throw unauthenticated('the Authorization header must be "Bearer <JWT>"');
  try {
    const { payload } = await jwtVerify(match[1]!, key, { algorithms: ['HS256'] });
    if (typeof payload.sub !== 'string' || payload.sub === '') {
      throw new Error('the token has no subject');
    }
    const roles = Array.isArray(payload.roles) ? payload.roles : [];
    return { username: payload.sub, isAdmin: roles.includes('admin') };
  } catch (err) {
    const reason = (err as { code?: string }).code === 'ERR_JWT_EXPIRED' ? 'the token has expired' : 'the token is invalid';
    throw unauthenticated(reason);
  }
}

/** Sign a token (development tool and tests). */
export async function signToken(
  key: Uint8Array,
  username: string,
  options: { admin?: boolean; expiresIn?: string } = {},
): Promise<string> {
  return new SignJWT({ roles: options.admin ? ['admin'] : [] })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(username)
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '30d')
    .sign(key);
}
