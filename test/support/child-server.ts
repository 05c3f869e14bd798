/**
 * The real server as a child process (`node --import tsx src/main.ts`, or a test-only
 * entry), for tests that kill it: SIGKILL mid-saga, then a restart on the same SQLite
 * file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TEST_AUTH_SECRET, TEST_CURSOR_SECRET } from './test-server.js';

/**
 * The project's root: the nearest folder above this file with a package.json (this file
 * also runs from a benchmark's compiled tree, bench/compiled.ts, inside the project).
 */
function projectRoot(from: string): string {
  if (existsSync(join(from, 'package.json')) || dirname(from) === from) return from;
  return projectRoot(dirname(from));
}

const ROOT = projectRoot(dirname(fileURLToPath(import.meta.url)));

/** A free loopback port. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** A running child server. */
export interface ChildServer {
  readonly url: string;
  readonly process: ChildProcess;
  readonly output: () => string;
  /** Resolves with the exit signal or code. */
  readonly exited: Promise<NodeJS.Signals | number | null>;
}

/**
 * Start the server (`entry`, from the project root) on `sqlitePath` and wait until /readyz
 * answers, at most `readyTimeoutMs` (creating the schema on a three-node ring takes a minute).
 */
export async function startChildServer(
  sqlitePath: string,
  env: Record<string, string> = {},
  entry = 'src/main.ts',
  readyTimeoutMs = 30_000,
): Promise<ChildServer> {
  const port = await freePort();
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      SQLITE_PATH: sqlitePath,
      AUTH_SECRET: TEST_AUTH_SECRET,
      CURSOR_SECRET: TEST_CURSOR_SECRET,
      SEED_DEMO: 'false',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  const base = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + readyTimeoutMs; Date.now() < deadline; ) {
    if (child.exitCode !== null) throw new Error(`server exited early:\n${output}`);
    try {
      const res = await fetch(`${base}/readyz`);
      if (res.ok) return { url: `${base}/graphql`, process: child, output: () => output, exited };
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error(`server did not become ready:\n${output}`);
}

/** How a server that was expected not to start ended. */
export interface RefusedStart {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** From spawn to exit, in ms. */
  readonly ms: number;
}

/**
 * Run the server (`src/main.ts`) on Cassandra with `env` until it exits on its own,
 * without the test run's own `CASSANDRA_*` variables (only `env`'s reach it).
 */
export async function runUntilExit(env: Record<string, string>, timeoutMs = 60_000): Promise<RefusedStart> {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('CASSANDRA_')));
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...inherited, STORE: 'cassandra', PORT: String(await freePort()), HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr, ms: Date.now() - started };
}
