/**
 * The result decision (docs/architecture.md, "The path of a decision"),
 * left to right: request checks → validation → trust assessment (claims,
 * evidence, data class) → policies → outcome (outcome.ts) → effects →
 * answer. Pure apart from what is passed in (decision id, spotlight
 * boundary), so the same request and policy set always give the same
 * decision. run.ts wraps it with the id, clock, metrics and log line.
 */
import type { Dialect } from '../annotations/dialects.js';
import { assessTrust, type TrustAssessment } from '../trust/assess.js';
import { operatorSource, type OperatorEntry } from '../trust/operator.js';
import { hintViews } from '../mcp/hints.js';
import { MAX_RECORD_DEPTH } from '../evidence/digest.js';
import type { EvidenceEntry } from '../evidence/verify.js';
import { TrustgateError } from '../errors.js';
import type { JsonScan } from '../json/scan.js';
import { deadlineOf, evaluatePolicies, type EvaluationBudget, type Match, type SessionVar, type TraceEntry, type CallVar } from '../policy/evaluate.js';
import type { PrincipalVar } from '../policy/cel/variables.js';
import { isRecord, own } from '../json/record.js';
import { activationsOf, type Activations } from '../policy/evaluate.js';
import { forwardedFlow, type ForwardedFlow } from './flow.js';
import type { PolicySet } from '../policy/load.js';
import { findCasefoldCollisions } from '../mcp/casefold.js';
import { emptyPlan, planEffect, planMask, type BlockAction, type BlockActionOut, type EffectPlan } from '../policy/effects.js';
import { foldMatches } from './outcome.js';
import type { BlockOut, Decision, EvaluateRequest, EvidenceOut } from './types.js';
import { DetectionCache, withDetection, type JoinedText } from '../detect/index.js';
import { addRaise, blockRaised, noRaises, raiseTrust, type LabelRaises } from './labels.js';
import { blockText, envelopeStrings, memberNames, namedStructures, otherStrings, stringsOf } from './text.js';
import { ruleKey } from '../policy/load.js';
import { forward, type Forwarded } from './forward.js';
import { boundDecision } from './bound.js';
import { checkStringLengths } from './limits.js';
import { checkResultDepth, MAX_RESULT_DEPTH, resolveRevision, resultFindings } from './request-checks.js';
import type { Revision } from '../mcp/revisions.js';
import type { ValidationFinding } from '../mcp/findings.js';

export interface DecideOptions {
  policies: PolicySet;
  modeOverride?: 'audit' | 'warn' | undefined;
  decisionId: string;
  /** Random per decision; spotlight fences use it so untrusted text cannot forge them. */
  boundary: string;
  /** What the pre-parse scan found in the request text (records that are not I-JSON). */
  scan?: JsonScan | undefined;
  /** Request-path of the `evidence` array in the scanned text ('/evidence' for /v1/evaluate). */
  evidencePath?: string;
  maxBlocks: number;
  maxEvidence: number;
  /** Longest string policies and evidence matching read; unchecked when absent. */
  maxString?: number;
  /** Validation findings listed, past which only the first of each rule and severity is (see FindingList); unbounded when absent. */
  maxValidationFindings?: number;
  /** Findings listed, past which only the first of each policy, rule and mode is (see bound.ts); unbounded when absent. */
  maxFindings?: number;
  /** Size bound of the answer's lists together, in characters (see bound.ts answerBudget); unbounded when absent. */
  answerBudget?: number;
  /**
   * Whether the request text repeats a member name in `result` (or at its
   * top level); asked only before leaving an unchanged result out of the
   * answer (`options.omitUnmodifiedResult`). The host would then forward its
   * own copy of that text, and JSON parsers disagree on which copy of a
   * repeated member wins: true keeps the result, as judged, in the answer.
   * When absent the result is never left out.
   */
  resultRepeatsNames?: (() => boolean) | undefined;
  /** Cap on the CEL work of this decision (fail closed once spent). */
  budget?: EvaluationBudget | undefined;
  /** Label dialects read (TRUSTGATE_DIALECTS); all of them when absent. */
  dialects?: readonly Dialect[] | undefined;
  /** The `call` variable of block and result rules: what the judged message is (the proxy); a tools/call result when absent. */
  call?: CallVar | undefined;
  /** The `session` variable (what the session was shown before this request); no session when absent. */
  session?: SessionVar | undefined;
  /** Who is asking (`principal`); ANONYMOUS when absent. */
  principal?: PrincipalVar | undefined;
  /** When given, receives what the decision forwarded (left unset on deny), for the session to take in. */
  flow?: { forwarded?: ForwardedFlow };
  /** With `flow`: the most values one result adds to its session (TRUSTGATE_MAX_FLOW_VALUES); none are read when absent. */
  maxFlowValues?: number | undefined;
  /** The operator's entry for the result's server: its `labels` are claims on the whole result (provenance `operator:<server>`), its hints give `tool.hints`. */
  operator?: { entry: OperatorEntry; server: string } | undefined;
}

