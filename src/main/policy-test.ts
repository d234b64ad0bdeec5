/**
 * `trustgate test [PATH...]` and `trustgate eval <request.json>` (docs/policy-testing.md).
 *
 * test: exit 0 when every case passes, 1 when one fails (or rule coverage
 * is below `--threshold`, or no case was found without `--allow-empty`),
 * 2 when a test file, a request in it or its policies do not load, or on a
 * usage error.
 *
 * eval: prints the /v1/evaluate (or, with `--call`, /v1/evaluate-call)
 * answer as JSON and exits 0 whatever the outcome; 2 when the policies or
 * the request do not load.
 */
import { commandPolicyDir } from '../policy/shipped.js';
import { readFile } from 'node:fs/promises';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, type Config } from '../config.js';
import { readConfig } from './start.js';
import { createDecisionCore, type EvaluateCallRequest } from '../decision/core.js';
import type { EvaluateRequest } from '../decision/types.js';
import { TrustgateError } from '../errors.js';
import { isRecord } from '../json/record.js';
import { loadPolicyDir, PolicyLoadError } from '../policy/load.js';
import { MemorySessionStore } from '../session/memory.js';
import { findTestFiles, readTestFile, TestLoadError, type TestCase } from '../policytest/cases.js';
import { FORMATS, formatReport, type Format } from '../policytest/report.js';
import { requestProblem } from '../policytest/request.js';
import { runCases } from '../policytest/runner.js';

export const TEST_USAGE =
  'usage: trustgate test [PATH...] [--format pretty|json|junit|tap] [--coverage] [--threshold PERCENT] [--allow-empty]\n' +
  '  runs every *.test.yaml under PATH (default: the policy folder, TRUSTGATE_POLICY_DIR, else ./policies, else the shipped set)\n';
export const EVAL_USAGE = 'usage: trustgate eval <request.json | -> [--call] [--policies DIR] [--explain]\n';

/** The policy folder the commands default to: TRUSTGATE_POLICY_DIR, else ./policies, else the shipped set (as `trustgate serve`). */
function defaultPolicyDir(): string {
  const dir = process.env.TRUSTGATE_POLICY_DIR;
  return dir === undefined || dir === '' ? commandPolicyDir() : dir;
}

function usageError(message: string, usage: string): number {
  // One line: the problem and the usage it breaks.
  process.stderr.write(`trustgate: ${message}; ${usage.split('\n')[0]}\n`);
  return 2;
}

/** The `--help`/`-h` flag every command takes. */
const HELP = { type: 'boolean', short: 'h', default: false } as const;

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * The arguments of a command: `options` (HELP among them) and positionals,
 * strictly. A number is the exit status when the command is done: 2 after
 * a usage error, 0 after printing the usage it was asked for.
 */
function commandArgs<O extends Options>(
  argv: readonly string[],
  options: O,
  usage: string,
  out: (s: string) => void,
): ReturnType<typeof parseArgs<{ args: string[]; allowPositionals: true; strict: true; options: O }>> | number {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options });
  } catch (err) {
    return usageError((err as Error).message, usage);
  }
  if ((parsed.values as { help?: boolean }).help) {
    out(usage);
    return 0;
  }
  return parsed;
}

