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
 *   proxy (contract section 14; src/bindings/);
 * - `trustgate test [PATH...]` runs policy tests and `trustgate eval
 *   <request.json>` prints one decision (contract section 17; src/policytest/).
 */
import { SHIPPED_POLICY_DIR } from './policy/shipped.js';

const command = process.argv[2] ?? 'serve';
if (command === 'intercept') {
  const { interceptGuard } = await import('./bindings/docker/intercept-guard.js');
  interceptGuard(process.argv.slice(3));
} else if (command === 'serve') {
  await import('./server.js');
} else if (command === 'interceptor') {
  const { runInterceptorStdio } = await import('./bindings/interceptor/stdio.js');
  await runInterceptorStdio(process.argv.slice(3), SHIPPED_POLICY_DIR);
} else if (command === 'proxy') {
  const { runProxy } = await import('./bindings/proxy/cli.js');
  await runProxy(process.argv.slice(3), SHIPPED_POLICY_DIR);
} else if (command === 'test') {
  const { runTestCommand } = await import('./policytest/cli.js');
  process.exitCode = await runTestCommand(process.argv.slice(3));
} else if (command === 'eval') {
  const { runEvalCommand } = await import('./policytest/cli.js');
  process.exitCode = await runEvalCommand(process.argv.slice(3));
} else {
  process.stderr.write('usage: trustgate [serve | test [PATH...] | eval <request.json> [--call] [--policies DIR] [--explain] | intercept [--policies DIR] | interceptor [--policies DIR] | proxy [--policies DIR] (-- <command> [args...] | --upstream <url>)]\n');
  process.exit(2);
}
