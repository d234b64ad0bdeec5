/**
 * Build dist/ once before any test runs: the end-to-end tests start the
 * built service (`npm start`, `node dist/cli.js`), and a single build up
 * front keeps their own `prestart` builds no-ops instead of racing.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  execFileSync('npm', ['run', 'build'], { cwd: fileURLToPath(new URL('..', import.meta.url)), stdio: 'inherit' });
}
