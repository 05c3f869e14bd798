/**
 * STORES: every store the contract suite (and the feature tests that run on more than
 * one store) runs against. SQLite is always available. Cassandra is available when
 * CASSANDRA_CONTACT_POINTS is set, or when a Docker engine answers (testcontainers
 * then starts Cassandra 5); otherwise it carries the reason it is skipped.
 */
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import cassandra from 'cassandra-driver';
import { CassandraStore } from '../../src/store/cassandra/cassandra-store.js';
import type { Store } from '../../src/store/port.js';
import { SqliteStore, type SqliteStoreOptions } from '../../src/store/sqlite/sqlite-store.js';

/** A store to run a suite against, or the reason it cannot run here. */
export interface StoreTarget {
  readonly name: string;
  readonly available: boolean;
  readonly reason: string;
  readonly create: () => Promise<{ store: Store; dispose: () => Promise<void> }>;
}

/** A fresh in-memory SQLite store (options: the store's own clocks). */
export function memorySqliteStore(options: Omit<SqliteStoreOptions, 'database'> = {}): SqliteStore {
  return new SqliteStore({ database: new Database(':memory:'), ...options });
}

async function dockerAvailable(): Promise<string | null> {
  const { existsSync } = await import('node:fs');
  if (!process.env.DOCKER_HOST && !existsSync('/var/run/docker.sock')) {
    return 'no Docker engine (DOCKER_HOST unset, no /var/run/docker.sock) and CASSANDRA_CONTACT_POINTS is unset';
  }
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timed out')), 10_000));
    await Promise.race([getContainerRuntimeClient(), timeout]);
    return null;
  } catch (err) {
    return `no Docker engine reachable (${String((err as Error).message).split('\n')[0]}) and CASSANDRA_CONTACT_POINTS is unset`;
  }
}

async function cassandraTarget(): Promise<StoreTarget> {
  const contactPoints = process.env.CASSANDRA_CONTACT_POINTS;
  const localDataCenter = process.env.CASSANDRA_LOCAL_DC ?? 'datacenter1';
  // Each run gets its own keyspace, so runs never see each other's rows.
  const keyspace = `contract_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const connect = async (points: string[]) => {
    const client = new cassandra.Client({
      contactPoints: points,
      localDataCenter,
      encoding: { useBigIntAsLong: true, useBigIntAsVarint: true },
    });
    await client.connect();
    return client;
  };
  if (contactPoints) {
    return {
      name: 'Cassandra',
      available: true,
      reason: '',
      create: async () => {
        const client = await connect(contactPoints.split(',').map((s) => s.trim()));
        const store = new CassandraStore({ client, keyspace });
        return {
          store,
          dispose: async () => {
            await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
            await store.close();
          },
        };
      },
    };
  }
  const reason = await dockerAvailable();
  if (reason) return { name: 'Cassandra', available: false, reason, create: () => Promise.reject(new Error(reason)) };
  return {
    name: 'Cassandra',
    available: true,
    reason: '',
    create: async () => {
      const { CassandraContainer } = await import('@testcontainers/cassandra');
      const container = await new CassandraContainer('cassandra:5.0').start();
      const client = await connect([container.getContactPoint()]);
      const store = new CassandraStore({ client, keyspace });
      return {
        store,
        dispose: async () => {
          await store.close();
          await container.stop();
        },
      };
    },
  };
}

/** Every store the contract runs against, in order. */
export const STORES: readonly StoreTarget[] = [
  {
    name: 'SQLite',
    available: true,
    reason: '',
    create: async () => {
      const store = memorySqliteStore();
      return { store, dispose: () => store.close() };
    },
  },
  await cassandraTarget(),
];
