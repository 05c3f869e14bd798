/**
 * Authentication: `Authorization: Bearer <JWT>`, verified through `jose`, either HS256
 * with the shared secret (`AUTH_SECRET`, and `AUTH_PREVIOUS_SECRETS` while a secret
 * rotates) or RS256, ES256 or EdDSA against an identity provider's published keys
 * (`AUTH_JWKS_URL`). Claim `sub` is the username; the roles claim (`AUTH_ROLES_CLAIM`,
 * default `roles`) an array in which "admin" grants admin rights.
 */
import {
  SignJWT,
  createLocalJWKSet,
  createRemoteJWKSet,
  jwtVerify,
  type JWTPayload,
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
} from 'jose';
import { GraphQLError } from 'graphql';
import type { Logger } from 'pino';
import type { AuthSettings } from '../config.js';

/** UNAUTHENTICATED, answered with HTTP 401 when raised while building the context. */
function unauthenticated(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'UNAUTHENTICATED', http: { status: 401 } } });
}

/** Who is calling. */
export interface Viewer {
  readonly username: string;
  readonly isAdmin: boolean;
}

/** A verified token: who, and until when (epoch ms, its `exp`). */
export interface Session {
  readonly viewer: Viewer;
  readonly expiresAt: number;
}

/** The HMAC key for a secret string. */
export function authKey(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

/** The role that grants admin rights, as it appears in the roles claim. */
export const ADMIN_ROLE = 'admin';

/** Algorithms of identity providers' keys that are accepted. */
export const PROVIDER_ALGORITHMS = Object.freeze(['RS256', 'ES256', 'EdDSA']);

/**
 * The roles a token's payload carries at `claim`: a claim of that exact name (a
 * namespaced URL such as Auth0's `https://example.com/roles` included), otherwise the
 * dotted path into nested claims (Keycloak's `realm_access.roles`). An array of
 * strings, or one string for a single role; anything else carries none.
 */
export function rolesAt(payload: JWTPayload, claim: string): readonly string[] {
  let value: unknown = payload[claim];
  if (value === undefined && claim.includes('.')) {
    value = payload;
    for (const part of claim.split('.')) {
      value = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>)[part] : undefined;
    }
  }
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((role): role is string => typeof role === 'string') : [];
}

/** How long the identity provider's keys are kept, and how often they may be fetched. */
export interface RemoteKeyTiming {
  /** After this, the keys are fetched again before use (jose's `cacheMaxAge`). */
  readonly cacheMaxAgeMs: number;
  /** An unknown `kid` fetches the keys again at most this often (jose's `cooldownDuration`). */
  readonly cooldownMs: number;
  /** How long one fetch may take (jose's `timeoutDuration`). */
  readonly timeoutMs: number;
}

/** jose's defaults: keys kept 10 minutes, fetched again for an unknown kid at most every 30 s. */
export const DEFAULT_REMOTE_KEY_TIMING: RemoteKeyTiming = Object.freeze({ cacheMaxAgeMs: 600_000, cooldownMs: 30_000, timeoutMs: 5_000 });

/** The identity provider could not be reached, and the token's key was not among those fetched before. */
class ProviderUnavailable extends Error {}

/** Whether `err`, thrown while looking up a key, means the key set could not be fetched (not that the key is unknown). */
function isFetchFailure(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === undefined || code === 'ERR_JWKS_TIMEOUT' || code === 'ERR_JOSE_GENERIC' || code === 'ERR_JWKS_INVALID';
}

/**
 * The identity provider's keys through jose's remote key set (cached, fetched again
 * when a token names an unknown `kid`), and one thing more: while the provider cannot
 * be reached, the keys fetched last keep verifying the tokens they signed, past jose's
 * cache age, and the provider is asked again only once per cooldown.
 */
