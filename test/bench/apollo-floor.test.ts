import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFloor, NOT_RECORDED, type Floor } from '../../bench/floor.js';
import { benchConfig, TIMELINE_QUERY } from '../../bench/fixture.js';

/** What the real server answers the timeline query with, for `posts` posts of "bench". */
function aTimelineResponse(posts: number) {
  const author = { username: 'bench', displayName: 'Bench Mark' };
  const edges = Array.from({ length: posts }, (_, i) => ({
    cursor: `cursor-${i}`,
    node: { id: `UG9zdDo${i}`, content: `benchmark post number ${99 - i}`, createdAt: new Date(Date.UTC(2026, 10, 26, 12, 59 - i, 0, 123)).toISOString(), author },
  }));
  return { userByUsername: { posts: { edges, pageInfo: { hasNextPage: true, hasPreviousPage: false, endCursor: `cursor-${posts - 1}` } } } };
}

const SUSPENDED_QUERY = '{ suspendedUsers(first: 50) { edges { cursor node { reason } } } }';

describe("Apollo's floor (bench/floor.ts)", () => {
  const recorded = aTimelineResponse(20);
  let floor: Floor;
  let url: string;
  const post = async (query: string) => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
    return { status: res.status, body: (await res.json()) as { data?: unknown; errors?: Array<{ message: string; extensions?: { code?: string } }>; extensions?: unknown } };
  };

  beforeAll(async () => {
    floor = await createFloor(benchConfig(':memory:'), [{ query: TIMELINE_QUERY, data: recorded }], pino({ level: 'silent' }));
    url = `http://127.0.0.1:${await floor.listen(0, '127.0.0.1')}/graphql`;
  });
  afterAll(() => floor.close());

  it('answers the timeline query with the data it was given, through the same request plugin (no store round trips)', async () => {
    const { status, body } = await post(TIMELINE_QUERY);
    expect(body).toEqual({ data: recorded, extensions: { storeRoundTrips: 0, storeStatements: 0 } });
    expect(status).toBe(200);
  });

  it('answers it again the same way (the response is served, not consumed)', async () => {
    const first = await post(TIMELINE_QUERY);
    const second = await post(TIMELINE_QUERY);
    expect(first.body.data).toEqual(recorded);
    expect(second.body).toEqual(first.body);
  });

  it('refuses a valid query it was given no response for with a coded error and no data', async () => {
    const { status, body } = await post(SUSPENDED_QUERY);
    expect(status).toBe(400);
    expect(body.data).toBeUndefined();
    expect(body.errors).toHaveLength(1);
    expect(body.errors![0]!.extensions?.code).toBe(NOT_RECORDED);
    expect(body.errors![0]!.message).toMatch(/only the 1 queries it was given a response for/);
  });

  it('refuses the timeline query written differently, rather than guess', async () => {
    const { status, body } = await post(TIMELINE_QUERY.replace('posts(first: 20)', 'posts(first: 21)'));
    expect(status).toBe(400);
    expect(body.errors![0]!.extensions?.code).toBe(NOT_RECORDED);
  });
});
