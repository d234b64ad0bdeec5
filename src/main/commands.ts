/**
 * The `trustgate` command (package.json `bin`). Each verb is one row of
 * VERBS: a summary for `trustgate --help`, and how it runs. A verb parses
 * its own arguments; a usage error prints ONE line to standard error and
 * exits 2, and `trustgate <verb> --help` prints its usage and exits 0.
 *
 * - `trustgate serve` (or no command) starts the HTTP service;
 * - `trustgate intercept [--policies DIR]` is the Docker MCP Gateway
 *   interceptor contract (docs/bindings/docker-gateway.md) on standard input/output,
 *   for `after:exec:` mode. It fails closed whatever happens to the
 *   evaluation (see docker-exec.ts): every decision that
 *   cannot finish is answered with an `isError` result;
 * - `trustgate interceptor` serves the MCP Interceptors extension on
 *   standard input/output, and `trustgate proxy` is the transparent MCP
 *   proxy (docs/architecture.md#bindings-side-by-side; src/bindings/);
 * - `trustgate test [PATH...]` runs policy tests and `trustgate eval
 *   <request.json>` prints one decision (docs/policy-testing.md; src/policytest/).
 */
import { commandPolicyDir, SHIPPED_POLICY_DIR } from '../policy/shipped.js';

interface Verb {
  /** One line for `trustgate --help`. */
  summary: string;
  run(args: string[]): Promise<void>;
}

const HELP = new Set(['--help', '-h']);

const VERBS: Record<string, Verb> = {
  serve: {
    summary: 'serve [--help]                        the HTTP service (settings from the environment; the default)',
    async run(args) {
      if (args.some((a) => HELP.has(a))) return help('usage: trustgate serve (settings from the environment: PORT, TRUSTGATE_POLICY_DIR, TRUSTGATE_SESSION_STORE, ...; see docs/configuration.md)');
      if (args.length > 0) usageError('serve', `unexpected argument ${JSON.stringify(args[0])}; usage: trustgate serve (settings come from the environment)`);
      // Outside a folder with its own ./policies (a global install), the set shipped with the package.
      if ((process.env.TRUSTGATE_POLICY_DIR ?? '') === '') process.env.TRUSTGATE_POLICY_DIR = commandPolicyDir();
      await import('./serve.js');
    },
  },
  intercept: {
    summary: 'intercept [--policies DIR]            the Docker MCP Gateway interceptor, one result on stdin/stdout',
    async run(args) {
      if (args.some((a) => HELP.has(a))) return help('usage: trustgate intercept [--policies DIR]');
      const { interceptGuard } = await import('./docker-exec.js');
      interceptGuard(args);
    },
  },
  interceptor: {
    summary: 'interceptor [--policies DIR]          the MCP Interceptors extension server on stdio',
    async run(args) {
      if (args.some((a) => HELP.has(a))) return help('usage: trustgate interceptor [--policies DIR]');
      const { runInterceptorStdio } = await import('./interceptor.js');
      await runInterceptorStdio(args, SHIPPED_POLICY_DIR);
    },
  },
  proxy: {
    summary: 'proxy [--policies DIR] (-- <command> [args...] | --upstream <url> | --config <mcpServers.json> [--listen host:port])   the MCP proxy in front of a server, or a gateway over many',
    async run(args) {
      const { runProxy } = await import('./proxy.js');
      await runProxy(args, SHIPPED_POLICY_DIR);
    },
  },
  test: {
    summary: 'test [PATH...] [--format pretty|json|junit|tap] [--coverage] [--threshold N] [--allow-empty]   run policy test files',
    async run(args) {
      const { runTestCommand } = await import('./policy-test.js');
      process.exitCode = await runTestCommand(args);
    },
  },
  eval: {
    summary: 'eval <request.json|-> [--call] [--policies DIR] [--explain]   print one decision as JSON',
    async run(args) {
      const { runEvalCommand } = await import('./policy-test.js');
      process.exitCode = await runEvalCommand(args);
    },
  },
};

function help(text: string): void {
  process.stdout.write(text + '\n');
  process.exit(0);
}

/** One line, exit 2. */
function usageError(verb: string | undefined, message: string): never {
  process.stderr.write(`trustgate${verb ? ` ${verb}` : ''}: ${message}\n`);
  process.exit(2);
}

const [command = 'serve', ...rest] = process.argv.slice(2);
if (command === '--version' || command === '-V' || command === 'version') {
  const { VERSION } = await import('../version.js');
  process.stdout.write(`trustgate ${VERSION}\n`);
} else if (HELP.has(command) || command === 'help') {
  help(['usage: trustgate <command> [options]   (no command: serve)', '       trustgate --version', '', 'commands:', ...Object.values(VERBS).map((v) => `  ${v.summary}`), '', "run 'trustgate <command> --help' for a command's options"].join('\n'));
} else {
  const verb = Object.hasOwn(VERBS, command) ? VERBS[command] : undefined;
  if (verb === undefined) usageError(undefined, `unknown command ${JSON.stringify(command)}; commands: ${Object.keys(VERBS).join(', ')} (trustgate --help)`);
  await verb.run(rest);
}
