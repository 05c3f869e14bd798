/**
 * Authentication: `Authorization: Bearer <JWT>`, HS256 through `jose`. Claim `sub` is
 * the username; claim `roles` an array in which "admin" grants admin rights.
 */
import { SignJWT, jwtVerify, type JWTPayload } from 'jose';
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
 * UNAUTHENTICATED error when it is malformed, forged, expired, carries no `exp`, or
 * expires more than `maxAgeSeconds` from now (a token must not be valid forever).
 */
export async function viewerFromAuthorization(
  header: string | undefined,
  key: Uint8Array,
  maxAgeSeconds: number,
  clockSkewMs = 0,
): Promise<Viewer | null> {
  return (await sessionFromAuthorization(header, key, maxAgeSeconds, clockSkewMs))?.viewer ?? null;
}

/** A verified token: who, and until when (epoch ms, its `exp`). */
export interface Session {
  readonly viewer: Viewer;
  readonly expiresAt: number;
}

/**
 * `viewerFromAuthorization` with the token's expiry: for a connection that outlives a
 * request (a WebSocket), which must end when its token does.
 */
export async function sessionFromAuthorization(
  header: string | undefined,
  key: Uint8Array,
  maxAgeSeconds: number,
  clockSkewMs = 0,
): Promise<Session | null> {
  if (header === undefined || header === '') return null;
  const match = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(header);
  if (!match) throw unauthenticated('the Authorization header must be "Bearer <JWT>"');
  let payload: JWTPayload;
  try {
    // jose checks the signature before any claim, so the reasons below are only told
    // to holders of a genuine token.
    ({ payload } = await jwtVerify(match[1]!, key, { algorithms: ['HS256'], requiredClaims: ['exp'] }));
  } catch (err) {
    const { code, claim } = err as { code?: string; claim?: string };
    if (code === 'ERR_JWT_EXPIRED') throw unauthenticated('the token has expired');
    if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && claim === 'exp') throw unauthenticated('the token has no expiry (`exp`)');
    throw unauthenticated('the token is invalid');
  }
  // Measured from the issuer's clock, which may be ahead of ours by the clock-skew bound:
  // a token issued for exactly MAX_TOKEN_AGE elsewhere must not be refused here.
  const horizon = Math.floor((Date.now() + clockSkewMs) / 1000) + maxAgeSeconds;
  if (payload.exp! > horizon) {
    throw unauthenticated(`the token expires too far in the future: at most ${maxAgeSeconds} s from now (MAX_TOKEN_AGE)`);
  }
  if (typeof payload.sub !== 'string' || payload.sub === '') throw unauthenticated('the token is invalid');
  const roles = Array.isArray(payload.roles) ? payload.roles : [];
  return { viewer: { username: payload.sub, isAdmin: roles.includes('admin') }, expiresAt: payload.exp! * 1000 };
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

/**
 * `viewerFromAuthorization` that remembers the tokens it verified (up to `size`, the
 * oldest forgotten first) until each expires: a client's later requests skip the
 * signature check, whose WebCrypto call waits a turn of the event loop on the thread
 * pool, which a flood fills. A token valid once stays valid until its `exp` (the
 * `MAX_TOKEN_AGE` horizon only moves later), so what is remembered is never wrong.
 */
export function rememberingAuthorization(
  key: Uint8Array,
  maxAgeSeconds: number,
  clockSkewMs = 0,
  size = 10_000,
): (header: string | undefined) => Promise<Viewer | null> {
  const verified = new Map<string, Session>();
  return async (header) => {
    if (header === undefined || header === '') return null;
    const known = verified.get(header);
    if (known && known.expiresAt > Date.now()) return known.viewer;
    const session = await sessionFromAuthorization(header, key, maxAgeSeconds, clockSkewMs);
    if (session) {
      verified.delete(header);
      if (verified.size >= size) verified.delete(verified.keys().next().value!);
      verified.set(header, session);
    }
    return session?.viewer ?? null;
  };
}
