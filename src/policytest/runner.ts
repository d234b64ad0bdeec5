/**
 * Running policy test cases (docs/policy-testing.md) with the decision core
 * the service uses: each case gets a fresh in-memory session and pin store
 * (holding at most the case's `maxPins`), so cases never see each other,
 * and `steps` run in order in one session.
 * Findings match as subsets, `absent` must match none, pointers read the
 * forwarded result.
 */
import { isDeepStrictEqual } from 'node:util';
import { loadConfig, type Config } from '../config.js';
import { createDecisionCore, type CallDecision, type EvaluateCallRequest } from '../decision/core.js';
import type { Decision, EvaluateRequest } from '../decision/types.js';
import { isRecord, own } from '../json/record.js';
import { loadPolicyDir, PolicyLoadError, type PolicySet } from '../policy/load.js';
import { MemorySessionStore } from '../session/memory.js';
import { MemoryFlowStore } from '../session/flows.js';
import type { CallVar } from '../policy/cel/variables.js';
import { TrustgateError } from '../errors.js';
import { re2find } from '../policy/regex.js';
import { displayPath, TestLoadError, type Expect, type Step, type TestCase } from './cases.js';

/** One expectation that did not hold. */
export interface Failure {
  /** 1-based step of a `steps` case; absent for a single decision. */
  step?: number;
  /** 1-based line of that step's `- ` item; absent for a single decision. */
  stepLine?: number;
  /** `outcome`, `labels.untrusted`, `findings[0]`, `absent[1]`, `result /content/0/text`, ... */
  expectation: string;
  expected: unknown;
  got: unknown;
}

export interface CaseResult {
  name: string;
  file: string;
  line: number;
  passed: boolean;
  failures: Failure[];
}

export interface RuleCoverage {
  /** The policy folder, as the run names it. */
  policies: string;
  policy: string;
  rule: string;
  /** Cases whose decisions hold a finding of this rule, in any mode. */
  matched: number;
}

export interface RunReport {
  passed: number;
  failed: number;
  cases: CaseResult[];
  coverage?: { rules: RuleCoverage[]; percent: number };
}

/**
 * The settings decisions run under: the defaults, whatever the environment says (a test means the same everywhere),
 * but for the time per decision, the most the setting allows. The deadline guards a worker against a crafted input; in
 * a test it would make an answer depend on the machine's load (a case that compiles the rules it meets, on a machine
 * running other work, can pass 250 ms and count its rules as matched).
 */
const TEST_CONFIG: Config = { ...loadConfig({}), evalBudgetMs: 60_000 };

/** Policy sets by folder; a folder that does not load is a TestLoadError. */
export class PolicySets {
  readonly #sets = new Map<string, PolicySet>();

  constructor(
    private readonly load: (dir: string) => Promise<PolicySet> = loadPolicyDir,
    private readonly cwd?: string,
  ) {}

  async get(dir: string): Promise<PolicySet> {
    let set = this.#sets.get(dir);
    if (set === undefined) {
      try {
        // Messages name the folder as the run names files: relative to the working folder when under it.
        set = await this.load(displayPath(dir, this.cwd));
      } catch (err) {
        if (err instanceof PolicyLoadError) throw new TestLoadError(err.message);
        throw err;
      }
      this.#sets.set(dir, set);
    }
    return set;
  }

  entries(): IterableIterator<[string, PolicySet]> {
    return this.#sets.entries();
  }
}

/** The session every step of a `steps` case names. */
export const TEST_SESSION = 'trustgate-test';

/**
 * One decision with a fresh core over `set` and `sessions`; request errors (limits) are TestLoadErrors.
 * A step's `proxy` is passed as the proxy passes it: the judged message's
 * `call` (its name the body's `tool.name`, as the proxy sends both), or the
 * call of a tool the server did not list.
 */