/** The roles an `annotations.audience` may name (MCP's `Role`, the same in every revision). */
const ROLES: ReadonlySet<unknown> = new Set(['user', 'assistant']);

/**
 * What `block.audience` holds for a malformed audience (not an array of
 * roles): a list that is not empty and names no reader, so that a rule
 * written as "the audience is set and excludes the reader" drops the block
 * for every reader (docs/behaviour/forwarding.md: fail closed), alongside
 * `block.audienceMalformed: true`.
 */
export const MALFORMED_AUDIENCE: readonly string[] = Object.freeze(['malformed']);

/** The `audience` and `audienceMalformed` members of `block` for an `annotations.audience` value (absent: undefined). */
function audienceVar(aud: unknown): { audience: readonly string[]; malformed: boolean } {
  if (aud === undefined) return { audience: [], malformed: false };
  if (!Array.isArray(aud)) return { audience: MALFORMED_AUDIENCE, malformed: true };
  for (const a of aud) if (!ROLES.has(a)) return { audience: MALFORMED_AUDIENCE, malformed: true };
  return { audience: aud as string[], malformed: false };
}

function blockVar(block: unknown, t: TrustAssessment['blocks'][number]): Record<string, unknown> {
  const v: Record<string, unknown> = {
    index: t.index,
    type: t.type,
    sensitive: t.sensitive === true,
    untrusted: t.untrusted === true,
    asserted: t.asserted,
    audience: [],
    audienceMalformed: false,
  };
  if (!isRecord(block)) return v;
  const ann = own(block, 'annotations');
  if (isRecord(ann)) {
    const aud = audienceVar(own(ann, 'audience'));
    v.audience = aud.audience;
    v.audienceMalformed = aud.malformed;
    const pr = own(ann, 'priority');
    if (typeof pr === 'number' && Number.isFinite(pr)) v.priority = pr;
  }
  // Embedded resources carry uri and mimeType on the inner resource.
  const res = own(block, 'resource');
  const holder = t.type === 'resource' && isRecord(res) ? res : block;
  const mime = own(holder, 'mimeType');
  if (typeof mime === 'string') v.mimeType = mime;
  const uri = own(holder, 'uri');
  if (typeof uri === 'string') v.uri = uri;
  return v;
}

const NOT_IJSON_NAMES = 'record repeats a member name (not I-JSON)';
const NOT_IJSON_NUMBER = 'record holds a number of integral value outside -(2^53-1)..2^53-1 (not I-JSON)';

/**
 * Evidence entries with the I-JSON verdict of their request text. The scan
 * ran focused on `<evidencePath>/*\/record` and keeps, per occurrence, the
 * index its `*` matched (JsonScan `under`), so no pointer is read here. A
 * scan with any other focus cannot say which record an occurrence is in:
 * then every record counts as not I-JSON when anything was found (fail
 * closed).
 */
