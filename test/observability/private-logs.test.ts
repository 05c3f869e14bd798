/**
 * Logs without personal data: store warnings (the embedded store's tombstone warnings
 * through a real server's store, and Cassandra's warning texts) are logged with their
 * table and a hash of their key, never the key's values, at most once per table and
 * kind per interval; credentials (Authorization headers, tokens, passwords) are
 * redacted from every line by pino's `redact`.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createStore, storeLogging } from '../../src/composition-root.js';
import { REDACTED, createLogger } from '../../src/observability/logger.js';
import { storeWarningLog } from '../../src/observability/store-warnings.js';
import { storeWarningOf } from '../../src/store/cassandra/cassandra-store.js';
import { defineTable } from '../../src/store/table.js';

/** A logger writing JSON lines into an array, as the server's does into stdout. */
function capturedLogger(level = 'info') {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  }) as unknown as NodeJS.WriteStream;
  return { logger: createLogger({ level, production: true, stream }), lines, parsed: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const byName = defineTable({ name: 'names_by_prefix', columns: { prefix: 'text', name: 'text' }, partitionKey: ['prefix'], clustering: ['name'] });

describe('store warnings in the log', () => {
  it("logs the embedded store's tombstone warning with the table and a hash of the key, never its values, once per interval", async () => {
    const { logger, lines, parsed } = capturedLogger();
    const config = loadConfig({ SQLITE_PATH: ':memory:', STORE_TOMBSTONE_WARN_THRESHOLD: '10', STORE_COMPACTION_INTERVAL_MS: '0' });
    const store = createStore(config, storeLogging(config, logger));
    try {
      await store.ensureTables([byName]);
      const prefixes = ['alice-wonder', 'bob-the-builder'];
      for (const prefix of prefixes) for (let i = 0; i < 20; i++) await store.delete(byName, { prefix, name: `${prefix}-${i}` });
      for (let round = 0; round < 5; round++) for (const prefix of prefixes) expect(await store.slice(byName, { partition: { prefix }, limit: 5 })).toEqual([]);
      // Ten warnings, one line: the rest are left out until the interval has passed.
      expect(parsed()).toEqual([
        expect.objectContaining({
          level: 40,
          table: 'names_by_prefix',
          kind: 'tombstones',
          tombstones: 20,
          keyHash: expect.stringMatching(/^[0-9a-f]{16}$/),
          msg: 'store warning: Read 0 live rows and 20 tombstone cells for query SELECT * FROM names_by_prefix WHERE prefix = ? LIMIT 5 (see tombstone_warn_threshold)',
        }),
      ]);
      for (const prefix of prefixes) expect(lines.join('\n')).not.toContain(prefix);
    } finally {
      await store.close();
    }
  });

  it('hashes a key alike on every server sharing CURSOR_SECRET, apart for another key or secret, and says how many it left out', () => {
    let now = 0;
    const run = (secret: string, keys: string[][]) => {
      const { logger, parsed } = capturedLogger();
      const warn = storeWarningLog(logger, { hashKey: secret, intervalMs: 1_000, now: () => now });
      for (const keyValues of keys) {
        warn({ table: 't', kind: 'tombstones', tombstones: 2_000, message: 'Read 0 live rows and 2000 tombstone cells for a query of t', keyValues });
        now += 400;
      }
      return parsed();
    };
    const a = run('secret-1', [['user-1'], ['user-2'], ['user-3'], ['user-1'], ['user-2']]);
    // At 0 ms, then at 1,200 ms (two left out at 400 and 800), the fifth at 1,600 ms left out.
    expect(a).toHaveLength(2);
    expect(a[1]).toMatchObject({ leftOut: 2 });
    now = 0;
    const b = run('secret-1', [['user-1']]);
    const c = run('secret-2', [['user-1']]);
    now = 0;
    const d = run('secret-1', [['user-2']]);
    expect(b[0]!.keyHash).toBe(a[0]!.keyHash);
    expect(c[0]!.keyHash).not.toBe(b[0]!.keyHash);
    expect(d[0]!.keyHash).not.toBe(b[0]!.keyHash);
  });

  it("rewrites Cassandra's warning texts without the statement's values", () => {
    const userId = randomUUID();
    const read = { query: 'SELECT user_id, reason FROM relay.suspended_users WHERE user_id = ? LIMIT ?', params: [userId, 100] };
    expect(
      storeWarningOf(`Read 0 live rows and 1001 tombstone cells for query SELECT * FROM relay.suspended_users WHERE user_id = ${userId} LIMIT 100; token 4242 (see tombstone_warn_threshold)`, [read]),
    ).toEqual({
      table: 'suspended_users',
      kind: 'tombstones',
      tombstones: 1001,
      message: 'Read 0 live rows and 1001 tombstone cells for a query of suspended_users (see tombstone_warn_threshold)',
      keyValues: [userId, 100],
    });
    const summary = storeWarningOf(`2 nodes scanned up to 1500 tombstones and issued tombstone warnings for query SELECT * FROM relay.suspended_users WHERE user_id = ${userId}`, [read]);
    expect(summary).toMatchObject({ kind: 'tombstones', tombstones: 1500, message: '2 nodes scanned up to 1500 tombstones and issued tombstone warnings for a query of suspended_users' });
    const write = { query: 'INSERT INTO "relay"."users_by_name" (prefix, name) VALUES (?, ?)', params: ['ali', 'alice'] };
    const other = storeWarningOf("Aggregation query used on table users_by_name WHERE prefix = 'ali' AND name > 'al'", [write]);
    expect(other).toEqual({ table: 'users_by_name', kind: 'other', message: 'Aggregation query used on table users_by_name WHERE …', keyValues: ['ali', 'alice'] });
    expect(storeWarningOf("Batch for [relay.users_by_name] is of size 6.1KiB, exceeding specified threshold of 5.0KiB by 1.1KiB. Values: 'alice'", [write]).message).toBe(
      "Batch for [relay.users_by_name] is of size 6.1KiB, exceeding specified threshold of 5.0KiB by 1.1KiB. Values: '…'",
    );
  });
});

describe('credentials in the log', () => {
  it('redacts Authorization headers, tokens and passwords wherever a logged object carries them', () => {
    const { logger, lines, parsed } = capturedLogger();
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl';
    logger.info({ authorization: `Bearer ${jwt}`, token: jwt }, 'top level');
    logger.info({ req: { headers: { Authorization: `Bearer ${jwt}`, cookie: 'session=abc123', host: 'api.example.com' } } }, 'a request');
    logger.warn({ err: { message: 'connect failed', options: { credentials: { username: 'relay', password: 'hunter2-cassandra' } } } }, 'an error');
    logger.error({ connection: { password: 'hunter2-cassandra', accessToken: jwt, secret: 'the-auth-secret' } }, 'nested');
    const all = lines.join('\n');
    for (const secret of [jwt, 'hunter2-cassandra', 'session=abc123', 'the-auth-secret']) expect(all).not.toContain(secret);
    const [top, request, error, nested] = parsed();
    expect(top).toMatchObject({ authorization: REDACTED, token: REDACTED });
    // What is not a credential stays.
    expect(request).toMatchObject({ req: { headers: { Authorization: REDACTED, cookie: REDACTED, host: 'api.example.com' } } });
    expect(error).toMatchObject({ err: { message: 'connect failed', options: { credentials: REDACTED } } });
    expect(nested).toMatchObject({ connection: { password: REDACTED, accessToken: REDACTED, secret: REDACTED } });
  });
});