async function decideStep(core: ReturnType<typeof createDecisionCore>, step: Step, session: boolean, where: string): Promise<Decision | CallDecision> {
  const request: Record<string, unknown> = { ...step.request };
  if (session && request.session === undefined) request.session = { id: TEST_SESSION };
  const proxy = step.proxy;
  try {
    if (step.kind === 'call') {
      const unlisted = proxy !== undefined && 'unlisted' in proxy && proxy.unlisted;
      return await core.evaluateCall({ request: request as unknown as EvaluateCallRequest, ...(unlisted ? { unlisted: true } : {}) });
    }
    let call: CallVar | undefined;
    if (proxy !== undefined && 'method' in proxy) {
      const tool = own(request, 'tool');
      const name = isRecord(tool) && typeof own(tool, 'name') === 'string' ? (own(tool, 'name') as string) : '';
      call = { method: proxy.method, name, arguments: proxy.arguments };
    }
    return await core.evaluateResult({ request: request as unknown as EvaluateRequest & { session?: { id: string } }, ...(call ? { call } : {}) });
  } catch (err) {
    if (err instanceof TrustgateError) throw new TestLoadError(`${where}: the request is refused (${err.code}): ${err.message}`);
    throw err;
  }
}

/** Whether `actual` holds every member of `expected` with an equal value (deep equality per member). */
export function subsetMatches(actual: unknown, expected: Record<string, unknown>): boolean {
  if (!isRecord(actual)) return false;
  for (const [k, v] of Object.entries(expected)) {
    if (!isDeepStrictEqual(own(actual, k), v)) return false;
  }
  return true;
}

/** The value at an RFC 6901 pointer, or `{ found: false }`. */
export function atPointer(doc: unknown, pointer: string): { found: true; value: unknown } | { found: false } {
  if (pointer === '') return { found: true, value: doc };
  let cur: unknown = doc;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token) || Number(token) >= cur.length) return { found: false };
      cur = cur[Number(token)];
    } else if (isRecord(cur) && Object.prototype.hasOwnProperty.call(cur, token)) {
      cur = cur[token];
    } else {
      return { found: false };
    }
  }
  return { found: true, value: cur };
}

/** A pointer expectation `{ contains }` or `{ matches }` (exactly that one key, a string); anything else is a value. */
function matcherOf(v: unknown): { contains: string } | { matches: string } | undefined {
  if (!isRecord(v) || Object.keys(v).length !== 1) return undefined;
  const c = own(v, 'contains');
  if (typeof c === 'string') return { contains: c };
  const m = own(v, 'matches');
  if (typeof m === 'string') return { matches: m };
  return undefined;
}

/** The short form of a finding shown as "got". */
const findingBrief = (f: Record<string, unknown>) => ({ policy: f.policy, rule: f.rule, mode: f.mode, effect: f.effect, pointer: f.pointer });

/** What did not hold of `expect` in `d`. */
export function compare(expect: Expect, d: Decision | CallDecision, step?: { step: number; line: number }): Failure[] {
  const out: Failure[] = [];
  const fail = (expectation: string, expected: unknown, got: unknown) =>
    out.push(step === undefined ? { expectation, expected, got } : { step: step.step, stepLine: step.line, expectation, expected, got });
  if (expect.outcome !== undefined && d.outcome !== expect.outcome) fail('outcome', expect.outcome, d.outcome);
  if (expect.requiresConsent !== undefined && d.requiresConsent !== expect.requiresConsent) fail('requiresConsent', expect.requiresConsent, d.requiresConsent);
  const rd = d as Decision;
  if (expect.modified !== undefined && rd.modified !== expect.modified) fail('modified', expect.modified, rd.modified);
  if (expect.labels !== undefined) {
    for (const [k, v] of Object.entries(expect.labels)) {
      const got = (rd.labels as Record<string, unknown>)[k];
      if (got !== v) fail(`labels.${k}`, v, got);
    }
  }
  const findings = d.findings as unknown as Array<Record<string, unknown>>;
  // `findings: []` reads as "no finding at all", and means it.
  if (expect.findings !== undefined && expect.findings.length === 0 && findings.length > 0) fail('findings', [], findings.map(findingBrief));
  expect.findings?.forEach((f, i) => {
    if (!findings.some((x) => subsetMatches(x, f))) fail(`findings[${i}]`, f, findings.map(findingBrief));
  });
  expect.absent?.forEach((f, i) => {
    const present = findings.filter((x) => subsetMatches(x, f));
    if (present.length > 0) fail(`absent[${i}]`, { absent: f }, present.map(findingBrief));
  });
  if (expect.result !== undefined) {
    for (const [pointer, want] of Object.entries(expect.result)) {
      const label = `result ${pointer === '' ? '(whole)' : pointer}`;
      if (rd.result === undefined) {
        fail(label, want, d.outcome === 'deny' ? 'no result: the outcome is deny' : 'no result in the answer');
        continue;
      }
      const at = atPointer(rd.result, pointer);
      if (!at.found) {
        fail(label, want, 'nothing at this pointer in the forwarded result');
        continue;
      }
      const m = matcherOf(want);
      if (m === undefined) {
        if (!isDeepStrictEqual(at.value, want)) fail(label, want, at.value);
      } else if (typeof at.value !== 'string') {
        fail(label, want, at.value);
      } else if ('contains' in m ? !at.value.includes(m.contains) : !re2find(at.value, m.matches)) {
        fail(label, want, at.value);
      }
    }
  }
  return out;
}