function evidenceEntries(req: EvaluateRequest, opts: DecideOptions): EvidenceEntry[] {
  const list = req.evidence ?? [];
  if (list.length === 0) return [];
  const scan = opts.scan;
  const tokens = (opts.evidencePath ?? '/evidence').split('/').slice(1);
  const focus = scan?.focus;
  const exact =
    focus != null && focus.length === tokens.length + 2 && focus[tokens.length] === '*' && focus[tokens.length + 1] === 'record' && tokens.every((t, i) => focus[i] === t) &&
    !focus.slice(0, tokens.length).includes('*');
  const verdict = (i: number): string | undefined => {
    if (!scan) return undefined;
    if (!exact) return scan.duplicateKeys.count > 0 ? NOT_IJSON_NAMES : scan.unsafeIntegers.count > 0 ? NOT_IJSON_NUMBER : undefined;
    const key = String(i);
    return scan.duplicateKeys.under.has(key) ? NOT_IJSON_NAMES : scan.unsafeIntegers.under.has(key) ? NOT_IJSON_NUMBER : undefined;
  };
  // A record nests less deeply than the text that holds it.
  const shallow = scan !== undefined && scan.depth <= MAX_RECORD_DEPTH;
  return list.map((e, i) => {
    const entry: EvidenceEntry = { digest: e.digest, ref: e.ref, record: e.record, hasRecord: Object.prototype.hasOwnProperty.call(e, 'record'), shallow };
    const why = verdict(i);
    if (why !== undefined) entry.ijsonViolation = why;
    return entry;
  });
}

/**
 * The result decision, one stage a function: the request's bounds, the
 * trust assessment and validation, the policy passes, the effect plan and
 * outcome, the result to forward, the answer.
 */
export function decideResult(req: EvaluateRequest, opts: DecideOptions): Decision {
  const checked = checkRequest(req, opts);
  const assessed = assess(req, opts, checked);
  // Provenance and the trace are opt-in: on a typical result provenance alone is a third of the decision's text.
  const explain = req.options?.explain === true;
  const trace: TraceEntry[] | undefined = explain ? [] : undefined;
  // Scans run while policies run stop at the CEL budget; the rule then counts as matched (fail closed).
  const detection = new DetectionCache(deadlineOf(opts.budget));
  const passes = evaluate(req, opts, checked, assessed, detection, trace);
  const planned = planEffects(opts.policies, passes.matches, checked.blocks.length);
  const out = planned.denied ? undefined : forwardResult(opts, checked, assessed, passes, planned.plan, detection);
  return answer(req, opts, { checked, assessed, passes, planned, out, explain, trace });
}

/** What the request checks leave: the result, the revision whose rules apply, its blocks. */
interface Checked {
  result: Record<string, unknown>;
  revision: Revision;
  blocks: unknown[];
}

/** Stage 1: the request's bounds (depth, blocks, evidence entries, string lengths) and the revision. @throws TrustgateError */
function checkRequest(req: EvaluateRequest, opts: DecideOptions): Checked {
  const result = req.result;
  // The body's depth bounds the result's: the walk is needed only for deep bodies.
  if (opts.scan === undefined || opts.scan.depth > MAX_RESULT_DEPTH) checkResultDepth(result);
  const revision = resolveRevision(result, req.protocolVersion);
  const content = own(result, 'content');
  const blocks = Array.isArray(content) ? content : [];
  if (blocks.length > opts.maxBlocks) {
    throw new TrustgateError('TG_ERR_LIMIT_BLOCKS', `result.content holds ${blocks.length} blocks; the limit is ${opts.maxBlocks}`, [
      { pointer: '/result/content', message: `at most ${opts.maxBlocks} blocks` },
    ]);
  }
  if ((req.evidence?.length ?? 0) > opts.maxEvidence) {
    throw new TrustgateError('TG_ERR_LIMIT_EVIDENCE', `evidence holds ${req.evidence!.length} entries; the limit is ${opts.maxEvidence}`, [
      { pointer: '/evidence', message: `at most ${opts.maxEvidence} entries` },
    ]);
  }
  // No string parsed from a text is longer than the text: short bodies need no walk.
  if (opts.maxString !== undefined && !(opts.scan !== undefined && opts.scan.textLength <= opts.maxString)) {
    checkStringLengths(req, opts.maxString);
  }
  return { result, revision, blocks };
}

