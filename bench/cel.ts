/**
 * CEL engine benchmark: @marcbachmann/cel-js against @bufbuild/cel, with the
 * variables of the production variable table (src/policy/cel/variables.ts);
 * the fixture binds result, block, tool, server, context, evidence, dataClass
 * and validation.
 *
 * Measures, for each library:
 * - compile: parse + whatever the library offers to reject unknown variables
 *   at load (cel-js: its type checker; @bufbuild/cel 0.6.1 has no public
 *   checker, so a walk over the parsed AST that rejects free identifiers);
 * - evaluate: one decision = shared members converted once, then per block
 *   the per-block members converted and every expression evaluated; reported
 *   per expression evaluation, activation building included;
 * - semantics: `has()` on absent members, `in` on lists, numbers, strings,
 *   bools, and the error cases policies must fail closed on.
 *
 * Last rows: the production adapter (src/policy/cel/engine.ts) on the same fixture,
 * so that the adapter's own cost stays visible, with and without its
 * compiled fast path (src/policy/cel/fast.ts).
 *
 * Run: npx tsx bench/cel.ts
 */
import { Environment } from '@marcbachmann/cel-js';
import {
  celEnv,
  celList,
  celMap,
  CelScalar,
  isCelError,
  listType,
  mapType,
  parse as bufParse,
  plan as bufPlan,
} from '@bufbuild/cel';
import type { CelInput } from '@bufbuild/cel';
import { compileCel, declareVariables } from '../src/policy/cel/engine.js';
import { buildActivation, prepareShared } from '../src/policy/cel/values.js';
import { CEL_VARIABLE_TABLE, CEL_VARIABLES, type ScopeVarsInput, type SharedVarsInput } from '../src/policy/cel/variables.js';

// ---------------------------------------------------------------- fixture

const EXPRESSIONS = [
  'block.untrusted',
  'result.sensitive && has(context.destination) && context.destination != "local"',
  'evidence.exists(e, e.status == "mismatch")',
  'size(block.audience) > 0 && !("assistant" in block.audience)',
  'validation.exists(v, v.severity == "error")',
  'has(dataClass.class) && dataClass.class != "public"',
];

const BLOCKS = 8;

const shared: SharedVarsInput = {
  result: {
    sensitive: true,
    untrusted: true,
    isError: false,
    blockCount: BLOCKS,
    asserted: { sensitive: true, untrusted: true },
  },
  tool: { name: 'fetch', annotations: { openWorldHint: true, readOnlyHint: true } },
  server: { name: 'web' },
  context: { destination: 'external-model', reader: 'assistant', tenant: 'acme', n: 1, constructor: 'data' },
  validation: [
    { rule: 'mcp.annotations.priority', severity: 'error', pointer: '/content/1/annotations/priority' },
    { rule: 'trust.no-weakening', severity: 'warning', pointer: '/content/3' },
  ],
};

const blocks: ScopeVarsInput[] = Array.from({ length: BLOCKS }, (_, i) => ({
  block: {
    index: i,
    type: 'text',
    sensitive: i % 2 === 0,
    untrusted: i % 3 === 0,
    asserted: i % 2 === 0 ? { sensitive: true } : {},
    audience: i % 4 === 0 ? ['user'] : ['user', 'assistant'],
    priority: 0.5,
    ...(i % 2 === 0 ? { mimeType: 'text/plain' } : {}),
  },
  evidence:
    i % 2 === 0
      ? [{ type: 'data-class.v1', status: i === 6 ? 'mismatch' : 'verified', canonicalization: 'jcs/rfc8785', pointer: `/content/${i}/_meta` }]
      : [],
  dataClass: i % 2 === 0 ? { class: 'confidential', regulatory: ['gdpr'] } : {},
}));

/** Members that are CEL ints; every other number is a double. */
const INT_MEMBERS = new Set(['blockCount', 'index']);

// ------------------------------------------------------ cel-js: Maps

