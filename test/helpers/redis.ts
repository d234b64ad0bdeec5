/**
 * A redis-server of the test's own: a free port, a temporary folder, no
 * persistence; stopped (and restartable on the same port) by the test.
 * Never the machine's own Redis.
 *
 * Without a redis-server binary the Redis tests are skipped with a message
 * saying so; TRUSTGATE_REQUIRE_REDIS=1 (set by .ci/run) turns that skip into
 * a failure.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './process.js';

function findRedis(): string | undefined {
  // REDIS_SERVER names the binary (a path that does not exist: none, as on a machine without it).
  const fromEnv = process.env.REDIS_SERVER;
  if (fromEnv) return existsSync(fromEnv) ? fromEnv : undefined;
  const r = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  const path = r.status === 0 ? r.stdout.trim() : '';
  return path === '' ? undefined : path;
}

export const REDIS_SERVER = findRedis();

/**
 * Whether the Redis tests run. When they cannot, says which and why; fails
 * instead when TRUSTGATE_REQUIRE_REDIS=1.
 */
export function redisTestsRun(which: string): boolean {
  if (REDIS_SERVER) return true;
  const why = process.env.REDIS_SERVER
    ? `REDIS_SERVER=${process.env.REDIS_SERVER} does not exist`
    : 'no redis-server binary on PATH (install the Debian package redis-server, or set REDIS_SERVER)';
  if (process.env.TRUSTGATE_REQUIRE_REDIS === '1') throw new Error(`TRUSTGATE_REQUIRE_REDIS=1 but the Redis tests cannot run: ${why}`);
  console.warn(`SKIPPED: ${which}: ${why}`);
  return false;
}

export interface TestRedis {
  port: number;
  url: string;
  /** Stop the server (SIGKILL: as abrupt as a crash); the data is gone. */
  stop(): Promise<void>;
  /** Start it again on the same port. */
  start(): Promise<void>;
  /** SIGSTOP: the server keeps its connections and answers nothing (a server that hangs). */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
  /** Stop for good and remove its folder. */
  close(): Promise<void>;
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Start one; `args` are more redis-server options (e.g. `['--requirepass', 'x']`). */
export async function startRedis(args: string[] = []): Promise<TestRedis> {
  if (!REDIS_SERVER) throw new Error('no redis-server');
  const dir = mkdtempSync(join(tmpdir(), 'trustgate-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const start = async (): Promise<void> => {
    const c = spawn(
      REDIS_SERVER,
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no', '--loglevel', 'warning', ...args],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let err = '';
    // redis-server writes its errors to stdout.
    c.stdout!.on('data', (d) => (err += String(d)));
    c.stderr!.on('data', (d) => (err += String(d)));
    child = c;
    exited = new Promise((resolve) => c.once('exit', () => resolve()));
    const deadline = Date.now() + 10_000;
    while (!(await listening(port))) {
      if (c.exitCode !== null || Date.now() > deadline) throw new Error(`redis-server did not start on port ${port}: ${err}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  const stop = async (): Promise<void> => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    child = undefined;
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    pause: () => void child?.kill('SIGSTOP'),
    resume: () => void child?.kill('SIGCONT'),
    stop,
    start,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
