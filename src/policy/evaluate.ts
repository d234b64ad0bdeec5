/**
 * Policy evaluation (docs/policies/reference.md): runs every rule of a loaded
 * policy set against one decision's variables and lists what matched.
 * Pure: no I/O, no clock, no randomness; the same input and set always give
 * the same matches in the same order.
 */
import { hasOwn } from '../json/record.js';
import { MODES, type Effect, type Mode, type Scope } from './vocabulary.js';
import type { CelResult } from './cel/engine.js';
import { buildActivation, prepareShared, type CelActivation } from './cel/values.js';
import { withDeadline } from './cel/deadline.js';
import type { CallVar, DataClassVar, EvidenceVar, ResultVar, PrincipalVar, SessionVar, SharedVarsInput } from './cel/variables.js';
import type { PolicySet, Rule } from './load.js';

export type { AssertedVar, BlockVar, CallVar, DataClassVar, EvidenceVar, ResultVar, SessionVar, ValidationVar } from './cel/variables.js';

/** The variables of one block scope. */
export interface BlockScopeInput {
  /** Index of the block in the input's `content`. */
  index: number;
  /** RFC 6901 pointer of the block in the request's `result` (`/content/<index>`). */
  pointer: string;
  /** The `block` variable (see BlockVar); `index` is filled in from above when missing. */
  block: Record<string, unknown>;
  evidence: readonly EvidenceVar[];
  dataClass: DataClassVar;
}

/** Everything the policies of one decision see: the variables shared by its scopes (see SharedVarsInput), then each scope's own. */
export interface EvaluationInput extends SharedVarsInput {
  /** Evidence and data class for scope `result` (every evidenceRef and record in the result). */
  resultScope: { evidence: readonly EvidenceVar[]; dataClass: DataClassVar };
  /** One entry per content block, in content order. */
  blocks: readonly BlockScopeInput[];
}

/** Everything the `scope: call` rules of one pre-call decision see (docs/behaviour/sessions.md). */
export interface CallEvaluationInput {
  call: CallVar;
  /** The tool definition; `tool.hints` and `tool.declared` are added from its annotations. */
  tool?: Record<string, unknown> | undefined;
  /** Members computed for `tool` (`hints`, `declared`, `digest`, `pin`) that replace the definition's members of the same names. */
  toolMembers?: Readonly<Record<string, unknown>> | undefined;
  server?: Record<string, unknown> | undefined;
  context?: Record<string, unknown> | undefined;
  session?: SessionVar | undefined;
  /** Who is asking; ANONYMOUS when absent. */
  principal?: PrincipalVar | undefined;
}

/** One matched rule: a finding (docs/behaviour/decisions.md). */
export interface Match {
  policy: string;
  rule: string;
  /** The mode the rule ran under, after the TRUSTGATE_MODE override. */
  mode: Mode;
  effect: Effect;
  scope: Scope;
  /** Set for scope `block`. */
  blockIndex?: number;
  /** `''` (the whole result) for scope `result`, the block's pointer for scope `block`. */
  pointer: string;
  message: string;
  /** Set when `when` failed to evaluate; the rule then counts as matched (fail closed). */
  error?: string;
}

/**
 * One rule evaluated on one scope instance (docs/policy-testing.md,
 * `options.explain`): `value` is the condition's value, or
 * `"error: <message>"` when it failed to evaluate (the rule then counted as
 * matched). Rules skipped because the CEL budget was spent are listed with
 * the budget error, so every rule of the set appears.
 */
export interface TraceEntry {
  policy: string;
  rule: string;
  scope: Scope;
  /** `''` for scope `result` and `call`, the block's pointer for scope `block`. */
  pointer: string;
  value: boolean | string;
}

/** A trace entry's value for one evaluation. */
function traceValue(r: CelResult): boolean | string {
  return r.ok ? r.value : `error: ${r.error}`;
}

/**
 * A cap on the CEL work of one decision. Once `exceeded()` turns true, every
 * rule not yet evaluated counts as matched with an error (fail closed), so a
 * policy set that would run too long can never let a result through
 * unchecked. The clock lives with the caller: this module stays pure.
 */
export interface EvaluationBudget {
  exceeded(): boolean;
  /** For the finding's error text, e.g. `100 ms per decision`. */
  describe: string;
}

/** The budget as a deadline to ask (comprehensions inside an expression, cel/deadline.ts; scans and reads of a decision), or none without a budget. */
export function deadlineOf(budget: EvaluationBudget | undefined): (() => boolean) | undefined {
  return budget === undefined ? undefined : () => budget.exceeded();
}

/** TRUSTGATE_MODE: `audit` forces every policy into audit; `warn` caps `enforce` at `warn`. */
export type ModeOverride = 'audit' | 'warn';

/** The milder of two modes (audit < warn < enforce): a rule's own mode never makes it stricter than its policy. */
export function milderMode(a: Mode, b: Mode): Mode {
  return MODES.indexOf(a) <= MODES.indexOf(b) ? a : b;
}