// Maps rather than plain objects: cel-js recognises objects by their
// `constructor` property, which a data member of that name would shadow.
function toCelJs(v: unknown, intKeys = false): unknown {
  if (Array.isArray(v)) return v.map((x) => toCelJs(x));
  if (typeof v === 'object' && v !== null) {
    const out = new Map<string, unknown>();
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined) continue;
      out.set(k, intKeys && INT_MEMBERS.has(k) && typeof x === 'number' ? BigInt(x) : toCelJs(x));
    }
    return out;
  }
  return v;
}

const celJsEnv = declareVariables(new Environment({ limits: { maxAstNodes: 1000 } }));

type Evaluator = (activation: Record<string, unknown>) => { ok: boolean; value?: unknown; error?: string };

function celJsCompile(src: string): Evaluator {
  const fn = celJsEnv.parse(src);
  const checked = fn.check();
  if (!checked.valid) throw new Error(checked.error?.message ?? 'invalid');
  return (activation) => {
    try {
      return { ok: true, value: fn(activation) };
    } catch (e) {
      return { ok: false, error: (e as Error).message.split('\n')[0] };
    }
  };
}

function celJsShared() {
  return {
    result: toCelJs(shared.result, true),
    tool: toCelJs(shared.tool),
    server: toCelJs(shared.server),
    context: toCelJs(shared.context),
    validation: toCelJs(shared.validation),
  };
}

function celJsActivation(s: ReturnType<typeof celJsShared>, b: (typeof blocks)[number]): Record<string, unknown> {
  return {
    result: s.result,
    tool: s.tool,
    server: s.server,
    context: s.context,
    validation: s.validation,
    block: toCelJs(b.block, true),
    evidence: toCelJs(b.evidence),
    dataClass: toCelJs(b.dataClass),
  };
}

// ------------------------------------------------------ @bufbuild/cel

function toBuf(v: unknown, intKeys = false): CelInput {
  if (Array.isArray(v)) return celList(v.map((x) => toBuf(x)));
  if (typeof v === 'object' && v !== null) {
    const m = new Map<string, CelInput>();
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined) continue;
      m.set(k, intKeys && INT_MEMBERS.has(k) && typeof x === 'number' ? BigInt(x) : toBuf(x));
    }
    return celMap(m);
  }
  return v as CelInput;
}

const DYN_MAP = mapType(CelScalar.STRING, CelScalar.DYN);
const bufEnv = celEnv({
  // The same variables and types as the production engine (only the two CEL types of the table occur).
  variables: Object.fromEntries(CEL_VARIABLE_TABLE.map((v) => [v.name, v.type === 'map<string, dyn>' ? DYN_MAP : listType(DYN_MAP)])),
});
const BUF_VARS: ReadonlySet<string> = new Set(CEL_VARIABLES);

/** Free identifiers of a parsed expression (comprehension variables bound). */
function freeIdents(expr: any, bound: Set<string>, out: Set<string>): void {
  if (expr === undefined) return;
  const k = expr.exprKind;
  switch (k.case) {
    case 'identExpr':
      if (!bound.has(k.value.name)) out.add(k.value.name);
      return;
    case 'selectExpr':
      freeIdents(k.value.operand, bound, out);
      return;
    case 'callExpr':
      freeIdents(k.value.target, bound, out);
      for (const a of k.value.args) freeIdents(a, bound, out);
      return;
    case 'listExpr':
      for (const e of k.value.elements) freeIdents(e, bound, out);
      return;
    case 'structExpr':
      for (const e of k.value.entries) {
        if (e.keyKind.case === 'mapKey') freeIdents(e.keyKind.value, bound, out);
        freeIdents(e.value, bound, out);
      }
      return;
    case 'comprehensionExpr': {
      const c = k.value;
      freeIdents(c.iterRange, bound, out);
      freeIdents(c.accuInit, bound, out);
      const inner = new Set([...bound, c.iterVar, c.iterVar2, c.accuVar].filter(Boolean));
      freeIdents(c.loopCondition, inner, out);
      freeIdents(c.loopStep, inner, out);
      freeIdents(c.result, inner, out);
      return;
    }
    default:
      return;
  }
}

