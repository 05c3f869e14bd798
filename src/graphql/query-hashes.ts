/**
 * The SHA-256 of each query text, computed once per text instead of once per request.
 *
 * Apollo Server keys its parsed-and-validated document cache by the SHA-256 of the
 * query text, and hashes the text of every request that carries one (about 10 µs of
 * the server's CPU per request: a hash object, and a `require` of `crypto` on each
 * call). The one way Apollo accepts a hash it did not compute is automatic persisted
 * queries (APQ): a request carrying `extensions.persistedQuery.sha256Hash` and no
 * `query` is answered from the APQ cache. So this is Apollo's APQ cache, and the HTTP
 * handler hands a request whose text it has seen before to Apollo as such a request,
 * with the text held in this cache under its hash for as long as the request runs
 * (`pin`/`unpin`): the lookup cannot miss, and the client sees no difference.
 *
 * Clients using APQ themselves (Apollo Client's persisted-query link) use the same
 * cache: Apollo verifies the hash of a text they register before storing it here.
 */
import { createHash } from 'node:crypto';
import { PrefixingKeyValueCache, type KeyValueCache } from '@apollo/utils.keyvaluecache';

/** Apollo's `extensions.persistedQuery` of a request. */
export interface PersistedQuery {
  readonly version: 1;
  readonly sha256Hash: string;
}

/** One cached text, its APQ extension, and the requests in flight that rely on it. */
interface Entry {
  readonly text: string;
  readonly persisted: PersistedQuery;
  pins: number;
}

/** The SHA-256 hex digest Apollo computes for a query text. */
export function queryHash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Apollo's APQ cache, and the memo of each query text's hash the HTTP handler reads. */
export class QueryHashes implements KeyValueCache<string> {
  private readonly byHash = new Map<string, Entry>();
  private readonly hashOfText = new Map<string, string>();

  /**
   * @param maxEntries texts kept (the oldest unpinned ones go first)
   * @param maxTextLength longer texts are not remembered: Apollo hashes them itself
   */
  constructor(
    private readonly maxEntries = 1_000,
    private readonly maxTextLength = 10_000,
  ) {}

  /**
   * This cache as Apollo's `persistedQueries.cache`: its keys are whole SHA-256 digests
   * of the texts and nothing else shares it, so Apollo's `apq:` prefix is left off.
   */
  forApollo(): KeyValueCache<string> {
    return PrefixingKeyValueCache.cacheDangerouslyDoesNotNeedPrefixesForIsolation(this);
  }

  /**
   * The APQ extension naming `text` by its hash, the text held in the cache until
   * `unpin(hash)`; null for a text too long to remember (or empty: Apollo's own refusal
   * of an empty query must stay its own).
   */
  pin(text: string): PersistedQuery | null {
    if (text.length === 0 || text.length > this.maxTextLength) return null;
    const hash = this.hashOfText.get(text);
    let entry = hash === undefined ? undefined : this.byHash.get(hash);
    if (entry === undefined) entry = this.remember(queryHash(text), text);
    entry.pins += 1;
    return entry.persisted;
  }

  /** Release a hash `pin` returned. */
  unpin(hash: string): void {
    const entry = this.byHash.get(hash);
    if (entry && entry.pins > 0) entry.pins -= 1;
  }

  /** Texts held now (pinned ones included). */
  get size(): number {
    return this.byHash.size;
  }

  // Apollo's KeyValueCache interface (its APQ lookups and registrations).
  async get(hash: string): Promise<string | undefined> {
    return this.byHash.get(hash)?.text;
  }

  async set(hash: string, text: string): Promise<void> {
    if (text.length > this.maxTextLength || this.byHash.has(hash)) return;
    this.remember(hash, text);
  }

  async delete(hash: string): Promise<boolean> {
    const entry = this.byHash.get(hash);
    if (!entry || entry.pins > 0) return false;
    this.forget(hash, entry);
    return true;
  }

  private remember(hash: string, text: string): Entry {
    const entry: Entry = { text, persisted: Object.freeze({ version: 1, sha256Hash: hash }), pins: 0 };
    this.byHash.set(hash, entry);
    this.hashOfText.set(text, hash);
    // Oldest first; texts pinned by requests in flight stay (the cache may then run over
    // its size until they finish).
    if (this.byHash.size > this.maxEntries) {
      for (const [oldHash, old] of this.byHash) {
        if (this.byHash.size <= this.maxEntries) break;
        if (old.pins === 0 && old !== entry) this.forget(oldHash, old);
      }
    }
    return entry;
  }

  private forget(hash: string, entry: Entry): void {
    this.byHash.delete(hash);
    if (this.hashOfText.get(entry.text) === hash) this.hashOfText.delete(entry.text);
  }
}
