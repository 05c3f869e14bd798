/**
 * The sample Grafana dashboard (ops/grafana-dashboard.json) queries only metrics a
 * server with METRICS=true exposes: every metric name in every panel's expression is a
 * family of /metrics (a histogram's `_bucket`, `_sum` and `_count` count as its own).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';

interface Panel {
  readonly type: string;
  readonly title: string;
  readonly targets?: ReadonlyArray<{ readonly expr: string }>;
}

const dashboard = JSON.parse(readFileSync(new URL('../../ops/grafana-dashboard.json', import.meta.url), 'utf8')) as { panels: Panel[] };

/** Metric names in a PromQL expression: the product's, the process's and Node's. */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b(?:relay|process|nodejs)_[a-z0-9_]+\b/g)].map((m) => m[0]);
}

describe('the sample Grafana dashboard', () => {
  let server: TestServer;
  let families: Map<string, string>;

  beforeAll(async () => {
    server = await startTestServer({ env: { METRICS: 'true' } });
    const text = await (await fetch(server.url.replace(/\/graphql$/, '/metrics'))).text();
    families = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
  });
  afterAll(() => server.close());

  it('has a panel for each area the metrics cover, each with a query', () => {
    const queried = dashboard.panels.filter((p) => p.type !== 'row');
    expect(queried.length).toBeGreaterThanOrEqual(20);
    for (const panel of queried) expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
    const rows = dashboard.panels.filter((p) => p.type === 'row').map((p) => p.title);
    expect(rows).toEqual(['Requests and GraphQL operations', 'Store', 'Background work', 'Live connections', 'Process']);
  });

  it('queries only metric names /metrics exposes', () => {
    const names = new Set(dashboard.panels.flatMap((p) => (p.targets ?? []).flatMap((t) => metricNames(t.expr))));
    expect(names.size).toBeGreaterThanOrEqual(30);
    const missing = [...names].filter((name) => {
      if (families.has(name)) return false;
      const histogram = /^(.*)_(bucket|sum|count)$/.exec(name);
      return !(histogram && families.get(histogram[1]!) === 'histogram');
    });
    expect(missing).toEqual([]);
  });
});
