#!/usr/bin/env node
/**
 * The `trustgate` command (package.json `bin`):
 *
 * - `trustgate serve` (or no command) starts the HTTP service;
 * - `trustgate intercept [--policies DIR]` is the Docker MCP Gateway
 *   interceptor contract (contract section 10) on standard input/output,
 *   for `after:exec:` mode. It fails closed whatever happens to the
 *   evaluation (see decision/intercept-guard.ts): every decision that
 *   cannot finish is answered with an `isError` result.
 */
const command = process.argv[2] ?? 'serve';
if (command === 'intercept') {
  const { interceptGuard } = await import('./decision/intercept-guard.js');
  interceptGuard(process.argv.slice(3));
} else if (command === 'serve') {
  await import('./server.js');
} else {
  process.stderr.write('usage: trustgate [serve | intercept [--policies DIR]]\n');
  process.exit(2);
}