/**
 * Run every case (in the order given). Cases whose policies or requests do
 * not load throw TestLoadError: the run then stops (exit 2).
 * `coverage` lists every rule of every policy folder under test; `load`
 * replaces loading a folder from disk (mutation testing compiles mutants in
 * memory); `stopAtFirstFailure` ends the run at the first failing case;
 * `cwd`, the working folder folders are named relative to in messages.
 */
export async function runCases(
  cases: readonly TestCase[],
  opts: { coverage?: boolean; load?: (dir: string) => Promise<PolicySet>; stopAtFirstFailure?: boolean; cwd?: string } = {},
): Promise<RunReport> {
  const sets = new PolicySets(opts.load, opts.cwd);
  // Load every folder first: a broken policy is reported before any case runs.
  for (const c of cases) await sets.get(c.policies);
  const matched = new Map<string, number>();
  const results: CaseResult[] = [];
  for (const c of cases) {
    const set = await sets.get(c.policies);
    const sessions = new MemorySessionStore({ maxSessions: 16, maxPins: c.maxPins, ttlMs: 3_600_000 });
    const flows = new MemoryFlowStore({ maxValues: c.maxFlowValues, ttlMs: 3_600_000 });
    const withServers = c.servers === undefined ? set : { ...set, servers: c.servers };
    const core = createDecisionCore({ config: { ...TEST_CONFIG, maxFlowValues: c.maxFlowValues }, policies: () => withServers, sessions, flows });
    const failures: Failure[] = [];
    const hit = new Set<string>();
    for (let i = 0; i < c.steps.length; i++) {
      const step = c.steps[i]!;
      const d = await decideStep(core, step, c.session, `${c.file}:${step.line}`);
      for (const f of d.findings) hit.add(`${c.policies}\u0000${f.policy}\u0000${f.rule}`);
      failures.push(...compare(step.expect, d, c.session ? { step: i + 1, line: step.line } : undefined));
    }
    await Promise.all([sessions.close(), flows.close()]);
    for (const k of hit) matched.set(k, (matched.get(k) ?? 0) + 1);
    results.push({ name: c.name, file: c.file, line: c.line, passed: failures.length === 0, failures });
    if (opts.stopAtFirstFailure && failures.length > 0) break;
  }
  const report: RunReport = {
    passed: results.filter((r) => r.passed).length,
    failed: results.filter((r) => !r.passed).length,
    cases: results,
  };
  if (opts.coverage) {
    const rules: RuleCoverage[] = [];
    for (const [dir, set] of sets.entries()) {
      for (const p of set.policies) {
        for (const r of p.rules) rules.push({ policies: displayPath(dir, opts.cwd), policy: p.id, rule: r.id, matched: matched.get(`${dir}\u0000${p.id}\u0000${r.id}`) ?? 0 });
      }
    }
    const covered = rules.filter((r) => r.matched > 0).length;
    report.coverage = { rules, percent: rules.length === 0 ? 100 : Math.floor((covered * 10000) / rules.length) / 100 };
  }
  return report;
}
