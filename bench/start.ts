/**
 * The front door, timed: a fresh clone of this checkout, `npm ci`, then
 * `npm start` until /readyz answers 200 (the first start builds dist/),
 * then a second `npm start` with nothing changed (it must not compile), and
 * a third after a source file changed (it compiles again).
 *
 * Run: npm run bench:start   (env BENCH_START_RUNS: starts with nothing changed, default 3)
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { envNumber, fmt, freePort, machine, median, table } from './lib.js';

const ROOT = new URL('..', import.meta.url).pathname;
const RUNS = envNumber('BENCH_START_RUNS', 3);

/** `npm start` in `dir` until /readyz answers 200; seconds, then the process is stopped. */
async function start(dir: string): Promise<{ seconds: number; built: boolean }> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn('npm', ['start'], { cwd: dir, env: { ...process.env, PORT: String(port), LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let err = '';
  child.stderr.on('data', (d) => (err += String(d)));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`npm start ended (${child.exitCode}): ${err}`);
      try {
        if ((await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200) break;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return { seconds: (performance.now() - t0) / 1000, built: /building dist/.test(err) };
  } finally {
    process.kill(-child.pid!, 'SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'trustgate-bench-start-'));
  try {
    execFileSync('git', ['clone', '-q', ROOT, dir]);
    const t0 = performance.now();
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'ignore' });
    const install = (performance.now() - t0) / 1000;
    const first = await start(dir);
    const again: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const r = await start(dir);
      if (r.built) throw new Error('a start with nothing changed compiled');
      again.push(r.seconds);
    }
    const now = new Date();
    utimesSync(join(dir, 'src', 'version.ts'), now, now);
    const changed = await start(dir);
    process.stdout.write(`${machine()}\n`);
    table([
      ['step', 'seconds', 'compiled'],
      ['npm ci (fresh clone)', fmt(install, 1), ''],
      ['npm start, first (to /readyz 200)', fmt(first.seconds, 1), first.built ? 'yes' : 'no'],
      [`npm start, nothing changed (median of ${RUNS})`, fmt(median(again), 1), 'no'],
      ['npm start, a source file changed', fmt(changed.seconds, 1), changed.built ? 'yes' : 'no'],
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
