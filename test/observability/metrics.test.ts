/**
 * GET /metrics on a real server: off by default; on, its series move with real
 * requests (a named query counts once under its name, with the store round trips and
 * statements the response reports), errors count under their code, the live side (its
 * trailing passes too) and the background jobs have their series; the bearer token rules; the production
 * refusal; and operation-name labels bounded however many names clients send.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { ANONYMOUS_OPERATION, INVALID_OPERATION, OPERATION_NAME_CAP, OTHER_OPERATION } from '../../src/observability/metrics.js';
import { freePort } from '../support/child-server.js';
import { FaultyStore } from '../support/faulty-store.js';
import { liveClient, waitFor } from '../support/live-client.js';
import { scrape, valueOf } from '../support/prometheus.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const CREATE_USER = `mutation CreateUser($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`;
const GET_USER = `query GetUser($username: String!) { userByUsername(username: $username) { id displayName posts(first: 5) { edges { node { id } } } } }`;
const CREATE_POST = `mutation CreatePost($content: String!) { createPost(input: { content: $content }) { post { id } } }`;
const POSTS_CHANGED = `subscription Timeline($authorId: ID!) { postsChanged(authorId: $authorId) { cursor addedEdge { node { id } } } }`;

function baseOf(server: TestServer): string {
  return server.url.replace(/\/graphql$/, '');
}

describe('GET /metrics', () => {
  let server: TestServer;
  let base: string;
  let token: string;
  let authorId: string;
  let faulty: FaultyStore;
  const username = aUser().username;

  beforeAll(async () => {
    server = await startTestServer({ env: { METRICS: 'true', LIVE_POLL_MS: '50', CLOCK_SKEW_MS: '0', LATE_WRITE_PASSES: '10/1' }, wrap: (store) => (faulty = new FaultyStore(store)) });
    base = baseOf(server);
    token = await server.token(username);
    const created = await server.gql(CREATE_USER, { input: { username, displayName: 'Metered' } }, token);
    authorId = created.data!.createUser.user.id;
  });
  afterAll(() => server.close());

  it('is off by default: the path is unknown', async () => {
    const plain = await startTestServer();
    try {
      expect((await fetch(`${baseOf(plain)}/metrics`)).status).toBe(404);
    } finally {
      await plain.close();
    }
  });

  it('counts a named query once under its name, with exactly the store round trips and statements it reported', async () => {
    const before = await scrape(base);
    const res = await server.gql(GET_USER, { username });
    expect(res.errors).toBeUndefined();
    const after = await scrape(base);
    const delta = (name: string, labels: Record<string, string> = {}) => valueOf(after, name, labels) - valueOf(before, name, labels);

    expect(delta('relay_graphql_requests_total', { operation: 'GetUser' })).toBe(1);
    expect(delta('relay_graphql_requests_total', { operation: 'GetUser', type: 'query', outcome: 'success', code: 'none' })).toBe(1);
    expect(delta('relay_graphql_request_duration_seconds_count', { operation: 'GetUser', type: 'query' })).toBe(1);
    expect(res.extensions!.storeRoundTrips).toBeGreaterThan(0);
    expect(delta('relay_graphql_store_round_trips_total', { operation: 'GetUser' })).toBe(res.extensions!.storeRoundTrips);
    expect(delta('relay_graphql_store_statements_total', { operation: 'GetUser' })).toBe(res.extensions!.storeStatements);
    // Every store round trip is counted by the store observer too (background jobs add theirs).
    expect(delta('relay_store_round_trips_total')).toBeGreaterThanOrEqual(res.extensions!.storeRoundTrips!);
    expect(delta('relay_store_round_trip_duration_seconds_count')).toBe(delta('relay_store_round_trips_total'));
    expect(delta('relay_store_statements_total')).toBeGreaterThanOrEqual(res.extensions!.storeStatements!);
    // The HTTP side: this request, on /graphql, answered 200 (the scrape itself is counted once it has finished).
    expect(delta('relay_http_requests_total', { route: '/graphql', status: '200' })).toBe(1);
    expect(delta('relay_http_requests_total', { route: '/metrics', status: '200' })).toBe(1);
  });

  it('counts errors under their code: an invalid document as unresolved, a bad id under its operation', async () => {
    const before = await scrape(base);
    const invalid = await server.gql(`query Broken { nope }`);
    expect(invalid.errors![0]!.extensions!.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const bad = await server.gql(`query LookUp { node(id: "not-an-id") { id } }`);
    expect(bad.errors![0]!.extensions!.code).toBe('BAD_USER_INPUT');
    await server.gql(`{ __typename }`);
    const after = await scrape(base);
    const delta = (labels: Record<string, string>) =>
      valueOf(after, 'relay_graphql_requests_total', labels) - valueOf(before, 'relay_graphql_requests_total', labels);
    expect(delta({ operation: INVALID_OPERATION, outcome: 'error', code: 'GRAPHQL_VALIDATION_FAILED' })).toBe(1);
    expect(delta({ operation: 'LookUp', type: 'query', outcome: 'error', code: 'BAD_USER_INPUT' })).toBe(1);
    expect(delta({ operation: ANONYMOUS_OPERATION, type: 'query', outcome: 'success' })).toBe(1);
    // A name that never resolved gets no label of its own.
    expect(after.some((s) => s.labels.operation === 'Broken')).toBe(false);
  });

  it('counts lightweight transactions, background passes and the process, with every outcome present from the start', async () => {
    const samples = await scrape(base);
    for (const outcome of ['applied', 'not_applied', 'unknown_settled', 'unknown_given_up']) {
      expect(samples.some((s) => s.name === 'relay_store_lwt_total' && s.labels.outcome === outcome)).toBe(true);
    }
    for (const kind of ['unavailable', 'timeout', 'invalid']) {
      expect(samples.some((s) => s.name === 'relay_store_errors_total' && s.labels.kind === kind)).toBe(true);
    }
    // Presence claims its node with an insert-if-not-exists at start-up.
    expect(valueOf(samples, 'relay_store_lwt_total', { operation: 'insertIfNotExists', outcome: 'applied' })).toBeGreaterThan(0);
    for (const name of ['relay_sagas_open', 'relay_sagas_in_flight', 'relay_list_applier_lag_seconds', 'process_cpu_seconds_total', 'nodejs_eventloop_lag_seconds']) {
      expect(samples.some((s) => s.name === name), name).toBe(true);
    }
    expect(valueOf(samples, 'relay_sagas_in_flight')).toBe(0);
    for (const job of ['list_applier', 'saga_recovery', 'count_verifier', 'name_sweeper']) {
      expect(samples.filter((s) => s.name === 'relay_background_passes_total' && s.labels.job === job).map((s) => s.labels.outcome).sort(), job).toEqual(['failed', 'ok']);
    }
  });

  it("counts the trailing passes' store reads by component and horizon, and the late writes they found (none here)", async () => {
    const components = ['count_verifier', 'name_sweeper', 'list_applier'];
    const deadline = Date.now() + 15_000;
    let samples = await scrape(base);
    while (components.some((c) => valueOf(samples, 'relay_late_pass_reads_total', { component: c, horizon: '10' }) === 0) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      samples = await scrape(base);
    }
    for (const component of components) {
      expect(valueOf(samples, 'relay_late_pass_reads_total', { component, horizon: '10' }), component).toBeGreaterThan(0);
      expect(samples.filter((s) => s.name === 'relay_late_changes_total' && s.labels.component === component).map((s) => s.value), component).toEqual([0]);
    }
  });

  it('counts a registry prune: unsuspending the only suspended user of a bucket drops the bucket', async () => {
    const admin = await server.token('root', { admin: true });
    const target = aUser();
    const userId = (await server.gql(CREATE_USER, { input: target }, await server.token(target.username))).data!.createUser.user.id as string;
    const before = await scrape(base);
    const suspended = await server.gql(`mutation Suspend($id: ID!) { suspendUser(input: { userId: $id, reason: "spam" }) { suspension { reason } } }`, { id: userId }, admin);
    expect(suspended.errors).toBeUndefined();
    const unsuspended = await server.gql(`mutation Unsuspend($id: ID!) { unsuspendUser(input: { userId: $id }) { user { id } } }`, { id: userId }, admin);
    expect(unsuspended.errors).toBeUndefined();
    const after = await scrape(base);
    const delta = (name: string, labels: Record<string, string>) => valueOf(after, name, labels) - valueOf(before, name, labels);
    expect(delta('relay_registry_prunes_total', { registry: 'status_buckets', outcome: 'pruned' })).toBe(1);
    expect(delta('relay_registry_prunes_total', { registry: 'status_buckets', outcome: 'kept' })).toBe(0);
    expect(delta('relay_graphql_requests_total', { operation: 'Suspend', type: 'mutation', outcome: 'success' })).toBe(1);
    // Both sagas finished in the request: none is left running here.
    expect(valueOf(after, 'relay_sagas_in_flight')).toBe(0);
  });

  it('times each list transaction the applier applies', async () => {
    const before = valueOf(await scrape(base), 'relay_list_applier_apply_delay_seconds_count');
    const created = await server.gql(`mutation { createList(input: { title: "Metered" }) { list { id } } }`, {}, token);
    const listId = created.data!.createList.list.id as string;
    for (const label of ['one', 'two']) {
      const added = await server.gql(`mutation ($id: ID!, $label: String!) { addListItem(input: { listId: $id, label: $label }) { item { id } } }`, { id: listId, label }, token);
      expect(added.errors).toBeUndefined();
    }
    // The applier is woken after each append and applies in the background.
    const deadline = Date.now() + 5_000;
    let applied = 0;
    while (Date.now() < deadline && applied < 2) {
      applied = valueOf(await scrape(base), 'relay_list_applier_apply_delay_seconds_count') - before;
      if (applied < 2) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(applied).toBe(2);
  });

  it('counts a saga recovery: a suspension whose process "crashed" after its first log write is rolled by the next pass', async () => {
    const admin = await server.token('root', { admin: true });
    const target = aUser();
    const userId = (await server.gql(CREATE_USER, { input: target }, await server.token(target.username))).data!.createUser.user.id as string;
    const before = await scrape(base);
    // From the saga's first log write on, every store call fails, as if the process had died.
    let started = false;
    faulty.failWhen((call) => {
      if (started) return true;
      started = call.tables.some((t) => t.startsWith('saga_log'));
      return false;
    });
    const crashed = await server.gql(`mutation ($id: ID!) { suspendUser(input: { userId: $id, reason: "spam" }) { suspension { reason } } }`, { id: userId }, admin);
    expect(crashed.errors).toBeDefined();
    faulty.heal();
    const report = await server.app.recoverSagas();
    expect(report.rolledForward + report.rolledBack).toBe(1);
    const after = await scrape(base);
    const delta = (labels: Record<string, string>) => valueOf(after, 'relay_saga_recoveries_total', labels) - valueOf(before, 'relay_saga_recoveries_total', labels);
    expect(delta({ outcome: 'forward' })).toBe(report.rolledForward);
    expect(delta({ outcome: 'backward' })).toBe(report.rolledBack);
    expect(delta({ outcome: 'failed' })).toBe(0);
    // The pass found that one saga open.
    expect(valueOf(after, 'relay_sagas_open')).toBe(1);
    expect((await server.app.recoverSagas()).rolledForward).toBe(0);
    expect(valueOf(await scrape(base), 'relay_sagas_open')).toBe(0);
  });

  it('tracks live sockets, subscriptions and feeds, and counts the polls and the changes delivered', async () => {
    const client = liveClient(server.url, { token });
    try {
      const sub = client.subscribe(POSTS_CHANGED, { authorId });
      await waitFor(() => server.app.services.live.subscriptions === 1, 5_000, 'the subscription');
      const before = await scrape(base);
      expect(valueOf(before, 'relay_live_sockets')).toBe(1);
      expect(valueOf(before, 'relay_live_subscriptions')).toBe(1);
      expect(valueOf(before, 'relay_live_feeds')).toBe(1);
      await server.gql(CREATE_POST, { content: 'metered post' }, token);
      await sub.next(1);
      const after = await scrape(base);
      expect(valueOf(after, 'relay_live_changes_delivered_total') - valueOf(before, 'relay_live_changes_delivered_total')).toBe(1);
      expect(valueOf(after, 'relay_live_polls_total')).toBeGreaterThan(valueOf(before, 'relay_live_polls_total'));
      expect(valueOf(after, 'relay_live_feeds_polled_total')).toBeGreaterThan(valueOf(before, 'relay_live_feeds_polled_total'));
      // A trailing pass reads once the polls' floor has moved past where the subscription began.
      const pass = { horizonMs: 3_600_000, intervalMs: 60_000 };
      let reads = 0;
      for (const deadline = Date.now() + 10_000; reads === 0 && Date.now() < deadline; ) {
        reads += (await server.app.services.live.latePass(pass)).reads;
        if (reads === 0) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(reads).toBeGreaterThan(0);
      const passed = await scrape(base);
      expect({
        reads: valueOf(passed, 'relay_late_pass_reads_total', { component: 'live', horizon: '3600' }),
        late: valueOf(passed, 'relay_late_changes_total', { component: 'live' }),
      }).toEqual({ reads, late: 0 });
      sub.stop();
    } finally {
      await client.dispose();
    }
    await waitFor(() => server.app.liveServer.sockets === 0, 5_000, 'the socket to close');
    const closed = await scrape(base);
    expect(valueOf(closed, 'relay_live_sockets')).toBe(0);
    expect(valueOf(closed, 'relay_live_subscriptions')).toBe(0);
  });

  it(`bounds the operation label: the first ${OPERATION_NAME_CAP} names get their own, every later one shares "${OTHER_OPERATION}"`, async () => {
    const fresh = await startTestServer({ env: { METRICS: 'true' } });
    try {
      const extra = 40;
      for (let i = 0; i < OPERATION_NAME_CAP + extra; i++) {
        const res = await fresh.gql(`query Op${i} { __typename }`);
        expect(res.errors).toBeUndefined();
      }
      const samples = (await scrape(baseOf(fresh))).filter((s) => s.name === 'relay_graphql_requests_total');
      const names = new Set(samples.map((s) => s.labels.operation));
      expect(names.size).toBe(OPERATION_NAME_CAP + 1);
      expect(names.has(`Op${OPERATION_NAME_CAP - 1}`)).toBe(true);
      expect(names.has(`Op${OPERATION_NAME_CAP}`)).toBe(false);
      expect(valueOf(samples, 'relay_graphql_requests_total', { operation: OTHER_OPERATION })).toBe(extra);
      // A name already labelled keeps its label.
      await fresh.gql(`query Op0 { __typename }`);
      expect(valueOf(await scrape(baseOf(fresh)), 'relay_graphql_requests_total', { operation: 'Op0' })).toBe(2);
    } finally {
      await fresh.close();
    }
  });

  it('shows the requests in flight and queued, the principals with a budget, and counts refusals under their status', async () => {
    const fresh = await startTestServer({ env: { METRICS: 'true', RATE_LIMIT_POINTS: '3', MAX_IN_FLIGHT: '1' } });
    try {
      expect((await fresh.gql(`{ __typename }`)).status).toBe(200);
      const at = await scrape(baseOf(fresh));
      expect(valueOf(at, 'relay_requests_in_flight')).toBe(0);
      expect(valueOf(at, 'relay_requests_queued')).toBe(0);
      expect(valueOf(at, 'relay_rate_limit_principals')).toBe(1);
      // 3 points, 1 per request: the fourth is over.
      for (let i = 0; i < 2; i++) expect((await fresh.gql(`{ __typename }`)).status).toBe(200);
      expect((await fresh.gql(`{ __typename }`)).status).toBe(429);
      expect(valueOf(await scrape(baseOf(fresh)), 'relay_http_requests_total', { route: '/graphql', status: '429' })).toBe(1);
    } finally {
      await fresh.close();
    }
  });

  it('keeps each app\'s series apart: two servers in one process count only their own requests', async () => {
    const other = await startTestServer({ env: { METRICS: 'true' } });
    try {
      await other.gql(`query OnlyOnTheOther { __typename }`);
      expect(valueOf(await scrape(baseOf(other)), 'relay_graphql_requests_total', { operation: 'OnlyOnTheOther' })).toBe(1);
      expect(valueOf(await scrape(base), 'relay_graphql_requests_total', { operation: 'OnlyOnTheOther' })).toBe(0);
    } finally {
      await other.close();
    }
  });
});

describe('METRICS_TOKEN', () => {
  const secret = 'metrics-token-0123456789abcdef';
  let server: TestServer;
  let base: string;

  beforeAll(async () => {
    server = await startTestServer({ env: { METRICS: 'true', METRICS_TOKEN: secret } });
    base = baseOf(server);
  });
  afterAll(() => server.close());

  it('answers 401 without the bearer token or with a wrong one, and the metrics with it', async () => {
    const none = await fetch(`${base}/metrics`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
    expect(await none.text()).not.toContain('relay_');
    expect((await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${secret}x` } })).status).toBe(401);
    expect((await fetch(`${base}/metrics`, { headers: { authorization: secret } })).status).toBe(401);
    const ok = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${secret}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toContain('text/plain');
    expect(await ok.text()).toContain('relay_graphql_requests_total');
  });

  it('leaves the probes open: a load balancer needs no token', async () => {
    expect((await fetch(`${base}/livez`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });
});

describe('METRICS in production', () => {
  const production = {
    NODE_ENV: 'production',
    AUTH_SECRET: 'pr0d-auth-secret-9f8e7d6c5b4a39281706f5e4d3c2b1a0',
    CURSOR_SECRET: 'pr0d-cursor-secret-0a1b2c3d4e5f60718293a4b5c6d7e8f9',
  };

  it('refuses to start with METRICS=true and no METRICS_TOKEN, saying what to set', () => {
    expect(() => loadConfig({ ...production, METRICS: 'true' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...production, METRICS: 'true' })).toThrow(/METRICS=true needs METRICS_TOKEN when NODE_ENV=production/);
  });

  it('starts with a token, and with metrics off needs none', () => {
    expect(loadConfig({ ...production, METRICS: 'true', METRICS_TOKEN: 'a-long-enough-metrics-token' }).metrics).toEqual({ enabled: true, token: 'a-long-enough-metrics-token' });
    expect(loadConfig(production).metrics).toEqual({ enabled: false, token: null });
  });

  it('makes the server process exit with code 2 and the configuration error on stderr', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: fileURLToPath(new URL('../../', import.meta.url)),
      env: { ...process.env, ...production, METRICS: 'true', METRICS_TOKEN: '', SQLITE_PATH: ':memory:', PORT: String(await freePort()) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(2);
    expect(stderr.trim()).toMatch(/^configuration error: METRICS=true needs METRICS_TOKEN when NODE_ENV=production/);
  }, 30_000);

  it('refuses a token shorter than 16 bytes', () => {
    expect(() => loadConfig({ METRICS: 'true', METRICS_TOKEN: 'short' })).toThrow('METRICS_TOKEN must be at least 16 bytes long, got 5');
  });
});
