#!/usr/bin/env node
// `npm start` (prestart): compile src/ into dist/ only when dist/ is missing or older than what it is built from, so
// that a start with nothing changed takes no compiler run. A build made here is recorded in dist/.build-stamp; one
// made with `npm run build` alone is not, and the next start builds once more (incremental: seconds).
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const stamp = join(root, 'dist', '.build-stamp');

/** The newest modification time (ms) of a file or of every file under a folder. */
function newest(path) {
  const st = statSync(path, { throwIfNoEntry: false });
  if (st === undefined) return 0;
  if (!st.isDirectory()) return st.mtimeMs;
  let max = st.mtimeMs;
  for (const e of readdirSync(path)) max = Math.max(max, newest(join(path, e)));
  return max;
}

const built = newest(stamp);
const sources = Math.max(newest(join(root, 'src')), ...['tsconfig.json', 'tsconfig.build.json', 'package-lock.json'].map((f) => newest(join(root, f))));
if (built > 0 && built >= sources && statSync(join(root, 'dist', 'server.js'), { throwIfNoEntry: false }) !== undefined) process.exit(0);
process.stderr.write(built === 0 ? 'trustgate: building dist/ (first start)\n' : 'trustgate: sources changed since the last build: building dist/\n');
// The stamp's time is taken before the build: a source saved while it ran is newer, and builds again next time.
const started = new Date();
const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
if (r.status === 0) {
  writeFileSync(stamp, `${started.toISOString()}\n`);
  utimesSync(stamp, started, started);
}
process.exit(r.status ?? 1);
