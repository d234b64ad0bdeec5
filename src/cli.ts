#!/usr/bin/env node
/**
 * The `trustgate` command (package.json `bin`):
 *
 * - `trustgate serve` (or no command) starts the HTTP service;
 * - `trustgate intercept [--policies DIR]` is the Docker MCP Gateway
 *   interceptor contract (contract section 10) on standard input/output,
 *   for `after:exec:` mode. It fails closed whatever happens to the
 *   evaluation (see bindings/docker/intercept-guard.ts): every decision that
 *   cannot finish is answered with an `isError` result;
 * - `trustgate interceptor` serves the MCP Interceptors extension on
 *   standard input/output, and `trustgate proxy` is the transparent MCP
 *   proxy (contract section 14; src/bindings/).
 */
import { fileURLToPath } from 'node:url';

/** The policies shipped with the package (next to src/ and dist/), whatever the working directory. */
const SHIPPED_POLICIES = fileURLToPath(new URL('../policies/', import.meta.url));

const command = process.argv[2] ?? 'serve';
if (command === 'intercept') {
  const { interceptGuard } = await import('./bindings/docker/intercept-guard.js');
  interceptGuard(process.argv.slice(3));
} else if (command === 'serve') {
  await import('./server.js');
} else if (command === 'interceptor') {
  const { runInterceptorStdio } = await import('./bindings/interceptor/stdio.js');
  await runInterceptorStdio(process.argv.slice(3), SHIPPED_POLICIES);
} else if (command === 'proxy') {
  const { runProxy } = await import('./bindings/proxy/cli.js');
  await runProxy(process.argv.slice(3), SHIPPED_POLICIES);
} else {
  process.stderr.write('usage: trustgate [serve | intercept [--policies DIR] | interceptor [--policies DIR] | proxy [--policies DIR] (-- <command> [args...] | --upstream <url>)]\n');
  process.exit(2);
}