/** The mode a policy runs under once the override applies. */
export function effectiveMode(mode: Mode, override?: ModeOverride): Mode {
  if (override === 'audit') return 'audit';
  if (override === 'warn' && mode === 'enforce') return 'warn';
  return mode;
}

const emptyBlock: Readonly<Record<string, unknown>> = Object.freeze({});

/**
 * The CEL activations of one EvaluationInput, built on first use. A
 * decision whose label rules raised nothing evaluates its other rules over
 * the same input, and passes the same Activations to both passes so that
 * nothing is converted twice. The input must not change in between.
 */
export interface Activations {
  readonly input: EvaluationInput;
  readonly shared: ReturnType<typeof prepareShared>;
  result: CelActivation | undefined;
  readonly blocks: Array<CelActivation | undefined>;
}

export function activationsOf(input: EvaluationInput): Activations {
  return { input, shared: prepareShared(input), result: undefined, blocks: new Array<CelActivation | undefined>(input.blocks.length) };
}

/**
 * Evaluates every rule of `set`: scope `block` rules once per block with
 * that block's `block`, `evidence` and `dataClass`; scope `result` rules
 * once with `block` an empty map and the result-level evidence and data
 * class. A `when` that fails to evaluate, or yields something other than a
 * bool, counts as matched and the match carries `error`.
 *
 * Matches come in policy (file) order, then rule order, then block order.
 * With `phase`, only the `label` rules (`'label'`) or only the others
 * (`'rest'`) run.
 */
export function evaluatePolicies(
  set: PolicySet,
  input: EvaluationInput,
  modeOverride?: ModeOverride,
  budget?: EvaluationBudget,
  trace?: TraceEntry[],
  phase?: 'label' | 'rest',
  activations?: Activations,
): Match[] {
  return withDeadline(deadlineOf(budget), () => evaluateResultRules(set, input, modeOverride, budget, trace, phase, activations));
}

function evaluateResultRules(
  set: PolicySet,
  input: EvaluationInput,
  modeOverride: ModeOverride | undefined,
  budget: EvaluationBudget | undefined,
  trace: TraceEntry[] | undefined,
  phase: 'label' | 'rest' | undefined,
  activations: Activations | undefined,
): Match[] {
  // Activations are built on first use: a set with no rule of a scope
  // never pays for converting it.
  const acts = activations !== undefined && activations.input === input ? activations : activationsOf(input);
  const shared = acts.shared;
  const blockActivations = acts.blocks;
  const matches: Match[] = [];
  // Once spent, the budget stays spent: one result for every rule and block left, the clock no longer read.
  let late: CelResult | undefined;
  const spent = (): CelResult | undefined => {
    if (late === undefined && budget !== undefined && budget.exceeded()) late = { ok: false, error: `evaluation budget exceeded (${budget.describe})` };
    return late;
  };

  for (const policy of set.policies) {
    const policyMode = effectiveMode(policy.mode, modeOverride);
    for (const rule of policy.rules) {
      // Call rules run before a tool runs (evaluateCallPolicies), never on its result.
      if (rule.scope === 'call' || rule.scope === 'tool') continue;
      // Label rules run first, over the claims the result carries; the other rules then read what they raised (docs/behaviour/labels-and-detectors.md).
      if (phase !== undefined && (rule.effect === 'label') !== (phase === 'label')) continue;
      const mode = rule.mode === undefined ? policyMode : effectiveMode(milderMode(policy.mode, rule.mode), modeOverride);
      if (rule.scope === 'result') {
        const r =
          spent() ??
          rule.compiled.evaluate(
            (acts.result ??= buildActivation(shared, {
              block: emptyBlock,
              evidence: input.resultScope.evidence,
              dataClass: input.resultScope.dataClass,
            })),
          );
        if (trace !== undefined) trace.push({ policy: policy.id, rule: rule.id, scope: 'result', pointer: '', value: traceValue(r) });
        if (!r.ok || r.value) matches.push(matchOf(policy.id, rule, mode, r, '', undefined));
        continue;
      }
      // The match every block left past the budget gets, made once for the rule (the blocks' own pointer and index set on a copy).
      let lateMatch: Match | undefined;
      for (let i = 0; i < input.blocks.length; i++) {
        let r = spent();
        if (r === undefined) {
          let act = blockActivations[i];
          if (act === undefined) {
            const b = input.blocks[i]!;
            const block = hasOwn(b.block, 'index') ? b.block : { ...b.block, index: b.index };
            act = blockActivations[i] = buildActivation(shared, { block, evidence: b.evidence, dataClass: b.dataClass });
          }
          r = rule.compiled.evaluate(act);
        }
        if (trace !== undefined) trace.push({ policy: policy.id, rule: rule.id, scope: 'block', pointer: input.blocks[i]!.pointer, value: traceValue(r) });
        if (!r.ok || r.value) {
          const b = input.blocks[i]!;
          if (r === late) matches.push({ ...(lateMatch ??= matchOf(policy.id, rule, mode, r, b.pointer, b.index)), pointer: b.pointer, blockIndex: b.index });
          else matches.push(matchOf(policy.id, rule, mode, r, b.pointer, b.index));
        }
      }
    }
  }
  return matches;
}

