/** Budgets per principal on their own, on a hand-driven clock. */
import { GraphQLError } from 'graphql';
import { describe, expect, it } from 'vitest';
import { RateLimiter } from '../../src/graphql/rate-limit.js';

describe('the rate limiter', () => {
  it('charges each principal apart, refuses a charge that does not fit without taking it, and resets with the window', () => {
    let now = 1_000_000;
    const limiter = new RateLimiter({ points: 100, windowSeconds: 10 }, () => now);
    expect(limiter.charge('user:a', 60)).toEqual({ limit: 100, cost: 60, remaining: 40, resetAt: 1_010_000 });
    expect(limiter.charge('user:b', 0.2)).toMatchObject({ cost: 1, remaining: 99 });
    now += 5_000;
    let refusal: unknown;
    try {
      limiter.charge('user:a', 41);
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(GraphQLError);
    expect((refusal as GraphQLError).extensions).toMatchObject({ code: 'RATE_LIMITED', retryAfter: 5, http: { status: 429 } });
    expect(limiter.status('user:a')).toMatchObject({ remaining: 40 });
    // Refused until the reset, even for what would fit.
    expect(limiter.refusal('user:a')).not.toBeNull();
    expect(() => limiter.charge('user:a', 1)).toThrow(/Rate limit exceeded/);
    expect(limiter.refusal('user:b')).toBeNull();
    now += 5_000;
    expect(limiter.refusal('user:a')).toBeNull();
    expect(limiter.charge('user:a', 100)).toMatchObject({ remaining: 0, resetAt: 1_020_000 });
  });

  it('forgets the windows that ended, so memory follows the principals of one window', () => {
    let now = 0;
    const limiter = new RateLimiter({ points: 10, windowSeconds: 1 }, () => now);
    for (let i = 0; i < 500; i++) limiter.charge(`address:10.0.${i >> 8}.${i & 255}`, 1);
    expect(limiter.tracked).toBe(500);
    now += 1_000;
    limiter.charge('address:10.1.0.1', 1);
    expect(limiter.tracked).toBe(1);
  });

  it('charges nothing and refuses nothing when RATE_LIMIT_POINTS is 0', () => {
    const limiter = new RateLimiter({ points: 0, windowSeconds: 60 });
    for (let i = 0; i < 1_000; i++) limiter.charge('user:a', 10_000);
    expect(limiter.enabled).toBe(false);
    expect(limiter.refusal('user:a')).toBeNull();
  });
});

describe('remembered tokens', () => {
  it('answers a verified token until it expires, and refuses a forged or expired one every time', async () => {
    const { authKey, createTokenVerifier, rememberingVerifier, signToken } = await import('../../src/graphql/auth.js');
    const secret = 'remembered-token-secret-0123456789';
    const key = authKey(secret);
    const settings = { kind: 'shared-secret', secret, previousSecrets: [], issuer: null, audiences: [], rolesClaim: 'roles' } as const;
    const verify = rememberingVerifier(createTokenVerifier(settings, { maxAgeSeconds: 30 * 86_400 }), 2).viewer;
    const token = await signToken(key, 'ada');
    expect(await verify(`Bearer ${token}`)).toEqual({ username: 'ada', isAdmin: false });
    expect(await verify(`Bearer ${token}`)).toEqual({ username: 'ada', isAdmin: false });
    const forged = `${token.slice(0, -4)}AAAA`;
    await expect(verify(`Bearer ${forged}`)).rejects.toMatchObject({ extensions: { code: 'UNAUTHENTICATED' } });
    await expect(verify(`Bearer ${forged}`)).rejects.toMatchObject({ extensions: { code: 'UNAUTHENTICATED' } });
    const expired = await signToken(key, 'bob', { expiresIn: '1s' });
    expect(await verify(`Bearer ${expired}`)).toEqual({ username: 'bob', isAdmin: false });
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    await expect(verify(`Bearer ${expired}`)).rejects.toMatchObject({ extensions: { code: 'UNAUTHENTICATED' } });
  });
});
