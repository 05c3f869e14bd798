/**
 * No Docker engine runs on the build machines, so CI validates the compose file's
 * structure instead: services, health checks, the cluster profile, that each server's
 * configuration is one the server accepts, that mode and secrets are explicit and the
 * same for every server, and that the image carries the token command.
 */
import { existsSync, readFileSync } from 'node:fs';
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

/** What a user puts in .env (or exports) before `docker compose up`: real secrets. */
const DOTENV = {
  AUTH_SECRET: 'kY3n0mS1QfV7rW2xZ8pL4tB6uH9jD5cA0eG1iK3oM7q',
  CURSOR_SECRET: 'Zr8T2vN6bX1cQ9wE4yU7iO3pA5sD0fG2hJ6kL8zX1cV',
};

/**
 * The environment as the container sees it, interpolated as compose does:
 * ${VAR:-default} takes the shell's value or the default, ${VAR:?message} the shell's
 * value or fails with the message.
 */
function env(service: Service, shell: Record<string, string> = DOTENV): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([k, v]) => [
      k,
      String(v).replace(/\$\{(\w+):([-?])([^}]*)\}/g, (_, name: string, kind: string, rest: string) => {
        if (shell[name]) return shell[name]!;
        if (kind === '-') return rest;
        throw new Error(`${name}: ${rest}`);
      }),
    ]),
  );
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
    expect(config).toMatchObject({ store: 'cassandra', cassandra: { contactPoints: ['cassandra'], keyspace: 'relay', autoSchema: true } });
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

describe('the servers in docker-compose.yml', () => {
  const servers = [compose.services.server!, compose.services['server-cluster']!];

  it('run in production mode and refuse to start without real secrets', () => {
    for (const server of servers) {
      expect(server.environment).toMatchObject({
        NODE_ENV: 'production',
        AUTH_SECRET: expect.stringMatching(/^\$\{AUTH_SECRET:\?.+\}$/),
        CURSOR_SECRET: expect.stringMatching(/^\$\{CURSOR_SECRET:\?.+\}$/),
      });
      expect(() => env(server, {})).toThrow(/CURSOR_SECRET: set CURSOR_SECRET to a random secret of 32\+ bytes/);
      expect(loadConfig(env(server))).toMatchObject({ production: true, auth: { kind: 'shared-secret', secret: DOTENV.AUTH_SECRET }, cursorSecret: DOTENV.CURSOR_SECRET, devSecrets: [] });
    }
  });

  it('share one mode, one set of secrets and one demo setting', () => {
    const shared = ['NODE_ENV', 'AUTH_SECRET', 'CURSOR_SECRET', 'SEED_DEMO', 'PLAYGROUND', 'CORS_ORIGINS', 'CASSANDRA_KEYSPACE'];
    const pick = (s: Service) => Object.fromEntries(shared.map((k) => [k, s.environment?.[k]]));
    expect(pick(servers[1]!)).toEqual(pick(servers[0]!));
  });

  it('run an image that carries the compiled token and seed commands', () => {
    const dockerfile = readFileSync('Dockerfile', 'utf8');
    // The build compiles src/ (scripts included) into dist/, which the final stage copies.
    expect(dockerfile).toMatch(/COPY src \.\/src\nRUN npm run build/);
    expect(dockerfile).toContain('COPY --from=build /app/dist ./dist');
    expect(JSON.parse(readFileSync('tsconfig.build.json', 'utf8'))).toMatchObject({ compilerOptions: { rootDir: 'src', outDir: 'dist' }, include: ['src'] });
    expect(existsSync('src/scripts/token.ts') && existsSync('src/scripts/seed.ts')).toBe(true);
  });
});
