/**
 * The token of a partition, computed once and sent as a keyed read's routing key.
 *
 * With no routing key given, the driver works out a prepared statement's replicas on
 * every execute: it encodes the partition key's parameters into a routing key and hashes
 * it with the cluster's partitioner (Murmur3 through 16-bit limbs: about 1 µs and a
 * score of small arrays a statement, 101 of a 50-edge suspendedUsers page's 103
 * statements). A partition's token is a function of its key's bytes and the cluster's
 * partitioner alone, neither of which ever changes, so the adapter keeps the token of a
 * partition it has read and hands it to the driver as the statement's `routingKey` (a
 * `Token`, which the driver takes as given); the driver still looks the token's
 * replicas up in its current ring each time. Tokens come from the driver's own
 * `metadata.newToken`, over the bytes the driver would have hashed (a single-column
 * partition key's encoded value), so the replicas chosen are the ones it would choose.
 */
import type cassandra from 'cassandra-driver';

/** The slice of the driver's metadata used here: a partition's token from its routing key. */
interface TokenMetadata {
  newToken(components: Buffer): unknown;
}

/**
 * The driver options of keyed reads, one per partition read lately, each with the
 * partition's token as its routing key. Two generations of at most `capacity` partitions
 * each: when the newer one fills, the older one goes, so partitions read again and again
 * stay and the cache's size stays bounded.
 */
export class RoutedReads {
  private current = new Map<string, cassandra.QueryOptions>();
  private previous = new Map<string, cassandra.QueryOptions>();
  private readonly metadata: TokenMetadata | null;

  constructor(
    metadata: object,
    private readonly base: cassandra.QueryOptions,
    private readonly capacity: number,
  ) {
    // A client without the driver's metadata (a test's fake) routes as the driver decides.
    this.metadata = typeof (metadata as Partial<TokenMetadata>).newToken === 'function' ? (metadata as TokenMetadata) : null;
  }

  /**
   * The options of a read of the partition whose one key column is the uuid `text`,
   * bound as `bytes`; `base` itself while the driver knows no partitioner yet (before it
   * connects), when it then decides as it always does.
   */
  optionsOf(text: string, bytes: Buffer): cassandra.QueryOptions {
    const held = this.current.get(text);
    if (held !== undefined) return held;
    let options = this.previous.get(text);
    if (options === undefined) {
      if (this.metadata === null) return this.base;
      let token: unknown;
      try {
        token = this.metadata.newToken(bytes);
      } catch {
        return this.base;
      }
      // The driver takes a `Token` as a routing key as it is (its typings name only buffers).
      options = { ...this.base, routingKey: token as Buffer };
    }
    if (this.current.size >= this.capacity) {
      this.previous = this.current;
      this.current = new Map();
    }
    this.current.set(text, options);
    return options;
  }
}
