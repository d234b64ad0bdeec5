/**
 * `trustgate intercept [--policies DIR]`: the Docker MCP Gateway interceptor
 * contract (docs/bindings/docker-gateway.md) on standard input/output, for the
 * gateway's `after:exec:` mode. The gateway reads an EMPTY answer as "pass
 * the original through", so this command must never end without an answer
 * unless a decision said the original may pass.
 *
 * It is therefore two processes. This one, the guard, does no evaluation:
 * it starts a child Node process (docker-exec-child.ts) with a bounded heap,
 * streams stdin to it, and forwards the child's framed answer. Whenever the
 * decision cannot finish, the guard writes the `isError` result itself:
 * - the child crashes, runs out of memory (TRUSTGATE_INTERCEPT_HEAP_MB),
 *   is killed by a signal, or exits without a whole answer frame;
 * - the decision takes longer than TRUSTGATE_REQUEST_TIMEOUT_MS;
 * - the input is over TRUSTGATE_BODY_LIMIT, or stdin fails;
 * - the guard receives SIGTERM, SIGINT or SIGHUP (it answers, then exits);
 * - the configuration or the command line is wrong.
 * It always exits 0 after writing its answer, so the gateway uses it.
 *
 * Policies: `--policies DIR` (relative to the working directory), else
 * TRUSTGATE_POLICY_DIR (the same), else the policies shipped with the
 * package, so `after:exec:trustgate intercept` works from any directory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SHIPPED_POLICY_DIR } from '../policy/shipped.js';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { FRAME_PASS, FRAME_REPLACE, interceptError } from '../bindings/docker-gateway/answer.js';
import { isRecord } from '../json/record.js';


const CHILD = fileURLToPath(new URL('./docker-exec-child.js', import.meta.url));

/** What the child may write beyond the input's own size: fences and placeholders, at most a few bytes per block. */
const ANSWER_SLACK = 8 * 1024 * 1024;

const USAGE = 'usage: trustgate intercept [--policies DIR]';

/** The options of `trustgate intercept`, or a message saying what is wrong with them. */
export function parseInterceptArgs(args: readonly string[]): { policies?: string } | { error: string } {
  let policies: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    let value: string | undefined;
    if (a === '--policies') value = args[++i];
    else if (a.startsWith('--policies=')) value = a.slice('--policies='.length);
    else return { error: `unknown argument ${JSON.stringify(a)}; ${USAGE}` };
    if (value === undefined || value === '') return { error: `--policies needs a folder; ${USAGE}` };
    policies = value;
  }
  return policies === undefined ? {} : { policies };
}

/**
 * The policy folder, as an absolute path: the flag, else
 * TRUSTGATE_POLICY_DIR, each relative to `cwd`; else the shipped set.
 */
export function interceptPolicyDir(flag: string | undefined, env: Record<string, string | undefined>, cwd: string): string {
  if (flag !== undefined) return resolve(cwd, flag);
  const fromEnv = env.TRUSTGATE_POLICY_DIR;
  if (fromEnv !== undefined && fromEnv !== '') return resolve(cwd, fromEnv);
  return SHIPPED_POLICY_DIR;
}

function isErrorText(code: string, detail: string): string {
  const a = interceptError(code, detail);
  return JSON.stringify(a.result);
}