export function providerKeys(jwksUrl: string, timing: RemoteKeyTiming, logger?: Logger): JWTVerifyGetKey {
  const remote = createRemoteJWKSet(new URL(jwksUrl), {
    cacheMaxAge: timing.cacheMaxAgeMs,
    cooldownDuration: timing.cooldownMs,
    timeoutDuration: timing.timeoutMs,
  });
  let failedAt = -Infinity;
  // The keys fetched last, imported once (not once per token while the provider is down);
  // jose hands out a copy of them each time, so they are told apart by their text.
  let local: { text: string; set: JWTVerifyGetKey } | null = null;
  const lastKnown: JWTVerifyGetKey = async (header, token) => {
    const keys = remote.jwks();
    if (!keys) throw new ProviderUnavailable();
    const text = JSON.stringify(keys);
    if (local?.text !== text) local = { text, set: createLocalJWKSet(keys) };
    try {
      return await local.set(header, token);
    } catch (err) {
      throw (err as { code?: string }).code === 'ERR_JWKS_NO_MATCHING_KEY' ? new ProviderUnavailable() : err;
    }
  };
  return async (header, token) => {
    if (Date.now() < failedAt + timing.cooldownMs) return lastKnown(header, token);
    try {
      return await remote(header, token);
    } catch (err) {
      if (!isFetchFailure(err)) throw err;
      failedAt = Date.now();
      logger?.warn({ err, jwksUrl }, 'the identity provider\'s keys could not be fetched (AUTH_JWKS_URL); verifying with the keys fetched before');
      return lastKnown(header, token);
    }
  };
}

/** Verifies the bearer tokens of requests and sockets. */
export interface TokenVerifier {
  /** The session an Authorization header names: null when there is none; UNAUTHENTICATED when the token is refused. */
  session(header: string | undefined): Promise<Session | null>;
  /** `session`'s viewer. */
  viewer(header: string | undefined): Promise<Viewer | null>;
}

/** What a verifier checks besides the signature. */
export interface TokenRules {
  /** How far in the future a token's `exp` may lie (MAX_TOKEN_AGE). */
  readonly maxAgeSeconds: number;
  /** How far the issuer's clock may be ahead of ours (CLOCK_SKEW_MS). */
  readonly clockSkewMs?: number;
}

/** Why jose refused a token, as told to a caller whose token was signed by a trusted key. */
function refusal(err: unknown): GraphQLError {
  if (err instanceof ProviderUnavailable) {
    return unauthenticated(
      "the token's signing key is not among the identity provider's keys this server holds, and the provider cannot be reached now (AUTH_JWKS_URL); try again later",
    );
  }
  const { code, claim } = err as { code?: string; claim?: string };
  if (code === 'ERR_JWT_EXPIRED') return unauthenticated('the token has expired');
  if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && claim === 'exp') return unauthenticated('the token has no expiry (`exp`)');
  if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && claim === 'iss') return unauthenticated('the token was issued by another issuer (`iss` is not AUTH_ISSUER)');
  if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && claim === 'aud') return unauthenticated('the token is meant for another audience (`aud` names none of AUTH_AUDIENCE)');
  if (code === 'ERR_JWKS_NO_MATCHING_KEY') return unauthenticated("the token's signing key (`kid`) is not among the identity provider's keys (AUTH_JWKS_URL)");
  return unauthenticated('the token is invalid');
}

/**
 * A verifier for `settings` (see `AuthSettings`). Every token must carry `exp`, at most
 * `maxAgeSeconds` ahead (a token must not be valid forever), and a `sub`; `iss` and
 * `aud` are checked when configured. With shared secrets, a token signed with the
 * current secret or one of the previous ones verifies.
 */
