/**
 * Helpers shared by the benches: settings from the environment, statistics
 * and tables, and starting/stopping the processes under test (the service as
 * users start it, and the bare Fastify echo baseline).
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { alive, childrenOf, freePort } from '../test/helpers/process.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** `--quick` on the command line: the short settings `npm run bench` uses. */
export const QUICK = process.argv.includes('--quick');

/** A positive number from the environment, or the default. */
export function envNumber(name: string, def: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(raw)}`);
  return n;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** Print rows as an aligned text table; the first row is the header. */
export function table(rows: ReadonlyArray<ReadonlyArray<string | number>>): void {
  const cells = rows.map((r) => r.map(String));
  const widths: number[] = [];
  for (const r of cells) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  cells.forEach((r, j) => {
    console.log(r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '));
    if (j === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  });
}

export const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : String(n);

/** The machine line every bench prints first. */
export function machine(): string {
  let model = cpus()[0]?.model ?? 'unknown CPU';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) model = m[1]!.trim();
  } catch {
    // not Linux
  }
  return `node ${process.version}, ${cpus().length} CPUs (${model}), ${process.platform}/${process.arch}`;
}

/**
 * Which build of our code the in-process benches load: `dist` (default: the
 * tsc output users run, rebuilt first with `npm run build`) or `src` (the
 * TypeScript sources through tsx, whose transform adds a little per-closure
 * cost of its own).
 */
export const CODE = (process.env.BENCH_CODE ?? 'dist') as 'dist' | 'src';
if (CODE !== 'dist' && CODE !== 'src') throw new Error('BENCH_CODE must be dist or src');

let built = false;

/** One of our modules from the build chosen by BENCH_CODE, e.g. `ours<typeof import('../src/x.js')>('x.js')`. */
export async function ours<T>(path: string): Promise<T> {
  if (CODE === 'dist' && !built) {
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    built = true;
  }
  return (await import(new URL(`../${CODE}/${path}`, import.meta.url).href)) as T;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A free loopback port (the same helper the end-to-end tests use). */
export { freePort };

// ---------------------------------------------------------------- /proc

/** `pid` and every process below it (the service's worker processes), via /proc/<pid>/task/<tid>/children. */
export function processTree(pid: number): number[] {
  const all: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const p = queue.shift()!;
    all.push(p);
    queue.push(...childrenOf(p));
  }
  return all;
}

/** VmRSS of a process and its descendants (a service with worker processes), in bytes (Linux), or NaN. */
export function rssBytes(pid: number): number {
  return processTree(pid).reduce((sum, p) => sum + rssOne(p), 0);
}

function rssOne(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

let clockTicks: number | undefined;

/** User + system CPU time of a process and its descendants in seconds (Linux), or NaN. */
export function cpuSeconds(pid: number): number {
  return processTree(pid).reduce((sum, p) => sum + cpuOne(p), 0);
}

function cpuOne(pid: number): number {
  try {
    clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / clockTicks;
  } catch {
    return NaN;
  }
}

function parentOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return -1;
  }
}

function argv(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
  } catch {
    return [];
  }
}

/**
 * The node process below `root` that runs `script` (Linux /proc walk); the
 * `sh -c "node dist/server.js"` npm puts in between does not count.
 */
export function findNodeDescendant(root: number, script: string): number | undefined {
  let pids: number[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number);
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    const args = argv(pid);
    if (pid === root || !/(^|\/)node$/.test(args[0] ?? '') || !args.includes(script)) continue;
    for (let p = parentOf(pid), hops = 0; p > 1 && hops < 16; p = parentOf(p), hops++) {
      if (p === root) return pid;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------- processes

export interface Proc {
  name: string;
  child: ChildProcess;
  /** pid of the node process that serves (for npm start, npm's grandchild). */
  pid: number;
  base: string;
  logFile: string;
  log(): string;
  stop(): Promise<void>;
}

const started = new Set<Proc>();
let logDir: string | undefined;

async function stopAll(): Promise<void> {
  await Promise.all([...started].map((p) => p.stop()));
  if (logDir !== undefined) rmSync(logDir, { recursive: true, force: true });
  logDir = undefined;
}

let hooked = false;
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      void stopAll().finally(() => process.exit(130));
    });
  }
}

/** Stop every process a bench started and remove the log folder. */
export const cleanup = stopAll;

interface SpawnSpec {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Find the serving pid from the log text (first try) or the process tree. */
  pidFrom: (log: string, child: ChildProcess) => number | undefined;
}

async function spawnAndWait(spec: SpawnSpec, port: number): Promise<Proc> {
  hookExit();
  logDir ??= mkdtempSync(join(tmpdir(), 'trustgate-bench-'));
  const logFile = join(logDir, `${spec.name.replace(/\W+/g, '-')}-${port}.log`);
  // Output goes to a file, as `npm start > file` would: the bench process never pays for reading it.
  const fd = openSync(logFile, 'w');
  const child = spawn(spec.command, spec.args, {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', ...spec.env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code) => {
      exitCode = code;
      resolve();
    }),
  );
  const readLog = (): string => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  let ready = false;
  while (exitCode === undefined && Date.now() < deadline) {
    try {
      const r = await fetch(`${base}/readyz`);
      await r.arrayBuffer();
      if (r.status === 200) {
        ready = true;
        break;
      }
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  if (!ready) {
    if (exitCode === undefined) {
      const serving = spec.pidFrom(readLog(), child);
      if (serving !== undefined && serving !== child.pid && alive(serving)) process.kill(serving, 'SIGKILL');
      child.kill('SIGKILL');
    }
    throw new Error(`${spec.name} did not become ready (exit ${String(exitCode)}):\n${readLog().slice(-4000)}`);
  }
  const pid = spec.pidFrom(readLog(), child) ?? child.pid!;
  let stopping: Promise<void> | undefined;
  const proc: Proc = {
    name: spec.name,
    child,
    pid,
    base,
    logFile,
    log: readLog,
    stop() {
      stopping ??= (async () => {
        if (exitCode === undefined) {
          try {
            process.kill(pid, 'SIGTERM');
          } catch {
            // already gone
          }
          const timer = setTimeout(() => {
            try {
              process.kill(pid, 'SIGKILL');
            } catch {
              // already gone
            }
            child.kill('SIGKILL');
          }, 10_000);
          await exited;
          clearTimeout(timer);
        }
        // npm gone but the node it started still there (it should never be): stop that one too.
        if (pid !== child.pid && alive(pid)) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
        started.delete(proc);
      })();
      return stopping;
    },
  };
  started.add(proc);
  return proc;
}

/**
 * How the service is started. `npm` (default): `npm start`, exactly as the
 * README tells users (its prestart compiles src/ first). `node`: `node
 * dist/server.js` (run `npm run build` first).
 */
export const START_MODE = (process.env.BENCH_START ?? 'npm') as 'npm' | 'node';
if (START_MODE !== 'npm' && START_MODE !== 'node') throw new Error('BENCH_START must be npm or node');

/** Start the real service on a free port; resolves once /readyz answers 200. */
export async function startService(env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<Proc> {
  const port = await freePort();
  const useNpm = START_MODE === 'npm' && nodeArgs.length === 0;
  return spawnAndWait(
    {
      name: `service(${env.LOG_LEVEL ?? 'info'})`,
      command: useNpm ? 'npm' : process.execPath,
      args: useNpm ? ['start'] : [...nodeArgs, 'dist/server.js'],
      env: { LOG_LEVEL: 'info', ...env },
      pidFrom: (log, child) => {
        // npm runs node as a child; at info the service logs its pid (as test/helpers/process.ts reads it).
        const m = /"pid":(\d+)[^\n]*"msg":"policies loaded"/.exec(log) ?? /"pid":(\d+)/.exec(log);
        if (m) return Number(m[1]);
        return useNpm ? findNodeDescendant(child.pid!, 'dist/server.js') : child.pid;
      },
    },
    port,
  );
}

/** Start the bare Fastify echo server (bench/echo-server.ts) as a plain node process. */
export async function startEcho(nodeArgs: string[] = []): Promise<Proc> {
  const port = await freePort();
  return spawnAndWait(
    {
      name: 'echo',
      command: process.execPath,
      args: [...nodeArgs, '--import', 'tsx', 'bench/echo-server.ts'],
      env: {},
      pidFrom: (log, child) => {
        const m = /"pid":(\d+)/.exec(log);
        return m ? Number(m[1]) : child.pid;
      },
    },
    port,
  );
}
