/**
 * A local identity provider for tests: its JSON Web Key Set served over node:http, as
 * Auth0, Okta or Keycloak publish theirs, and tokens signed with its keys. Keys can be
 * rotated, and the provider taken down (every connection dropped) and brought back.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type JWK, type JWTPayload, type CryptoKey } from 'jose';

/** The algorithms identity providers sign with that the server accepts. */
export type ProviderAlgorithm = 'RS256' | 'ES256' | 'EdDSA';

/** One of the provider's signing keys. */
export interface ProviderKey {
  readonly kid: string;
  readonly alg: ProviderAlgorithm;
  readonly privateKey: CryptoKey;
  readonly jwk: JWK;
}

/** A running provider. */
export interface IdentityProvider {
  /** Its key set's URL (AUTH_JWKS_URL). */
  readonly jwksUrl: string;
  /** How many times the key set was fetched. */
  readonly fetches: number;
  /** A new key pair, not published until `publish` lists it. */
  newKey(alg: ProviderAlgorithm, kid?: string): Promise<ProviderKey>;
  /** Publish exactly these keys (a rotation publishes the new key and drops the old). */
  publish(...keys: ProviderKey[]): void;
  /** Drop every connection (down) or answer again (up). */
  setDown(down: boolean): void;
  /** A token signed with `key`: `sub`, one hour of life, and `claims` over those. */
  sign(key: ProviderKey, sub: string, claims?: JWTPayload): Promise<string>;
  close(): Promise<void>;
}

let kids = 0;

/** Start a provider on a loopback port, publishing no key yet. */
export async function startIdentityProvider(): Promise<IdentityProvider> {
  let published: JWK[] = [];
  let down = false;
  let fetches = 0;
  const server: Server = createServer((req, res) => {
    if (down) {
      req.socket.destroy();
      return;
    }
    fetches++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: published }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    jwksUrl: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    get fetches() {
      return fetches;
    },
    async newKey(alg, kid = `key-${++kids}`) {
      const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
      return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
    },
    publish(...keys) {
      published = keys.map((k) => k.jwk);
    },
    setDown(value) {
      down = value;
    },
    sign(key, sub, claims = {}) {
      return new SignJWT(claims).setProtectedHeader({ alg: key.alg, kid: key.kid }).setSubject(sub).setIssuedAt().setExpirationTime('1h').sign(key.privateKey);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
