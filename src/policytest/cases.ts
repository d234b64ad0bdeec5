/**
 * Policy test files (docs/policy-testing.md): finding them, and reading each
 * into cases with the 1-based line of its `- ` item. Everything is checked
 * before anything runs: a file that does not parse, an unknown key (a typo
 * such as `expects` would otherwise make a case pass without checking
 * anything) or a request the service would refuse is a TestLoadError, and
 * the run exits 2.
 */
import { DEFAULTS } from '../config.js';
import { compileLiteralRe2 } from '../policy/regex.js';
import { OperatorEntries, OperatorEntryError, parseServersText } from '../trust/operator.js';
import { readdir, readFile, stat } from 'node:fs/promises';
import { dirname, join, relative, resolve, isAbsolute } from 'node:path';
import YAML, { LineCounter, isMap, isSeq, type Node } from 'yaml';
import { isRecord, own } from '../json/record.js';
import { TEST_FILE } from '../policy/load.js';
import { requestProblem } from './request.js';

/** A test file or policy folder that cannot be used: the message names the file (and line or rule where known). */
export class TestLoadError extends Error {
  override readonly name = 'TestLoadError';
}

/** What a decision is expected to be; every key is optional. */
export interface Expect {
  outcome?: 'allow' | 'warn' | 'deny';
  requiresConsent?: boolean;
  modified?: boolean;
  labels?: Record<string, boolean | null>;
  /** Each must be present in `findings` (subset match on the keys given). */
  findings?: Array<Record<string, unknown>>;
  /** None may be present in `findings`. */
  absent?: Array<Record<string, unknown>>;
  /** RFC 6901 pointer into the forwarded result -> the value there, or `{ contains }` / `{ matches }`. */
  result?: Record<string, unknown>;
}

/**
 * What the MCP proxy passes to the decision core beside the body (docs/bindings/proxy.md), which no HTTP body can state: for a judged server message
 * (an `evaluate` step), the `call` policies read (`method`, `arguments`;
 * `call.name` is the body's `tool.name`, as the proxy sends both); for a
 * tool call (a `call` step), whether the server listed the tool.
 */
export type ProxyInput = { method: string; arguments: Record<string, unknown> } | { unlisted: boolean };

/** One decision of a case. */
export interface Step {
  kind: 'evaluate' | 'call';
  /** The /v1/evaluate or /v1/evaluate-call body. */
  request: Record<string, unknown>;
  expect: Expect;
  /** 1-based line of the step. */
  line: number;
  /** The step's `proxy`: the decision is the one the proxy would ask for. */
  proxy?: ProxyInput;
}

export interface TestCase {
  name: string;
  /** The test file, as the run names it (relative to the working folder when under it). */
  file: string;
  /** 1-based line of the case's `- ` item. */
  line: number;
  /** Absolute path of the policy folder under test. */
  policies: string;
  /** One step for a single decision; several, in one session, for `steps`. */
  steps: Step[];
  /** True for `steps` cases: every step names the case's session. */
  session: boolean;
  /** The most pins the case's store holds (TRUSTGATE_MAX_PINS); 0 is a store that is already full. */
  maxPins: number;
  /** The most values a session of the case keeps (TRUSTGATE_MAX_FLOW_VALUES): a small one lets a case show an overflowed session. */
  maxFlowValues: number;
  /** The operator's entries the case runs under, as a TRUSTGATE_SERVERS file holds them (docs/behaviour/operator.md); none without. */
  servers?: OperatorEntries;
}

const CASE_KEYS = ['name', 'evaluate', 'call', 'steps', 'expect', 'proxy', 'maxPins', 'maxFlowValues', 'servers'];
const STEP_KEYS = ['evaluate', 'call', 'expect', 'proxy'];
const PROXY_RESULT_KEYS = ['method', 'arguments'];
const PROXY_CALL_KEYS = ['unlisted'];
/** The most pins a case's store holds without `maxPins`: far more than a case makes, so no case meets a full store unless it asks for one. */
export const DEFAULT_MAX_PINS = 1024;
/** The largest `maxPins`: the largest TRUSTGATE_MAX_PINS. */
const MAX_MAX_PINS = 10_000_000;
const FILE_KEYS = ['policies', 'cases'];
export const RESULT_EXPECT_KEYS = ['outcome', 'requiresConsent', 'modified', 'labels', 'findings', 'absent', 'result'];
export const CALL_EXPECT_KEYS = ['outcome', 'requiresConsent', 'findings', 'absent'];
const OUTCOMES = ['allow', 'warn', 'deny'];

/** The largest test file read. */
const MAX_TEST_FILE_BYTES = 8 * 1024 * 1024;

