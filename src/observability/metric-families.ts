/**
 * Counters and histograms for the request path, cheaper than prom-client's own: a
 * series is resolved once (by its label values) into a plain object, and counting is
 * `series.value += n`; observing adds to a bucket found by a scan of at most 15 bounds.
 * prom-client's `Counter.labels(...).inc()` hashes and validates the labels again on
 * every call, which measured several percent of a request's CPU. The families register
 * in a prom-client Registry (its `registerMetric` takes any object with `name`, `help`,
 * `type` and `get()`), which formats them with the rest at scrape time.
 */
import type { Registry } from 'prom-client';

/** One series of a family: its label values and what was counted or observed. */
export interface Series {
  readonly labels: Readonly<Record<string, string>>;
  /** A counter's total. */
  value: number;
  /** A histogram's observations, their sum, and per-bucket counts (not cumulative). */
  count: number;
  sum: number;
  readonly buckets: Float64Array | null;
}

/** A value line as prom-client's registry formats it. */
interface MetricValue {
  readonly value: number;
  readonly labels: Record<string, string | number>;
  readonly metricName?: string;
}

/** A counter or histogram family: the series of one metric name. */
export class MetricFamily {
  private readonly series = new Map<string, Series>();

  private constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'histogram',
    private readonly labelNames: readonly string[],
    private readonly bounds: readonly number[] | null,
  ) {}

  /** A counter, registered in `registry`. */
  static counter(registry: Registry, name: string, help: string, labelNames: readonly string[] = []): MetricFamily {
    return MetricFamily.register(registry, new MetricFamily(name, help, 'counter', labelNames, null));
  }

  /** A histogram with these upper bounds (seconds, ascending), registered in `registry`. */
  static histogram(registry: Registry, name: string, help: string, labelNames: readonly string[], bounds: readonly number[]): MetricFamily {
    return MetricFamily.register(registry, new MetricFamily(name, help, 'histogram', labelNames, Object.freeze([...bounds])));
  }

  private static register(registry: Registry, family: MetricFamily): MetricFamily {
    registry.registerMetric(family as never);
    return family;
  }

  /** The series of these label values (in `labelNames` order), made on first use and kept. */
  of(...values: string[]): Series {
    const key = values.length === 1 ? values[0]! : values.join('\u0000');
    let s = this.series.get(key);
    if (!s) {
      if (values.length !== this.labelNames.length) {
        throw new Error(`${this.name} takes labels ${this.labelNames.join(', ')}, got ${values.length} values`);
      }
      const labels = Object.freeze(Object.fromEntries(this.labelNames.map((n, i) => [n, values[i]!])));
      s = { labels, value: 0, count: 0, sum: 0, buckets: this.bounds ? new Float64Array(this.bounds.length + 1) : null };
      this.series.set(key, s);
    }
    return s;
  }

  /** Record one observation in a histogram series. */
  observe(series: Series, value: number): void {
    const bounds = this.bounds!;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    const buckets = series.buckets!;
    buckets[i] = buckets[i]! + 1;
    series.count++;
    series.sum += value;
  }

  /** For prom-client's registry: the family's values at scrape time. */
  async get(): Promise<{ name: string; help: string; type: string; values: MetricValue[]; aggregator: string }> {
    const values: MetricValue[] = [];
    for (const s of this.series.values()) {
      if (this.bounds === null) {
        values.push({ value: s.value, labels: { ...s.labels } });
        continue;
      }
      let cumulative = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += s.buckets![i]!;
        values.push({ value: cumulative, labels: { ...s.labels, le: i < this.bounds.length ? this.bounds[i]! : '+Inf' }, metricName: `${this.name}_bucket` });
      }
      values.push({ value: s.sum, labels: { ...s.labels }, metricName: `${this.name}_sum` });
      values.push({ value: s.count, labels: { ...s.labels }, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: 'sum' };
  }
}

/**
 * The trailing passes' families (#35): one definition for every component that runs
 * such passes (the count verifier, the name sweeper, the list applier, the live hub),
 * so they share names and labels. `horizon` is the pass's horizon in seconds, as
 * `LATE_WRITE_PASSES` gives it.
 */
export const LATE_PASS_FAMILIES = Object.freeze({
  reads: Object.freeze({
    name: 'relay_late_pass_reads_total',
    help: 'Store reads (round trips) made by the trailing passes that find writes landing after the late-write window, by component and horizon (seconds).',
    labels: Object.freeze(['component', 'horizon']),
  }),
  changes: Object.freeze({
    name: 'relay_late_changes_total',
    help: 'Late writes the trailing passes found and handled, by component (counts and users marked late, list transactions applied late, changes delivered late).',
    labels: Object.freeze(['component']),
  }),
});
