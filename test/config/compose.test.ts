/**
 * No Docker engine runs on the build machines, so CI validates the compose file's
 * structure instead: services, health checks, the cluster profile, and that each
 * server's configuration is one the server accepts.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config.js';

type Service = {
  image?: string;
  build?: string;
  profiles?: string[];
  environment?: Record<string, string>;
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  ports?: string[];
};

const compose = parse(readFileSync('docker-compose.yml', 'utf8'), { merge: true }) as { services: Record<string, Service> };

/** The environment as the container sees it (${VAR:-default} resolved to its default). */
function env(service: Service): Record<string, string> {
  return Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, String(v).replace(/\$\{\w+:-([^}]*)\}/g, '$1')]));
}

describe('docker-compose.yml', () => {
  it('runs Cassandra 5 with a health check and the server after it', () => {
    const { cassandra, server } = compose.services;
    expect(cassandra!.image).toBe('cassandra:5.0');
    expect(cassandra!.healthcheck!.test.join(' ')).toContain('cqlsh');
    expect(server!.build).toBe('.');
    expect(server!.depends_on).toEqual({ cassandra: { condition: 'service_healthy' } });
    expect(server!.healthcheck!.test.join(' ')).toContain('/readyz');
    const config = loadConfig(env(server!));
    expect(config).toMatchObject({ store: 'cassandra', cassandra: { contactPoints: ['cassandra'], keyspace: 'relay' } });
  });

  it('has a three-node cluster profile with NetworkTopologyStrategy and replication factor 3', () => {
    const nodes = ['cassandra-1', 'cassandra-2', 'cassandra-3'].map((n) => compose.services[n]!);
    for (const node of nodes) {
      expect(node.profiles).toEqual(['cluster']);
      expect(node.image).toBe('cassandra:5.0');
      expect(node.healthcheck).toBeDefined();
      expect(node.environment!.CASSANDRA_SEEDS).toBe('cassandra-1,cassandra-2');
    }
    const server = compose.services['server-cluster']!;
    expect(server.profiles).toEqual(['cluster']);
    expect(Object.keys(server.depends_on!)).toEqual(['cassandra-1', 'cassandra-2', 'cassandra-3']);
    const config = loadConfig(env(server));
    expect(config.cassandra.replication).toEqual({ class: 'NetworkTopologyStrategy', datacenter1: 3 });
    expect(config.cassandra.contactPoints).toEqual(['cassandra-1', 'cassandra-2', 'cassandra-3']);
  });
});
