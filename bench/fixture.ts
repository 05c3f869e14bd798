/**
 * Shared bench fixture: a SQLite file with a user "bench" and 100 posts (the timeline
 * workload), a meeting accepted by 20 users (the batching workload), and the wiring
 * every server variant uses.
 */
import Database from 'better-sqlite3';
import pino from 'pino';
import { ALL_TABLES, createRequestContext, createServices } from '../src/composition-root.js';
import { loadConfig, type Config } from '../src/config.js';
import { meetingGlobalId } from '../src/graphql/ids.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';

export const BENCH_SECRETS = { AUTH_SECRET: 'bench-auth-secret-0123456789-abcdefgh', CURSOR_SECRET: 'bench-cursor-secret-0123456789-abcdefgh' };

/** The environment of every bench server over `file` (ours reads it; the peers load it the same way). */
export function benchEnv(file: string): Record<string, string> {
  return {
    ...BENCH_SECRETS,
    NODE_ENV: 'production',
    SQLITE_PATH: file,
    SEED_DEMO: 'false',
    LIST_APPLIER: 'false',
    PLAYGROUND: 'false',
    LOG_LEVEL: 'silent',
    // A benchmark's load comes from one address or token, far past any budget and any
    // one principal's share of the execution slots: both off here, set explicitly (the
    // defaults stay what docs/operations.md gives).
    RATE_LIMIT_POINTS: '0',
    MAX_IN_FLIGHT: '0',
  };
}

/** The configuration of a bench server over `file`. */
export function benchConfig(file: string): Config {
  return loadConfig(benchEnv(file));
}

/** A store over `file` and the services features are built from. */
export async function benchServices(file: string) {
  const config = benchConfig(file);
  const store = new SqliteStore({ database: new Database(file) });
  await store.ensureTables(ALL_TABLES);
  const services = createServices(config, { store, logger: pino({ level: 'silent' }) });
  return { config, store, services };
}

/** One GraphQL request of a workload, and how to recognise a right answer. */
export interface Workload {
  readonly name: string;
  readonly body: string;
  /** Headers besides the content type (a token, for workloads that need one). */
  readonly headers?: Record<string, string>;
  /** Null when the response is the expected one, otherwise why not. */
  check(response: unknown): string | null;
}

/** The timeline page: a user by name, and the first 20 of their posts with each post's author. */
export const TIMELINE_QUERY = `query Timeline { userByUsername(username: "bench") { posts(first: 20) {
  edges { cursor node { id content createdAt author { username displayName } } }
  pageInfo { hasNextPage hasPreviousPage endCursor } } } }`;

const ACCEPTANCES_QUERY = `query Acceptances($id: ID!) { node(id: $id) { ... on Meeting { title acceptanceCount
  acceptedBy(first: 20) { edges { cursor node { id username displayName createdAt } }
  pageInfo { hasNextPage hasPreviousPage endCursor } } } } }`;

type Edges = { edges: Array<{ node: { id?: string; author?: { username: string } } }> };

/** The timeline page of the user "bench" (who has at least 20 posts). */
export const TIMELINE_WORKLOAD: Workload = {
  name: 'timeline',
  body: JSON.stringify({ query: TIMELINE_QUERY }),
  check(response) {
    const posts = (response as { data?: { userByUsername?: { posts?: Edges } } }).data?.userByUsername?.posts;
    return posts?.edges.length === 20 ? null : `expected 20 posts, got ${JSON.stringify(response).slice(0, 200)}`;
  },
};

/** The two workloads over a prepared fixture. */
export function benchWorkloads(meetingId: string): Workload[] {
  return [
    TIMELINE_WORKLOAD,
    {
      name: 'acceptances (20 users, batched)',
      body: JSON.stringify({ query: ACCEPTANCES_QUERY, variables: { id: meetingGlobalId(meetingId) } }),
      check(response) {
        const page = (response as { data?: { node?: { acceptedBy?: Edges } } }).data?.node?.acceptedBy;
        const users = new Set(page?.edges.map((e) => e.node.id));
        return users.size === 20 ? null : `expected 20 different users, got ${JSON.stringify(response).slice(0, 200)}`;
      },
    },
  ];
}

/**
 * Create the fixture in a new file `file`: the 100-post timeline of "bench" and a
 * meeting that 20 other users accepted. Resolves to the meeting's id.
 */
export async function prepareOverheadFixture(file: string): Promise<string> {
  const { store, services } = await benchServices(file);
  const { users, timeline, meetings } = createRequestContext(services, { username: 'bench', isAdmin: true });
  const user = await users.create({ username: 'bench', displayName: 'Bench Mark' });
  for (let i = 0; i < 100; i++) await timeline.createPost(user.id, `benchmark post number ${i}`, new Date(Date.now() - (100 - i) * 60_000));
  const meeting = await meetings.create({ title: 'Bench meeting' }, user.id);
  for (let i = 0; i < 20; i++) {
    const guest = await users.create({ username: `guest_${i}`, displayName: `Guest Number ${i}` });
    await meetings.accept(meeting.meetingId, guest.id);
  }
  await store.close();
  return meeting.meetingId;
}