/** What the assessment leaves: the trust view, the case-fold collisions, the validation findings. */
interface Assessed {
  trust: TrustAssessment;
  collisions: ReturnType<typeof findCasefoldCollisions>;
  validation: ValidationFinding[];
  validationOmitted: number;
}

/** Stage 2: claims read with union semantics and evidence verified (trust/assess.ts), then the validation findings. */
function assess(req: EvaluateRequest, opts: DecideOptions, { result, revision }: Checked): Assessed {
  const trust = withOperatorLabels(assessTrust(result, evidenceEntries(req, opts), opts.dialects), opts.operator);
  const collisions = findCasefoldCollisions(result);
  const { validation, omitted } = resultFindings(result, revision, trust.findings, opts.maxValidationFindings, collisions.list);
  return { trust, collisions, validation, validationOmitted: omitted };
}

/** The operator's labels for the server, joined to the claims the result carries (labels only go up). */
function withOperatorLabels(trust: TrustAssessment, op: DecideOptions['operator']): TrustAssessment {
  const labels = op?.entry.labels;
  if (labels === undefined || (labels.sensitive !== true && labels.untrusted !== true)) return trust;
  const source = operatorSource(op!.server);
  return raiseTrust(trust, { result: { sensitive: labels.sensitive === true ? [source] : [], untrusted: labels.untrusted === true ? [source] : [] }, blocks: new Map() });
}

/** What the policy passes leave: the matches in policy order, what label rules raised, and the trust view they raised. */
interface Passes {
  matches: Match[];
  raises: LabelRaises;
  trust: TrustAssessment;
}

/**
 * Stage 3: the policies. Label rules first, over the claims the result
 * carries, in one order-free pass; the other rules read what they raised
 * (docs/behaviour/labels-and-detectors.md).
 */