/**
 * How a path is named in messages: relative to the working folder `cwd`
 * when it is under it; as given without one.
 */
export function displayPath(path: string, cwd: string | undefined): string {
  if (cwd === undefined) return path;
  const rel = relative(cwd, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

/**
 * Every `*.test.yaml` / `*.test.yml` file under the given paths (files are
 * taken as they are, folders searched recursively, skipping `node_modules`
 * and names that start with `.`), sorted, without repeats.
 * @throws TestLoadError for a path that does not exist.
 */
export async function findTestFiles(paths: readonly string[]): Promise<string[]> {
  const found = new Set<string>();
  const walk = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true });
    for (const e of entries) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue;
      const p = join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else if (TEST_FILE.test(e.name)) found.add(p);
      else if (e.isSymbolicLink() && TEST_FILE.test(e.name)) found.add(p);
    }
  };
  for (const given of paths) {
    const p = resolve(given);
    let info;
    try {
      info = await stat(p);
    } catch {
      throw new TestLoadError(`${given}: no such file or folder`);
    }
    if (info.isDirectory()) await walk(p);
    else found.add(p);
  }
  return [...found].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The 1-based line of a sequence item's `- ` (the indicator before the node), or of the node itself. */
function itemLine(text: string, node: Node | null | undefined, lines: LineCounter): number {
  const start = node?.range?.[0];
  if (start === undefined) return 1;
  let i = start - 1;
  while (i >= 0 && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i--;
  const at = i >= 0 && text[i] === '-' ? i : start;
  return lines.linePos(at).line;
}

function checkKeys(value: Record<string, unknown>, allowed: readonly string[], where: string): void {
  for (const k of Object.keys(value)) {
    if (!allowed.includes(k)) throw new TestLoadError(`${where}: unknown key ${JSON.stringify(k)}; allowed keys: ${allowed.join(', ')}`);
  }
}

function checkExpect(raw: unknown, call: boolean, where: string): Expect {
  if (raw === undefined || raw === null) return {};
  if (!isRecord(raw)) throw new TestLoadError(`${where}: expect must be a mapping`);
  checkKeys(raw, call ? CALL_EXPECT_KEYS : RESULT_EXPECT_KEYS, `${where}: expect`);
  const outcome = own(raw, 'outcome');
  if (outcome !== undefined && !OUTCOMES.includes(outcome as string)) {
    throw new TestLoadError(`${where}: expect.outcome ${JSON.stringify(outcome)} is not one of ${OUTCOMES.join(', ')}`);
  }
  for (const k of ['requiresConsent', 'modified']) {
    const v = own(raw, k);
    if (v !== undefined && typeof v !== 'boolean') throw new TestLoadError(`${where}: expect.${k} must be true or false`);
  }
  const labels = own(raw, 'labels');
  if (labels !== undefined) {
    if (!isRecord(labels)) throw new TestLoadError(`${where}: expect.labels must be a mapping such as { untrusted: true }`);
    for (const [k, v] of Object.entries(labels)) {
      if (k !== 'sensitive' && k !== 'untrusted') throw new TestLoadError(`${where}: expect.labels: unknown label ${JSON.stringify(k)}; labels: sensitive, untrusted`);
      if (v !== true && v !== false && v !== null) throw new TestLoadError(`${where}: expect.labels.${k} must be true, false or null`);
    }
  }
  for (const k of ['findings', 'absent']) {
    const v = own(raw, k);
    if (v === undefined) continue;
    if (!Array.isArray(v) || !v.every((f) => isRecord(f) && Object.keys(f).length > 0) || (k === 'absent' && v.length === 0)) {
      throw new TestLoadError(`${where}: expect.${k} must be a list of mappings such as { policy: untrusted, rule: spotlight-untrusted }`);
    }
  }
  const result = own(raw, 'result');
  if (result !== undefined) {
    if (!isRecord(result)) throw new TestLoadError(`${where}: expect.result must map RFC 6901 pointers to values, e.g. { /content/0/text: { contains: "..." } }`);
    for (const [p, v] of Object.entries(result)) {
      if (p !== '' && !p.startsWith('/')) throw new TestLoadError(`${where}: expect.result: ${JSON.stringify(p)} is not an RFC 6901 pointer (it must start with "/")`);
      const m = isRecord(v) ? own(v, 'matches') : undefined;
      if (typeof m === 'string' && Object.keys(v as object).length === 1) {
        // The same linear-time regular expressions as policies' `matches` (RE2): a test file cannot stall the runner.
        try {
          compileLiteralRe2(m);
        } catch (err) {
          throw new TestLoadError(`${where}: expect.result ${p}: matches is not an RE2 regular expression: ${(err as Error).message}`);
        }
      }
    }
  }
  return raw as Expect;
}

/** A step's request: the body, checked as the route would check it. */
function checkRequest(raw: unknown, call: boolean, where: string): Record<string, unknown> {
  const what = call ? 'call (a /v1/evaluate-call body)' : 'evaluate (a /v1/evaluate body)';
  if (!isRecord(raw)) throw new TestLoadError(`${where}: ${what} must be a mapping`);
  const problem = requestProblem(raw, call);
  if (problem !== undefined) throw new TestLoadError(`${where}: ${what}${problem.pointer === '' ? '' : ' at ' + problem.pointer} ${problem.message}`);
  return raw;
}

/**
 * A step's `proxy`: on an `evaluate` step `{ method, arguments? }`, the
 * `call` the proxy gives the core for the message it judges; on a `call`
 * step `{ unlisted }`. A tool the server did not list has no definition, so
 * the proxy sends none: a body with `tool` beside `unlisted: true` states a
 * decision the proxy never asks for.
 */
function checkProxy(raw: unknown, call: boolean, request: Record<string, unknown>, where: string): ProxyInput {
  const form = call ? '{ unlisted: true }' : '{ method: sampling/createMessage, arguments: { includeContext: thisServer } }';
  if (!isRecord(raw)) throw new TestLoadError(`${where}: proxy must be a mapping such as ${form}`);
  checkKeys(raw, call ? PROXY_CALL_KEYS : PROXY_RESULT_KEYS, `${where}: proxy${call ? ' (of a call)' : ' (of an evaluate)'}`);
  if (call) {
    const unlisted = own(raw, 'unlisted');
    if (typeof unlisted !== 'boolean') throw new TestLoadError(`${where}: proxy.unlisted must be true or false`);
    if (unlisted && own(request, 'tool') !== undefined) {
      throw new TestLoadError(`${where}: proxy.unlisted: the proxy sends no tool definition for a tool the server did not list; leave tool out of the call`);
    }
    return { unlisted };
  }
  const method = own(raw, 'method');
  if (typeof method !== 'string' || method === '') throw new TestLoadError(`${where}: proxy.method must be the MCP method of the judged message, such as sampling/createMessage`);
  const args = own(raw, 'arguments') ?? {};
  if (!isRecord(args)) throw new TestLoadError(`${where}: proxy.arguments must be a mapping (what policies read as call.arguments)`);
  return { method, arguments: args };
}

function readStep(raw: unknown, where: string, line: number, allowed: readonly string[]): Step {
  if (!isRecord(raw)) throw new TestLoadError(`${where}: must be a mapping`);
  checkKeys(raw, allowed, where);
  const hasEval = own(raw, 'evaluate') !== undefined;
  const hasCall = own(raw, 'call') !== undefined;
  if (hasEval === hasCall) throw new TestLoadError(`${where}: needs exactly one of evaluate, call${allowed.includes('steps') ? ', steps' : ''}`);
  const request = checkRequest(hasEval ? own(raw, 'evaluate') : own(raw, 'call'), hasCall, where);
  const step: Step = { kind: hasCall ? 'call' : 'evaluate', request, expect: checkExpect(own(raw, 'expect'), hasCall, where), line };
  const proxy = own(raw, 'proxy');
  if (proxy !== undefined) step.proxy = checkProxy(proxy, hasCall, request, where);
  return step;
}

/** A case's `maxFlowValues`: a whole number from 1 to the largest TRUSTGATE_MAX_FLOW_VALUES; TRUSTGATE_MAX_FLOW_VALUES's default without one. */
function checkMaxFlowValues(raw: unknown, where: string): number {
  if (raw === undefined) return DEFAULTS.TRUSTGATE_MAX_FLOW_VALUES.default;
  const { min, max } = DEFAULTS.TRUSTGATE_MAX_FLOW_VALUES;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < min || raw > max) throw new TestLoadError(`${where}: maxFlowValues must be a whole number from ${min} to ${max}`);
  return raw;
}