/** `trustgate test`; resolves to the exit status. */
export async function runTestCommand(argv: readonly string[], out: (s: string) => void = (s) => process.stdout.write(s)): Promise<number> {
  const parsed = commandArgs(
    argv,
    {
      format: { type: 'string', default: 'pretty' },
      coverage: { type: 'boolean', default: false },
      threshold: { type: 'string' },
      'allow-empty': { type: 'boolean', default: false },
      help: HELP,
    },
    TEST_USAGE,
    out,
  );
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const format = values.format as Format;
  if (!(FORMATS as readonly string[]).includes(format)) return usageError(`--format must be one of ${FORMATS.join(', ')}`, TEST_USAGE);
  let threshold: number | undefined;
  if (values.threshold !== undefined) {
    threshold = Number(values.threshold);
    if (!/^\d+(\.\d+)?$/.test(values.threshold) || !(threshold >= 0 && threshold <= 100)) return usageError('--threshold must be a percentage from 0 to 100', TEST_USAGE);
  }
  const coverage = values.coverage || threshold !== undefined;

  let cases: TestCase[];
  let report;
  try {
    const files = await findTestFiles(positionals.length > 0 ? positionals : [defaultPolicyDir()]);
    cases = [];
    for (const f of files) cases.push(...(await readTestFile(f, process.cwd())));
    // Coverage costs next to nothing: json always carries it; the other formats show it when asked.
    report = await runCases(cases, { coverage: true, cwd: process.cwd() });
  } catch (err) {
    // Anything unexpected is reported as what cannot run (2), never as a failing case (1).
    process.stderr.write(`trustgate test: ${err instanceof TestLoadError ? err.message : `cannot run the tests: ${(err as Error)?.stack ?? String(err)}`}\n`);
    return 2;
  }
  out(formatReport(report, format, threshold, coverage));
  if (cases.length === 0) {
    if (values['allow-empty']) return 0;
    process.stderr.write('trustgate test: no test cases found (*.test.yaml); pass --allow-empty to accept that\n');
    return 1;
  }
  if (report.failed > 0) return 1;
  if (threshold !== undefined && report.coverage!.percent < threshold) {
    process.stderr.write(`trustgate test: rule coverage ${report.coverage!.percent}% is below the threshold of ${threshold}%\n`);
    return 1;
  }
  return 0;
}

async function readRequest(path: string): Promise<string> {
  if (path === '-') {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
  return readFile(path, 'utf8');
}

/** `trustgate eval`; resolves to the exit status. */
export async function runEvalCommand(argv: readonly string[], out: (s: string) => void = (s) => process.stdout.write(s)): Promise<number> {
  const parsed = commandArgs(
    argv,
    {
      call: { type: 'boolean', default: false },
      policies: { type: 'string' },
      explain: { type: 'boolean', default: false },
      help: HELP,
    },
    EVAL_USAGE,
    out,
  );
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  if (positionals.length !== 1) return usageError('give one request file (or - for standard input)', EVAL_USAGE);
  const path = positionals[0]!;
  const fail = (message: string) => {
    process.stderr.write(`trustgate eval: ${message}\n`);
    return 2;
  };

  let set;
  try {
    set = await loadPolicyDir(values.policies ?? defaultPolicyDir());
  } catch (err) {
    if (err instanceof PolicyLoadError) return fail(err.message);
    throw err;
  }
  let body: unknown;
  try {
    body = JSON.parse(await readRequest(path));
  } catch (err) {
    return fail(`${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  if (values.explain) {
    if (!isRecord(body)) return fail(`${path}: the request must be a JSON object`);
    body = { ...body, options: { ...(isRecord(body.options) ? body.options : {}), explain: true } };
  }
  const problem = requestProblem(body, values.call);
  if (problem !== undefined) return fail(`${path}: the request${problem.pointer === '' ? '' : ' at ' + problem.pointer} ${problem.message}`);

  // The settings the service would decide under here (TRUSTGATE_MODE, limits, dialects).
  let config: Config;
  try {
    config = readConfig();
  } catch (err) {
    if (err instanceof ConfigError) return fail(err.message);
    throw err;
  }
  const sessions = new MemorySessionStore({ maxSessions: 16, maxPins: 16, ttlMs: 3_600_000 });
  const core = createDecisionCore({ config, policies: () => set, sessions });
  try {
    const answer = values.call
      ? await core.evaluateCall({ request: body as EvaluateCallRequest })
      : await core.evaluateResult({ request: body as EvaluateRequest });
    out(JSON.stringify(answer, null, 2) + '\n');
    return 0;
  } catch (err) {
    if (err instanceof TrustgateError) return fail(`${path}: the request is refused (${err.code}): ${err.message}`);
    throw err;
  } finally {
    await sessions.close();
  }
}
