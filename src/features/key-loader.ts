/**
 * The slice of a per-request DataLoader a feature reads through: `load` batches and
 * caches reads by key for the request; a feature that writes keeps it true with
 * `clear` and `prime`. Features name the loaders they need; the composition root hands
 * them the request's.
 */
export interface KeyLoader<K, V> {
  load(key: K): Promise<V>;
  /** The value when this request already read it (no promise), otherwise `load`'s promise. */
  loadNow(key: K): V | Promise<V>;
  /** The values of many keys at once, in order, as `load` gives each, with one promise for them all (a page's filter). */
  loadAll(keys: readonly K[]): Promise<V[]>;
  clear(key: K): unknown;
  prime(key: K, value: V): unknown;
}