function bufCompile(src: string): Evaluator {
  const parsed = bufParse(src);
  const free = new Set<string>();
  freeIdents(parsed.expr, new Set(), free);
  for (const name of free) if (!BUF_VARS.has(name)) throw new Error(`undeclared reference to '${name}'`);
  const fn = bufPlan(bufEnv, parsed);
  return (activation) => {
    try {
      const v = fn(activation as Parameters<typeof fn>[0]);
      return isCelError(v) ? { ok: false, error: v.message } : { ok: true, value: v };
    } catch (e) {
      return { ok: false, error: 'threw: ' + (e as Error).message };
    }
  };
}

function bufShared() {
  return {
    result: toBuf(shared.result, true),
    tool: toBuf(shared.tool),
    server: toBuf(shared.server),
    context: toBuf(shared.context),
    validation: toBuf(shared.validation),
  };
}

function bufActivation(s: ReturnType<typeof bufShared>, b: (typeof blocks)[number]): Record<string, unknown> {
  return {
    result: s.result,
    tool: s.tool,
    server: s.server,
    context: s.context,
    validation: s.validation,
    block: toBuf(b.block, true),
    evidence: toBuf(b.evidence),
    dataClass: toBuf(b.dataClass),
  };
}

// ------------------------------------------------------------- harness

/**
 * Times the contenders in interleaved rounds (A, B, C, A, B, C, ...) so that
 * load from other processes hits them alike; returns the median ns per call
 * of each.
 */
function measure(iterations: number, rounds: number, fns: Array<() => void>): number[] {
  for (const fn of fns) for (let i = 0; i < iterations; i++) fn();
  const samples = fns.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    fns.forEach((fn, k) => {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < iterations; i++) fn();
      samples[k]!.push(Number(process.hrtime.bigint() - t0) / iterations);
    });
  }
  return samples.map((xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!);
}

let sink = 0;

interface Engine {
  name: string;
  compile(src: string): Evaluator;
  decision(compiled: Evaluator[]): void;
}

const engines: Engine[] = [
  {
    name: '@marcbachmann/cel-js 8.0.0',
    compile: celJsCompile,
    decision(compiled) {
      const s = celJsShared();
      for (const b of blocks) {
        const act = celJsActivation(s, b);
        for (const c of compiled) if (c(act).value === true) sink++;
      }
    },
  },
  {
    name: '@bufbuild/cel 0.6.1',
    compile: bufCompile,
    decision(compiled) {
      const s = bufShared();
      for (const b of blocks) {
        const act = bufActivation(s, b);
        for (const c of compiled) if (c(act).value === true) sink++;
      }
    },
  },
];

// Neither engine caches by source text (checked in their sources), so
// compiling the same strings again measures real work.

interface Row {
  compileUs: number;
  evalNs: number;
  perExprNs: number[];
}

// The production adapter runs as a third contender on the same fixture, and
// as a fourth without its compiled fast path (src/policy/cel-fast.ts): the
// engine alone, on variables converted to its values.
const adapterDecisionOf = (fastPath: boolean) => {
  const compiled = EXPRESSIONS.map((src) => compileCel(src, { fastPath }));
  return () => {
    const s = prepareShared(shared);
    for (const b of blocks) {
      const act = buildActivation(s, b);
      for (const c of compiled) {
        const r = c.evaluate(act);
        if (r.ok && r.value) sink++;
      }
    }
  };
};
const adapterDecision = adapterDecisionOf(true);
const engineOnlyDecision = adapterDecisionOf(false);
const compiledByEngine = engines.map((e) => EXPRESSIONS.map((src) => e.compile(src)));

const compileNs = measure(1000, 15, [
  ...engines.map((e) => () => {
    for (const src of EXPRESSIONS) e.compile(src);
  }),
  () => {
    for (const src of EXPRESSIONS) compileCel(src);
  },
]);
const decisionNs = measure(1000, 15, [
  ...engines.map((e, k) => () => e.decision(compiledByEngine[k]!)),
  adapterDecision,
  engineOnlyDecision,
]);

const rows = new Map<string, Row>();
engines.forEach((e, k) => {
  rows.set(e.name, {
    compileUs: compileNs[k]! / EXPRESSIONS.length / 1000,
    evalNs: decisionNs[k]! / (BLOCKS * EXPRESSIONS.length),
    perExprNs: [],
  });
});
const adapterCompileNs = compileNs[engines.length]!;
const adapterDecisionNs = decisionNs[engines.length]!;
const engineOnlyDecisionNs = decisionNs[engines.length + 1]!;