function evaluate(req: EvaluateRequest, opts: DecideOptions, { result, blocks }: Checked, assessed: Assessed, detection: DetectionCache, trace: TraceEntry[] | undefined): Passes {
  const withText = opts.policies.index.readsText;
  const blockTexts = withText ? blocks.map(blockText) : undefined;
  // result.text: every string the host will see (docs/behaviour/labels-and-detectors.md#content-as-a-policy-input): the
  // blocks' texts first (consecutive blocks are also read across their seams), then each block's other strings, the
  // envelope's other members (its `_meta` but the trust claim), structuredContent's member names and values.
  let resultText: JoinedText | undefined;
  if (blockTexts !== undefined) {
    const parts = blockTexts.slice();
    // The blocks' other strings and structuredContent's member names are short and many: each is one part, read at
    // once (the text is the same, joined with newlines; masking reads each string again only when a mask applies).
    const other: string[] = [];
    // The places in `other` of each block's own strings, shown one beside the other (a link's name and description):
    // a value split between two of them is read across their seam too.
    const sideBySide: number[][] = [];
    for (const b of blocks) {
      const shown: number[] = [];
      otherStrings(b, other, shown);
      if (shown.length > 1) sideBySide.push(shown);
    }
    envelopeStrings(result, other);
    const structured = own(result, 'structuredContent');
    if (isRecord(structured) || Array.isArray(structured)) memberNames(structured, other);
    if (other.length > 0) parts.push(detection.joinShown(other, sideBySide));
    const firstStructured = parts.length;
    // A value split over three or more parts is read whole among the blocks' texts (their first parts).
    // The string is made only if a rule reads it other than through secrets() or pii() (fast.ts, values.ts).
    resultText = detection.joinLazily(stringsOf(structured, parts, false, true), blockTexts.length);
    // And as the JSON they are sent as, names beside their values: `{"password": "..."}` names a value no string shows.
    for (const v of namedStructures(result, blocks)) detection.readStructure(v, resultText);
    // The blocks' last text and structuredContent's first string, shown one after the other by a host that shows both.
    const lastText = blockTexts.findLast((t) => t.length > 0);
    if (lastText !== undefined && firstStructured < parts.length) detection.seamBetween(lastText, parts[firstStructured]!);
  }
  const validation = assessed.validation.map((v) => ({ rule: v.rule, severity: v.severity, pointer: v.pointer }));
  // What the result (or the operator, for its server) claims, not what a detector or a label rule found.
  const claimed = {
    sensitive: assessed.trust.claimedSensitive || opts.operator?.entry.labels?.sensitive === true,
    untrusted: assessed.trust.labels.untrusted === true,
  };
  const inputOf = (t: TrustAssessment) => ({
    result: {
      sensitive: t.labels.sensitive === true,
      untrusted: t.labels.untrusted === true,
      isError: own(result, 'isError') === true,
      blockCount: blocks.length,
      asserted: t.result.asserted,
      claimed: claimed,
      structured:
        own(result, 'structuredContent') === undefined
          ? { sensitive: false, untrusted: false }
          : { sensitive: t.structured.sensitive === true, untrusted: t.structured.untrusted === true },
      // The joined text, made when a rule reads it as a string (fast.ts, values.ts); secrets() and pii() read its parts.
      ...(resultText !== undefined ? { text: resultText } : {}),
    },
    tool: req.tool,
    // Without an operator entry the variables compute the same hints themselves (and keep them per frozen definition).
    toolMembers: opts.operator === undefined ? undefined : hintViews(req.tool, opts.operator.entry, undefined),
    server: req.server,
    context: req.context,
    validation,
    resultScope: { evidence: t.result.evidence, dataClass: t.result.dataClass },
    blocks: t.blocks.map((b) => {
      const block = blockVar(blocks[b.index], b);
      if (blockTexts !== undefined) block.text = blockTexts[b.index];
      return { index: b.index, pointer: `/content/${b.index}`, block, evidence: b.evidence, dataClass: b.dataClass };
    }),
    session: opts.session,
    principal: opts.principal,
    call: opts.call,
  });

  const rules = opts.policies.index.rules;
  const raises = noRaises();
  const labelRules = opts.policies.index.labelRules;
  let trust = assessed.trust;
  const matches: Match[] = withDetection(detection, () => {
    // When the label rules raise nothing the other rules see the same variables: one input, converted once.
    let acts: Activations | undefined;
    let first: Match[] = [];
    if (labelRules) {
      acts = activationsOf(inputOf(trust));
      first = evaluatePolicies(opts.policies, acts.input, opts.modeOverride, opts.budget, trace, 'label', acts);
    }
    for (const m of first) {
      const labels = rules.get(ruleKey(m.policy, m.rule))?.labels;
      if (m.mode === 'enforce' && labels !== undefined) addRaise(raises, labels, m.policy, m.rule, m.scope === 'block' ? m.blockIndex : undefined);
    }
    const before = trust;
    trust = raiseTrust(trust, raises);
    const input = acts !== undefined && trust === before ? acts.input : inputOf(trust);
    const rest = evaluatePolicies(opts.policies, input, opts.modeOverride, opts.budget, trace, labelRules ? 'rest' : undefined, acts);
    return first.length === 0 ? rest : inPolicyOrder(rules, first.concat(rest));
  });
  return { matches, raises, trust };
}

/** Stage 4: the matches folded to findings and an outcome, and the effects they plan. */
function planEffects(set: PolicySet, matches: Match[], blockCount: number): ReturnType<typeof foldMatches> & { plan: EffectPlan } {
  const rules = set.index.rules;
  const plan = emptyPlan();
  const allIndexes = Array.from({ length: blockCount }, (_, i) => i);
  const folded = foldMatches(matches, (m) => {
    if (m.effect === 'mask') {
      const kinds = rules.get(ruleKey(m.policy, m.rule))?.maskKinds;
      if (kinds !== undefined) planMask(plan, { kinds, policy: m.policy, rule: m.rule }, m.scope === 'block' ? m.blockIndex : undefined);
    } else planEffect(plan, m.effect, m.policy, m.rule, m.scope === 'result' ? allIndexes : [m.blockIndex!], m.scope === 'result');
  });
  return { ...folded, plan };
}