const NO_RESULT: ResultVar = Object.freeze({ sensitive: false, untrusted: false, isError: false, blockCount: 0, asserted: Object.freeze({}), structured: Object.freeze({ sensitive: false, untrusted: false }) });

/**
 * Evaluates the `scope: call` rules of `set` (and only those) once, for a
 * tool call about to run. The loader guarantees they read only `call`,
 * `tool`, `server`, `context` and `session`. Matches come in policy (file)
 * order, then rule order; a `when` that fails counts as matched, as in
 * evaluatePolicies.
 */
export function evaluateCallPolicies(
  set: PolicySet,
  input: CallEvaluationInput,
  modeOverride?: ModeOverride,
  budget?: EvaluationBudget,
  trace?: TraceEntry[],
): Match[] {
  return withDeadline(deadlineOf(budget), () => evaluateCallRules(set, input, modeOverride, budget, trace));
}

function evaluateCallRules(set: PolicySet, input: CallEvaluationInput, modeOverride: ModeOverride | undefined, budget: EvaluationBudget | undefined, trace: TraceEntry[] | undefined): Match[] {
  let activation: CelActivation | undefined;
  const matches: Match[] = [];
  for (const policy of set.policies) {
    const mode = effectiveMode(policy.mode, modeOverride);
    for (const rule of policy.rules) {
      if (rule.scope !== 'call') continue;
      const r: CelResult =
        budget !== undefined && budget.exceeded()
          ? { ok: false, error: `evaluation budget exceeded (${budget.describe})` }
          : rule.compiled.evaluate(
              (activation ??= buildActivation(
                prepareShared({ result: NO_RESULT, tool: input.tool, toolMembers: input.toolMembers, server: input.server, context: input.context, principal: input.principal, validation: [], session: input.session, call: input.call }),
                { block: emptyBlock, evidence: [], dataClass: emptyBlock },
              )),
            );
      if (trace !== undefined) trace.push({ policy: policy.id, rule: rule.id, scope: 'call', pointer: '', value: traceValue(r) });
      if (!r.ok || r.value) matches.push(matchOf(policy.id, rule, mode, r, '', undefined));
    }
  }
  return matches;
}

/** Everything the `scope: tool` rules see of one listed definition (docs/bindings/proxy.md). */
export interface ToolEvaluationInput {
  tool: Record<string, unknown>;
  /** Computed members of `tool` (`hints`). */
  toolMembers?: Readonly<Record<string, unknown>> | undefined;
  server?: Record<string, unknown> | undefined;
  context?: Record<string, unknown> | undefined;
  session?: SessionVar | undefined;
  /** Who is asking; ANONYMOUS when absent. */
  principal?: PrincipalVar | undefined;
}

/** Evaluates the `scope: tool` rules of `set` on one listed tool definition. */
export function evaluateToolPolicies(set: PolicySet, input: ToolEvaluationInput, modeOverride?: ModeOverride, budget?: EvaluationBudget): Match[] {
  return withDeadline(deadlineOf(budget), () => evaluateToolRules(set, input, modeOverride, budget));
}

function evaluateToolRules(set: PolicySet, input: ToolEvaluationInput, modeOverride: ModeOverride | undefined, budget: EvaluationBudget | undefined): Match[] {
  let activation: CelActivation | undefined;
  const matches: Match[] = [];
  for (const policy of set.policies) {
    const mode = effectiveMode(policy.mode, modeOverride);
    for (const rule of policy.rules) {
      if (rule.scope !== 'tool') continue;
      const r: CelResult =
        budget !== undefined && budget.exceeded()
          ? { ok: false, error: `evaluation budget exceeded (${budget.describe})` }
          : rule.compiled.evaluate(
              (activation ??= buildActivation(
                prepareShared({ result: NO_RESULT, tool: input.tool, toolMembers: input.toolMembers, server: input.server, context: input.context, principal: input.principal, validation: [], session: input.session }),
                { block: emptyBlock, evidence: [], dataClass: emptyBlock },
              )),
            );
      if (!r.ok || r.value) matches.push(matchOf(policy.id, rule, mode, r, '', undefined));
    }
  }
  return matches;
}

/** A finding for a rule whose condition held, or failed to evaluate (fail closed). */
function matchOf(policy: string, rule: Rule, mode: Mode, r: CelResult, pointer: string, blockIndex: number | undefined): Match {
  const m: Match = { policy, rule: rule.id, mode, effect: rule.effect, scope: rule.scope, pointer, message: '' };
  if (blockIndex !== undefined) m.blockIndex = blockIndex;
  if (r.ok) {
    m.message = rule.message ?? `${policy}/${rule.id} matched (effect ${rule.effect})`;
  } else {
    m.error = r.error;
    m.message = `the condition of ${policy}/${rule.id} failed to evaluate (${r.error}); the rule counts as matched`;
  }
  return m;
}