/** A case's `servers`: operator entries keyed by server name, as in a TRUSTGATE_SERVERS file. */
function checkServers(raw: unknown, where: string): OperatorEntries | undefined {
  if (raw === undefined) return undefined;
  try {
    return parseServersText(JSON.stringify(raw));
  } catch (err) {
    if (err instanceof OperatorEntryError) throw new TestLoadError(`${where}: servers ${err.message}`);
    throw err;
  }
}

/** A case's `maxPins`: a whole number from 0 to the largest TRUSTGATE_MAX_PINS. */
function checkMaxPins(raw: unknown, where: string): number {
  if (raw === undefined) return DEFAULT_MAX_PINS;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0 || raw > MAX_MAX_PINS) {
    throw new TestLoadError(`${where}: maxPins must be a whole number from 0 (a store already full) to ${MAX_MAX_PINS}`);
  }
  return raw;
}

/**
 * Read one test file into its cases; messages name it relative to `cwd`
 * (the working folder of the command) when given.
 * @throws TestLoadError naming the file and line.
 */
export async function readTestFile(path: string, cwd?: string): Promise<TestCase[]> {
  const file = displayPath(path, cwd);
  let bytes: Buffer;
  try {
    // Size-checked before it is read, and again after (it may have grown in between).
    const info = await stat(path);
    if (info.size > MAX_TEST_FILE_BYTES) throw new TestLoadError(`${file}: the file is ${info.size} bytes; the limit is ${MAX_TEST_FILE_BYTES}`);
    bytes = await readFile(path);
  } catch (err) {
    if (err instanceof TestLoadError) throw err;
    throw new TestLoadError(`${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (bytes.length > MAX_TEST_FILE_BYTES) throw new TestLoadError(`${file}: the file is ${bytes.length} bytes; the limit is ${MAX_TEST_FILE_BYTES}`);
  const text = bytes.toString('utf8');
  const lines = new LineCounter();
  const doc = YAML.parseDocument(text, { version: '1.2', schema: 'core', uniqueKeys: true, strict: true, merge: false, lineCounter: lines });
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) {
    const at = problem.linePos?.[0];
    throw new TestLoadError(`${file}${at ? `:${at.line}` : ''}: not valid YAML: ${problem.message.split('\n')[0]!.replace(/:$/, '')}`);
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    throw new TestLoadError(`${file}: not valid YAML: ${(err as Error).message}`);
  }
  if (!isRecord(data)) throw new TestLoadError(`${file}: a test file is a mapping with "cases" (and optionally "policies")`);
  checkKeys(data, FILE_KEYS, file);
  const policiesRaw = own(data, 'policies') ?? '.';
  if (typeof policiesRaw !== 'string' || policiesRaw === '') throw new TestLoadError(`${file}: policies must be a folder path, relative to the test file`);
  const policies = resolve(dirname(path), policiesRaw);
  const casesRaw = own(data, 'cases');
  if (!Array.isArray(casesRaw)) throw new TestLoadError(`${file}: "cases" must be a list of cases`);

  const casesNode = isMap(doc.contents) ? doc.contents.get('cases', true) : undefined;
  const caseNodes = isSeq(casesNode) ? casesNode.items : [];
  const cases: TestCase[] = [];
  const names = new Set<string>();
  casesRaw.forEach((raw, i) => {
    const node = caseNodes[i] as Node | undefined;
    const line = itemLine(text, node, lines);
    const where = `${file}:${line}`;
    if (!isRecord(raw)) throw new TestLoadError(`${where}: a case must be a mapping with name and evaluate, call or steps`);
    checkKeys(raw, CASE_KEYS, where);
    const name = own(raw, 'name');
    if (typeof name !== 'string' || name === '') throw new TestLoadError(`${where}: the case needs a name`);
    if (names.has(name)) throw new TestLoadError(`${where}: another case of this file is also named ${JSON.stringify(name)}`);
    names.add(name);
    const maxPins = checkMaxPins(own(raw, 'maxPins'), where);
    const maxFlowValues = checkMaxFlowValues(own(raw, 'maxFlowValues'), where);
    const servers = checkServers(own(raw, 'servers'), where);
    const extra = servers === undefined ? {} : { servers };
    const stepsRaw = own(raw, 'steps');
    if (stepsRaw === undefined) {
      cases.push({ name, file, line, policies, steps: [readStep(raw, where, line, CASE_KEYS)], session: false, maxPins, maxFlowValues, ...extra });
      return;
    }
    if (own(raw, 'evaluate') !== undefined || own(raw, 'call') !== undefined || own(raw, 'expect') !== undefined || own(raw, 'proxy') !== undefined) {
      throw new TestLoadError(`${where}: a case with steps puts evaluate, call, expect and proxy in its steps`);
    }
    if (!Array.isArray(stepsRaw) || stepsRaw.length === 0) throw new TestLoadError(`${where}: steps must be a list of at least one step`);
    const stepNodes = isMap(node) ? node.get('steps', true) : undefined;
    const stepItems = isSeq(stepNodes) ? stepNodes.items : [];
    const steps = stepsRaw.map((s, j) => {
      const sl = itemLine(text, stepItems[j] as Node | undefined, lines);
      return readStep(s, `${file}:${sl} (step ${j + 1} of case ${JSON.stringify(name)})`, sl, STEP_KEYS);
    });
    cases.push({ name, file, line, policies, steps, session: true, maxPins, maxFlowValues, ...extra });
  });
  return cases;
}