/** Stage 5: the result to forward, built from what was judged (forward.ts); what it forwarded is handed to the session merge. */
function forwardResult(opts: DecideOptions, { result, revision }: Checked, assessed: Assessed, { trust, raises }: Passes, plan: EffectPlan, detection: DetectionCache): Forwarded {
  const out = forward({
    result,
    revision,
    plan,
    collisions: assessed.collisions.root,
    boundary: opts.boundary,
    maxWithheld: opts.maxValidationFindings ?? Infinity,
    blockFlags: (i) => trust.blocks[i],
    detection,
    raises,
  });
  if (opts.flow) {
    const values = opts.maxFlowValues === undefined ? undefined : { result, max: opts.maxFlowValues, until: deadlineOf(opts.budget) };
    opts.flow.forwarded = forwardedFlow(trust, out.actions, out.result, own(result, 'structuredContent') !== undefined, values);
  }
  return out;
}

/** Stage 6: the answer, its lists bounded by the request (bound.ts). */
function answer(
  req: EvaluateRequest,
  opts: DecideOptions,
  s: { checked: Checked; assessed: Assessed; passes: Passes; planned: ReturnType<typeof planEffects>; out: Forwarded | undefined; explain: boolean; trace: TraceEntry[] | undefined },
): Decision {
  const { result, revision } = s.checked;
  const { trust, raises } = s.passes;
  const { findings, outcome, requiresConsent } = s.planned;
  const out = s.out;
  const actions = out?.actions ?? new Map<number, BlockAction>();
  const maskedBlocks = out?.maskedBlocks ?? new Set<number>();
  const labelled = (i: number): boolean => {
    const r = blockRaised(raises, i);
    return r.sensitive.length > 0 || r.untrusted.length > 0;
  };
  const decision: Decision = {
    decisionId: opts.decisionId,
    outcome,
    modified: out?.modified ?? false,
    requiresConsent,
    policyRevision: opts.policies.revision,
    protocolVersion: revision,
    labels: trust.labels,
    ...(isRecord(req.tool) ? { tool: hintViews(req.tool, opts.operator?.entry, undefined) } : {}),
    blocks: trust.blocks.map((t) => {
      const a = actions.get(t.index);
      const list: BlockActionOut[] = [];
      if (labelled(t.index)) list.push('label');
      if (maskedBlocks.has(t.index)) list.push('mask');
      if (a) list.push(a);
      const b: BlockOut = { index: t.index, type: t.type, sensitive: t.sensitive, untrusted: t.untrusted, actions: list };
      if (s.explain) b.sources = t.sources;
      return b;
    }),
    evidence: trust.evidence.map((o) => {
      const e: EvidenceOut = { pointer: o.pointer, type: o.type, canonicalization: o.canonicalization, status: o.status };
      if (o.expected !== undefined) e.expected = o.expected;
      if (o.derived !== undefined) e.derived = o.derived;
      if (o.message !== undefined) e.message = o.message;
      return e;
    }),
    findings,
    validation: s.assessed.validation,
    withheld: out?.withheld ?? [],
    masked: out?.masked ?? [],
  };
  if ((out?.maskedOmitted ?? 0) > 0) decision.maskedOmitted = out!.maskedOmitted;
  if (s.assessed.validationOmitted > 0) decision.validationOmitted = s.assessed.validationOmitted;
  if ((out?.omitted ?? 0) > 0) decision.withheldOmitted = out!.omitted;
  if (s.trace !== undefined) decision.trace = s.trace;
  boundDecision(decision, opts.maxFindings, opts.answerBudget);
  if (s.explain) decision.labelSources = trust.result.sources;
  if (own(result, 'structuredContent') !== undefined) decision.structuredContent = trust.structured;
  if (out !== undefined) {
    // The host already holds an unchanged result; sending it back is optional.
    if (!out.modified && req.options?.omitUnmodifiedResult === true && opts.resultRepeatsNames?.() === false) decision.resultOmitted = true;
    else decision.result = out.result;
  }
  return decision;
}

/** Matches of both passes back in policy, rule and block order (the sort is stable). */
function inPolicyOrder(rules: ReadonlyMap<string, { ordinal: number }>, matches: Match[]): Match[] {
  return matches.sort((a, b) => rules.get(ruleKey(a.policy, a.rule))!.ordinal - rules.get(ruleKey(b.policy, b.rule))!.ordinal);
}