/** Run the command; resolves never (the process exits once it has answered). */
export function interceptGuard(args: readonly string[]): void {
  let answered = false;
  let child: ChildProcess | undefined;
  let timer: NodeJS.Timeout | undefined;

  /** Write the answer (an empty string passes the original), end the child, exit (0, or 2 after a usage error). */
  const answer = (text: string, code = 0): void => {
    if (answered) return;
    answered = true;
    if (timer !== undefined) clearTimeout(timer);
    if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    process.stdin.destroy();
    if (text.length === 0) process.exit(code);
    process.stdout.write(text, () => process.exit(code));
  };
  const fail = (code: string, detail: string): void => answer(isErrorText(code, detail));

  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.on(sig, () => fail('TG_ERR_SERVER_INTERNAL', `interrupted by ${sig} before the decision finished`));
  }
  process.on('uncaughtException', () => fail('TG_ERR_SERVER_INTERNAL', 'internal error'));
  // A gateway that closed our stdout cannot read any answer; do not die on EPIPE before trying.
  process.stdout.on('error', () => process.exit(0));

  const opts = parseInterceptArgs(args);
  if ('error' in opts) {
    // One line and exit 2, as for every verb; the gateway still reads a withheld result (fail closed).
    process.stderr.write(`trustgate intercept: ${opts.error}\n`);
    answer(isErrorText('TG_ERR_SERVER_NOT_READY', 'the command line is wrong (see the log)'), 2);
    return;
  }
  // The guard reads the settings itself rather than through start.ts: it must
  // stay small (it only streams to the child and keeps the time), and start.ts
  // would load the whole decision core into it for nothing.
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    fail('TG_ERR_SERVER_NOT_READY', err instanceof ConfigError ? err.message : 'configuration error');
    return;
  }
  const policyDir = interceptPolicyDir(opts.policies, process.env, process.cwd());

  timer = setTimeout(
    () => fail('TG_ERR_REQUEST_TIMEOUT', `the decision took longer than ${config.requestTimeoutMs} ms`),
    config.requestTimeoutMs,
  );

  try {
    child = spawn(process.execPath, [`--max-old-space-size=${config.interceptHeapMb}`, CHILD], {
      env: { ...process.env, TRUSTGATE_POLICY_DIR: policyDir },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
  } catch {
    fail('TG_ERR_SERVER_INTERNAL', 'the decision process could not start');
    return;
  }
  const c = child;
  c.on('error', () => fail('TG_ERR_SERVER_INTERNAL', 'the decision process could not start'));
  // The child may die while input still flows; its exit decides the answer.
  c.stdin!.on('error', () => undefined);

  let size = 0;
  process.stdin.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > config.bodyLimit) {
      fail('TG_ERR_BODY_TOO_LARGE', `the result is over the limit of ${config.bodyLimit} bytes`);
      return;
    }
    if (!c.stdin!.write(chunk)) {
      process.stdin.pause();
      c.stdin!.once('drain', () => process.stdin.resume());
    }
  });
  process.stdin.on('end', () => c.stdin!.end());
  process.stdin.on('error', () => fail('TG_ERR_BODY_MALFORMED_JSON', 'standard input could not be read'));

  const cap = config.bodyLimit * 2 + ANSWER_SLACK;
  const out: Buffer[] = [];
  let outSize = 0;
  c.stdout!.on('data', (chunk: Buffer) => {
    outSize += chunk.length;
    if (outSize > cap) fail('TG_ERR_SERVER_INTERNAL', 'the decision process wrote more than an answer can hold');
    else out.push(chunk);
  });

  c.on('close', (code, signal) => {
    if (answered) return;
    if (code !== 0 || signal !== null) {
      const how = signal !== null ? `was ended by ${signal}` : `exited with code ${code}`;
      // V8 aborts (SIGABRT, or exit 134 through a shell) when the heap limit is reached.
      const oom = signal === 'SIGABRT' || code === 134 ? ' (out of memory?)' : '';
      fail('TG_ERR_SERVER_INTERNAL', `the decision process ${how}${oom} before it decided`);
      return;
    }
    answer(unframe(Buffer.concat(out).toString('utf8')));
  });
}

/** The text to write for a whole frame from the child; anything else is an `isError` result. */
function unframe(text: string): string {
  if (text === FRAME_PASS) return '';
  if (text.startsWith(FRAME_REPLACE)) {
    const body = text.slice(FRAME_REPLACE.length);
    try {
      const parsed: unknown = JSON.parse(body);
      if (isRecord(parsed)) return body;
    } catch {
      // fall through: a cut or garbled answer is no answer
    }
  }
  return isErrorText('TG_ERR_SERVER_INTERNAL', 'the decision process gave no whole answer');
}
