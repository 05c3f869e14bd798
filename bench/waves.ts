/**
 * Round trips as a client waits for them: calls made concurrently (started while
 * another is still in flight) share one round trip of latency, so a read of 20 buckets
 * in parallel costs one, not 20. `CountingStore` counts calls; this counts waves.
 */
import { StoreDecorator, type StoreCall } from '../src/store/store-decorator.js';

/** Counts waves of overlapping store calls, and the calls themselves. */
export class WaveCountingStore extends StoreDecorator {
  private inFlight = 0;
  /** Waves so far: a call that starts while none is in flight opens a new one. */
  waves = 0;
  /** Calls so far. */
  calls = 0;

  /** Forget the counts (between measurements). */
  reset(): void {
    this.waves = 0;
    this.calls = 0;
  }

  protected async around<T>(_call: StoreCall, run: () => Promise<T>): Promise<T> {
    if (this.inFlight === 0) this.waves++;
    this.calls++;
    this.inFlight++;
    try {
      return await run();
    } finally {
      this.inFlight--;
    }
  }
}