// Per expression, activation prebuilt: where the time goes.
{
  const cjsAct = celJsActivation(celJsShared(), blocks[0]!);
  const bufAct = bufActivation(bufShared(), blocks[0]!);
  for (const src of EXPRESSIONS) {
    const a = celJsCompile(src);
    const b = bufCompile(src);
    const [na, nb] = measure(20_000, 9, [() => void (a(cjsAct).ok && sink++), () => void (b(bufAct).ok && sink++)]);
    rows.get(engines[0]!.name)!.perExprNs.push(na!);
    rows.get(engines[1]!.name)!.perExprNs.push(nb!);
  }
}

// -------------------------------------------------------------- semantics

interface Case {
  name: string;
  expr: string;
  /** `true`/`false` for a bool, 'error' for a failed evaluation, 'non-bool' for a value of another type. */
  want: boolean | 'error' | 'non-bool';
}

const CASES: Case[] = [
  { name: 'has() on absent map member', expr: 'has(context.missing)', want: false },
  { name: 'has() on present map member', expr: 'has(context.destination)', want: true },
  { name: 'has() on optional block member', expr: 'has(block.uri)', want: false },
  { name: 'has() on nested absent member', expr: 'has(tool.annotations.destructiveHint)', want: false },
  { name: 'in on list (present)', expr: '"user" in block.audience', want: true },
  { name: 'in on list (absent)', expr: '"assistant" in ["user"]', want: false },
  { name: 'string equality', expr: 'context.destination == "external-model"', want: true },
  { name: 'string method', expr: 'context.destination.startsWith("external")', want: true },
  { name: 'int member == int literal', expr: 'block.index == 0', want: true },
  { name: 'int member > int literal', expr: `result.blockCount > ${BLOCKS - 1}`, want: true },
  { name: 'double member compares to int', expr: 'block.priority > 0', want: true },
  { name: 'double member == double', expr: 'block.priority == 0.5', want: true },
  { name: 'JSON number == int literal', expr: 'context.n == 1', want: true },
  { name: 'JSON number == double literal', expr: 'context.n == 1.0', want: true },
  { name: 'JSON number + int is an error', expr: 'context.n + 1 == 2', want: 'error' },
  { name: 'bool member', expr: 'tool.annotations.openWorldHint', want: true },
  { name: 'string != int (dyn) is false', expr: 'context.destination == 1', want: false },
  { name: 'absent member is an error', expr: 'block.nosuch == 1', want: 'error' },
  { name: 'data member named constructor', expr: 'context.constructor == "data" && context.tenant == "acme"', want: true },
  { name: 'prototype member is absent', expr: 'has(tool.constructor)', want: false },
  { name: 'division by zero is an error', expr: '1/0 == 1', want: 'error' },
  { name: 'non-bool result', expr: 'block.type', want: 'non-bool' },
  { name: 'error || true is true', expr: 'block.nosuch == 1 || true', want: true },
  { name: 'comment in the expression', expr: 'block.index == 0 // first block', want: true },
  { name: 'exists over evidence', expr: 'evidence.exists(e, e.status == "verified")', want: true },
];

function outcome(r: { ok: boolean; value?: unknown }): boolean | 'error' | 'non-bool' {
  if (!r.ok) return 'error';
  return typeof r.value === 'boolean' ? r.value : 'non-bool';
}

const semantics: Array<{ name: string; want: string; got: string[] }> = [];
const cjsAct = celJsActivation(celJsShared(), blocks[0]!);
const bufAct = bufActivation(bufShared(), blocks[0]!);
for (const c of CASES) {
  const got: string[] = [];
  for (const [compile, act] of [
    [celJsCompile, cjsAct],
    [bufCompile, bufAct],
  ] as const) {
    try {
      got.push(String(outcome(compile(c.expr)(act))));
    } catch (e) {
      got.push('compile error: ' + (e as Error).message.split('\n')[0]);
    }
  }
  semantics.push({ name: `${c.name}: ${c.expr}`, want: String(c.want), got });
}

