#!/usr/bin/env node
/**
 * `trustgate intercept`: the Docker MCP Gateway interceptor contract
 * (contract section 10) on standard input/output, for `after:exec:` mode.
 * Reads a CallToolResult on stdin, evaluates it in-process with the
 * policies in TRUSTGATE_POLICY_DIR, and writes the replacement result, or
 * nothing when the original may pass. Fails closed: when the policies do
 * not load or the input cannot be checked, it writes an `isError` result
 * (and exits 0, so the gateway uses it). The decision log goes to stderr.
 *
 * `trustgate interceptor` serves the MCP Interceptors extension on
 * standard input/output, and `trustgate proxy` is the transparent MCP proxy
 * (contract section 14; src/bindings/).
 *
 * `trustgate serve` (or no command) starts the HTTP service.
 */
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { ConfigError, loadConfig } from './config.js';
import { interceptAnswer, interceptError, type InterceptAnswer } from './decision/intercept.js';
import { createDecisionCore } from './decision/core.js';
import { MemorySessionStore } from './session/memory.js';
import { TrustgateError } from './errors.js';
import { parseRequestText } from './json/parse.js';
import { loggerOptions } from './logger.js';
import { isObject } from './model.js';
import { loadPolicyDir } from './policy/load.js';

async function readStdin(limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length;
    if (size > limit) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function write(answer: InterceptAnswer): void {
  if (answer.kind === 'replace') process.stdout.write(JSON.stringify(answer.result));
}

export async function intercept(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    write(interceptError('TG_ERR_SERVER_NOT_READY', err instanceof ConfigError ? err.message : 'configuration error'));
    return;
  }
  const log = pino(loggerOptions(config.logLevel), pino.destination(2));
  let policies;
  try {
    policies = await loadPolicyDir(config.policyDir);
  } catch (err) {
    log.error(`policy load failed: ${(err as Error).message}`);
    write(interceptError('TG_ERR_SERVER_NOT_READY', 'the policies did not load'));
    return;
  }
  const text = await readStdin(config.bodyLimit);
  if (text === undefined) {
    write(interceptError('TG_ERR_BODY_TOO_LARGE', `the result is over the limit of ${config.bodyLimit} bytes`));
    return;
  }
  try {
    const { value, scan } = parseRequestText(text);
    if (!isObject(value)) {
      write(interceptError('TG_ERR_BODY_SCHEMA', 'the input is not a JSON object'));
      return;
    }
    // One result per process and no session: a store is there only because the core takes one.
    const sessions = new MemorySessionStore({ maxSessions: 1, maxPins: 1, ttlMs: 1000 });
    const core = createDecisionCore({ config, policies: () => policies, sessions });
    const decision = await core.evaluateResult({ request: { result: value }, scan, log: (entry) => log.info(entry, 'decision') });
    write(interceptAnswer(decision, scan.duplicateKeys.length > 0));
  } catch (err) {
    if (err instanceof TrustgateError) write(interceptError(err.code, err.message));
    else {
      log.error({ errName: (err as Error)?.name }, 'unexpected error');
      write(interceptError('TG_ERR_SERVER_INTERNAL', 'internal error'));
    }
  }
}

/** The policies shipped with the package (next to src/ and dist/), whatever the working directory. */
const SHIPPED_POLICIES = fileURLToPath(new URL('../policies/', import.meta.url));

const command = process.argv[2] ?? 'serve';
if (command === 'intercept') {
  await intercept();
} else if (command === 'serve') {
  await import('./server.js');
} else if (command === 'interceptor') {
  const { runInterceptorStdio } = await import('./bindings/interceptor/stdio.js');
  await runInterceptorStdio(process.argv.slice(3), SHIPPED_POLICIES);
} else if (command === 'proxy') {
  const { runProxy } = await import('./bindings/proxy/cli.js');
  await runProxy(process.argv.slice(3), SHIPPED_POLICIES);
} else {
  process.stderr.write('usage: trustgate [serve | intercept | interceptor | proxy]\n');
  process.exit(2);
}