export function createTokenVerifier(
  settings: AuthSettings,
  rules: TokenRules,
  options: { logger?: Logger; remoteKeys?: RemoteKeyTiming } = {},
): TokenVerifier {
  const verifyOptions: JWTVerifyOptions = {
    requiredClaims: ['exp'],
    ...(settings.issuer !== null ? { issuer: settings.issuer } : {}),
    ...(settings.audiences.length > 0 ? { audience: [...settings.audiences] } : {}),
  };
  let verify: (jwt: string) => Promise<JWTPayload>;
  if (settings.kind === 'identity-provider') {
    const keys = providerKeys(settings.jwksUrl, options.remoteKeys ?? DEFAULT_REMOTE_KEY_TIMING, options.logger);
    const providerOptions = { ...verifyOptions, algorithms: [...PROVIDER_ALGORITHMS] };
    verify = async (jwt) => (await jwtVerify(jwt, keys, providerOptions)).payload;
  } else {
    const secrets = [settings.secret, ...settings.previousSecrets].map(authKey);
    const secretOptions = { ...verifyOptions, algorithms: ['HS256'] };
    verify = async (jwt) => {
      // jose checks the signature before any claim: only a signature failure means "try the next secret".
      for (const [i, key] of secrets.entries()) {
        try {
          return (await jwtVerify(jwt, key, secretOptions)).payload;
        } catch (err) {
          if ((err as { code?: string }).code !== 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' || i === secrets.length - 1) throw err;
        }
      }
      throw new Error('no secret to verify with');
    };
  }
  const session = async (header: string | undefined): Promise<Session | null> => {
    if (header === undefined || header === '') return null;
    const match = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(header);
    if (!match) throw unauthenticated('the Authorization header must be "Bearer <JWT>"');
    let payload: JWTPayload;
    try {
      // jose checks the signature before any claim, so the reasons below are only told
      // to holders of a genuine token.
      payload = await verify(match[1]!);
    } catch (err) {
      throw refusal(err);
    }
    // Measured from the issuer's clock, which may be ahead of ours by the clock-skew bound:
    // a token issued for exactly MAX_TOKEN_AGE elsewhere must not be refused here.
    const horizon = Math.floor((Date.now() + (rules.clockSkewMs ?? 0)) / 1000) + rules.maxAgeSeconds;
    if (payload.exp! > horizon) {
      throw unauthenticated(`the token expires too far in the future: at most ${rules.maxAgeSeconds} s from now (MAX_TOKEN_AGE)`);
    }
    if (typeof payload.sub !== 'string' || payload.sub === '') throw unauthenticated('the token is invalid');
    const isAdmin = rolesAt(payload, settings.rolesClaim).includes(ADMIN_ROLE);
    return { viewer: { username: payload.sub, isAdmin }, expiresAt: payload.exp! * 1000 };
  };
  return { session, viewer: async (header) => (await session(header))?.viewer ?? null };
}

/** A payload carrying `roles` where `rolesAt` reads them for `claim` (nested along a dotted path, unless the name is a URL). */
function rolesPayload(claim: string, roles: string[]): JWTPayload {
  if (claim.includes('://') || !claim.includes('.')) return { [claim]: roles };
  return claim.split('.').reduceRight<unknown>((inner, part) => ({ [part]: inner }), roles) as JWTPayload;
}

/**
 * Sign an HS256 token (`npm run token`, and tests): the roles claim (`rolesClaim`,
 * default `roles`) holds "admin" for an admin; `issuer` and `audience` set `iss` and
 * `aud`, for a server that checks them.
 */
export async function signToken(
  key: Uint8Array,
  username: string,
  options: { admin?: boolean; expiresIn?: string; issuer?: string | null; audience?: string | null; rolesClaim?: string } = {},
): Promise<string> {
  const jwt = new SignJWT(rolesPayload(options.rolesClaim ?? 'roles', options.admin ? [ADMIN_ROLE] : []))
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(username)
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '30d');
  if (options.issuer) jwt.setIssuer(options.issuer);
  if (options.audience) jwt.setAudience(options.audience);
  return jwt.sign(key);
}

/**
 * `verifier`, remembering the sessions it verified (up to `size`, the oldest forgotten
 * first) until each expires: a client's later requests skip the signature check, whose
 * WebCrypto call waits a turn of the event loop on the thread pool, which a flood fills.
 * A token valid once stays valid until its `exp` (the `MAX_TOKEN_AGE` horizon only moves
 * later, and the secrets and keys a process trusts are fixed at its start), so what is
 * remembered is never wrong. A refused token is not remembered: it is checked again.
 */
export function rememberingVerifier(verifier: TokenVerifier, size = 10_000): TokenVerifier {
  const verified = new Map<string, Session>();
  const session = async (header: string | undefined): Promise<Session | null> => {
    if (header === undefined || header === '') return null;
    const known = verified.get(header);
    if (known && known.expiresAt > Date.now()) return known;
    const fresh = await verifier.session(header);
    if (fresh) {
      verified.delete(header);
      if (verified.size >= size) verified.delete(verified.keys().next().value!);
      verified.set(header, fresh);
    }
    return fresh;
  };
  return { session, viewer: async (header) => (await session(header))?.viewer ?? null };
}