// Compile-time rejection: what each engine can refuse at load. The
// @bufbuild/cel column includes the free-identifier walk above, which is
// what rejects unknown variables there.
const COMPILE_CASES = ['nosuch.member', 'block.', 'block.index +', 'nosuchfn(block)', 'block.size(1)', '1 + 2 == "a"', '1 + 2'];
const rejectors: Array<(src: string) => unknown> = [celJsCompile, bufCompile, compileCel];
const compileRejects = COMPILE_CASES.map((src) => {
  const got = rejectors.map((compile) => {
    try {
      compile(src);
      return 'accepted';
    } catch (e) {
      return 'rejected: ' + (e as Error).message.split('\n')[0];
    }
  });
  return { src, got };
});

// ----------------------------------------------------------------- report

const [a, b] = engines.map((e) => rows.get(e.name)!) as [Row, Row];
const ratio = (x: number, y: number) => (y / x).toFixed(1) + 'x';
const fmt = (n: number, d = 0) => n.toFixed(d).padStart(9);

console.log(`\nCEL engines, Node ${process.version}, ${EXPRESSIONS.length} expressions, ${BLOCKS} blocks per decision\n`);
console.log('| metric | cel-js | @bufbuild/cel | bufbuild / cel-js |');
console.log('|---|---:|---:|---:|');
console.log(`| compile, µs per expression | ${fmt(a.compileUs, 1)} | ${fmt(b.compileUs, 1)} | ${ratio(a.compileUs, b.compileUs)} |`);
console.log(`| evaluate, ns per evaluation (activation incl.) | ${fmt(a.evalNs)} | ${fmt(b.evalNs)} | ${ratio(a.evalNs, b.evalNs)} |`);
console.log(`| decision (${BLOCKS} blocks x ${EXPRESSIONS.length} rules), µs | ${fmt((a.evalNs * BLOCKS * EXPRESSIONS.length) / 1000, 1)} | ${fmt((b.evalNs * BLOCKS * EXPRESSIONS.length) / 1000, 1)} | ${ratio(a.evalNs, b.evalNs)} |`);
EXPRESSIONS.forEach((src, i) => {
  console.log(`| eval only, ns: \`${src}\` | ${fmt(a.perExprNs[i]!)} | ${fmt(b.perExprNs[i]!)} | ${ratio(a.perExprNs[i]!, b.perExprNs[i]!)} |`);
});

console.log('\nAdapter src/policy/cel/ (same fixture)\n');
console.log(`compile ${(adapterCompileNs / EXPRESSIONS.length / 1000).toFixed(1)} µs per expression, evaluate ${(adapterDecisionNs / (BLOCKS * EXPRESSIONS.length)).toFixed(0)} ns per evaluation (activation incl.)`);
console.log(
  `without the compiled fast path (engine alone): ${(engineOnlyDecisionNs / (BLOCKS * EXPRESSIONS.length)).toFixed(0)} ns per evaluation, ${ratio(adapterDecisionNs, engineOnlyDecisionNs)} the time with it`,
);

console.log('\nSemantics (want | cel-js | @bufbuild/cel)\n');
let failures = [0, 0];
for (const s of semantics) {
  const marks = s.got.map((g, i) => {
    const okay = g === s.want;
    if (!okay) failures[i]!++;
    return (okay ? 'ok   ' : 'FAIL ') + g;
  });
  console.log(`${s.name.padEnd(78)} | ${s.want.padEnd(8)} | ${marks[0]!.padEnd(14)} | ${marks[1]}`);
}
console.log(`\nsemantic failures: cel-js ${failures[0]}, @bufbuild/cel ${failures[1]}`);

console.log('\nCompile-time rejection (cel-js parse + check | @bufbuild/cel parse + plan + identifier walk | adapter)\n');
for (const r of compileRejects) console.log(`${r.src}\n  cel-js:   ${r.got[0]}\n  bufbuild: ${r.got[1]}\n  adapter:  ${r.got[2]}`);
if (sink < 0) console.log(sink);
