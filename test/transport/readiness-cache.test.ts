/** `/readyz` answers from a result at most one second old: one store check a second, however many probes. */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';
import { cachedFor, READINESS_CACHE_MS } from '../../src/transport/http-server.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

class SchemaChecks extends StoreDecorator {
  checks = 0;
  protected around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    if (call.operation === 'checkSchema') this.checks++;
    return run();
  }
}

describe('the readiness cache', () => {
  it('shares one check between callers within its age, a running one included, and checks again after', async () => {
    let now = 0;
    let runs = 0;
    const check = cachedFor(1_000, async () => ++runs, () => now);
    expect(await Promise.all([check(), check()])).toEqual([1, 1]);
    now = 999;
    expect(await check()).toBe(1);
    now = 1_000;
    expect(await check()).toBe(2);
  });

  describe('over HTTP', () => {
    let server: TestServer;
    let store: SchemaChecks;
    beforeAll(async () => {
      server = await startTestServer({ wrap: (inner) => (store = new SchemaChecks(inner)) });
    });
    afterAll(() => server.close());

    it('reads the store once for a burst of probes, and again once the result is a second old', async () => {
      const readyz = new URL('/readyz', server.url);
      await sleep(READINESS_CACHE_MS);
      const before = store.checks;
      const answers = await Promise.all(Array.from({ length: 50 }, () => fetch(readyz).then((r) => r.status)));
      expect(answers).toEqual(Array(50).fill(200));
      expect(store.checks - before).toBe(1);
      await sleep(READINESS_CACHE_MS + 50);
      expect((await fetch(readyz)).status).toBe(200);
      expect(store.checks - before).toBe(2);
    });
  });
});
