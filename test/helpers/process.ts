/** Start the real service as users do (`npm start`) on a free port, and stop it. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      s.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

export interface Running {
  child: ChildProcess;
  port: number;
  base: string;
  /** pid of the node process that serves (npm runs it as a child). */
  pid: number;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface Started {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Spawn `npm start`; resolves when /readyz answers 200, or with the exit when it never does. */
export async function startService(env: Record<string, string>, command: string[] = ['npm', 'start']): Promise<Running | Started> {
  const port = await freePort();
  const child = spawn(command[0]!, command.slice(1), {
    cwd: env.CWD ?? ROOT,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (err += String(d)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  let done = false;
  void exited.then(() => (done = true));
  while (!done && Date.now() < deadline) {
    try {
      const r = await fetch(`${base}/readyz`);
      if (r.status === 200) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  if (done) return { code: await exited, stdout: out, stderr: err };
  const pid = serverPid(child.pid!) ?? child.pid!;
  return {
    child,
    port,
    base,
    pid,
    stdout: () => out,
    stderr: () => err,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      process.kill(pid, signal);
      return exited;
    },
  };
}

/** The processes `pid` started (its children), from /proc (Linux); none when it is gone. */
export function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number),
    );
  } catch {
    return [];
  }
}

/** Whether a process exists (signal 0). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The node process serving under `npm start`: the descendant of `root` whose command line runs dist/server.js or dist/cli.js. */
export function serverPid(root: number): number | undefined {
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (cmd[0]?.endsWith('node') && cmd.some((a) => /dist\/(server|cli)\.js$/.test(a))) return pid;
    } catch {
      // gone
    }
    queue.push(...childrenOf(pid));
  }
  return undefined;
}

export function isRunning(s: Running | Started): s is Running {
  return 'child' in s;
}

/**
 * `start(env)` for a test file: starts the service (npm start, or `command`), throws with
 * its output when it did not come up, and kills it and its workers after
 * the file's tests (afterAll), whatever they left running.
 */
export function serviceStarter(command?: string[]): (env: Record<string, string>) => Promise<Running> {
  const started: Running[] = [];
  afterAll(() => {
    for (const s of started) {
      for (const pid of [s.pid, ...childrenOf(s.pid)]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  });
  return async (env) => {
    const s = await startService(env, command);
    if (!isRunning(s)) throw new Error(`service did not start (exit ${s.code}):\n${s.stderr}\n${s.stdout}`);
    started.push(s);
    return s;
  };
}
