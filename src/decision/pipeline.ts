/**
 * One decision, left to right: request checks → validation → trust
 * assessment (claims, evidence, data class) → policies → effects → answer.
 * Pure apart from what is passed in (decision id, spotlight boundary), so the
 * same request and policy set always give the same decision.
 */
import { assessTrust, type TrustAssessment } from '../evidence/assess.js';
import type { EvidenceEntry } from '../evidence/verify.js';
import { TrustgateError } from '../errors.js';
import type { JsonScan } from '../json/scan.js';
import { atLeast, isObject, own, pointer, type Effect, type Mode, type Revision, type Scope, type Tri, type ValidationFinding } from '../model.js';
import { evaluatePolicies, type EvaluationBudget, type Match, type SessionVar } from '../policy/evaluate.js';
import { forwardedFlow, type ForwardedFlow } from './flow.js';
import type { PolicySet } from '../policy/load.js';
import { applyEffects, emptyPlan, planEffect, type BlockAction } from '../policy/effects.js';
import { checkStringLengths } from './limits.js';
import { checkResultDepth, MAX_RESULT_DEPTH, resolveRevision, resultFindings } from './validate.js';

export interface EvaluateRequest {
  result: Record<string, unknown>;
  protocolVersion?: string;
  tool?: Record<string, unknown>;
  server?: Record<string, unknown>;
  context?: Record<string, unknown>;
  evidence?: Array<{ digest?: string; ref?: string; record?: unknown }>;
  options?: { omitUnmodifiedResult?: boolean; explain?: boolean };
}

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
  /** The `session` variable (what the session was shown before this request); no session when absent. */
  session?: SessionVar | undefined;
  /** When given, receives what the decision forwarded (left unset on deny), for the session to take in. */
  flow?: { forwarded?: ForwardedFlow };
}

export interface FindingOut {
  policy: string;
  rule: string;
  mode: Mode;
  effect: Effect;
  scope: Scope;
  pointer: string;
  message: string;
  applied: boolean;
  error?: string;
}

export interface BlockOut {
  index: number;
  type: string;
  sensitive: Tri;
  untrusted: Tri;
  actions: BlockAction[];
  /** With `options.explain`: the claims behind each flag. */
  sources?: { sensitive: string[]; untrusted: string[] };
}

export interface EvidenceOut {
  pointer: string;
  type: string | null;
  canonicalization: string | null;
  status: string;
  expected?: string;
  derived?: string;
  message?: string;
}

export type Outcome = 'allow' | 'warn' | 'deny';

/** The 200 answer of /v1/evaluate (contract section 3). */
export interface Decision {
  decisionId: string;
  outcome: Outcome;
  modified: boolean;
  requiresConsent: boolean;
  policyRevision: string;
  protocolVersion: Revision;
  labels: { sensitive: Tri; untrusted: Tri };
  /** With `options.explain`: the claims behind each label. */
  labelSources?: { sensitive: string[]; untrusted: string[] };
  /** Flags of `structuredContent` (the result-level claim governs it); present when the result has one. */
  structuredContent?: { sensitive: Tri; untrusted: Tri };
  blocks: BlockOut[];
  evidence: EvidenceOut[];
  findings: FindingOut[];
  validation: ValidationFinding[];
  /** How many validation findings were left out past TRUSTGATE_MAX_VALIDATION_FINDINGS; present when some were. */
  validationOmitted?: number;
  result?: Record<string, unknown>;
  /** True when the caller asked to leave out a result that nothing changed (`options.omitUnmodifiedResult`). */
  resultOmitted?: boolean;
}

function blockVar(block: unknown, t: TrustAssessment['blocks'][number]): Record<string, unknown> {
  const v: Record<string, unknown> = {
    index: t.index,
    type: t.type,
    sensitive: t.sensitive === true,
    untrusted: t.untrusted === true,
    asserted: t.asserted,
    audience: [],
  };
  if (!isObject(block)) return v;
  const ann = own(block, 'annotations');
  if (isObject(ann)) {
    const aud = own(ann, 'audience');
    if (Array.isArray(aud)) v.audience = aud.filter((a): a is string => typeof a === 'string');
    const pr = own(ann, 'priority');
    if (typeof pr === 'number' && Number.isFinite(pr)) v.priority = pr;
  }
  // Embedded resources carry uri and mimeType on the inner resource.
  const res = own(block, 'resource');
  const holder = t.type === 'resource' && isObject(res) ? res : block;
  const mime = own(holder, 'mimeType');
  if (typeof mime === 'string') v.mimeType = mime;
  const uri = own(holder, 'uri');
  if (typeof uri === 'string') v.uri = uri;
  return v;
}

/** Evidence entries with the I-JSON verdict of their request text. */
function evidenceEntries(req: EvaluateRequest, opts: DecideOptions): EvidenceEntry[] {
  const list = req.evidence ?? [];
  const base = opts.evidencePath ?? '/evidence';
  const scan = opts.scan;
  const bad = new Map<number, string>();
  if (scan && (scan.duplicateKeys.length > 0 || scan.unsafeIntegers.length > 0)) {
    const note = (pointers: string[], why: string) => {
      for (const p of pointers) {
        if (!p.startsWith(base + '/')) continue;
        const [idx, member] = p.slice(base.length + 1).split('/');
        if (member !== 'record') continue;
        const i = Number(idx);
        if (!bad.has(i)) bad.set(i, why);
      }
    };
    note(scan.duplicateKeys, 'record repeats a member name (not I-JSON)');
    note(scan.unsafeIntegers, 'record holds an integer literal outside -(2^53-1)..2^53-1 (not I-JSON)');
  }
  return list.map((e, i) => {
    const entry: EvidenceEntry = { digest: e.digest, ref: e.ref, record: e.record, hasRecord: Object.prototype.hasOwnProperty.call(e, 'record') };
    const why = bad.get(i);
    if (why !== undefined) entry.ijsonViolation = why;
    return entry;
  });
}

export function decide(req: EvaluateRequest, opts: DecideOptions): Decision {
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
  const trust = assessTrust(result, evidenceEntries(req, opts));
  const { validation, omitted } = resultFindings(result, revision, trust.findings, opts.maxValidationFindings);

  const matches: Match[] = evaluatePolicies(
    opts.policies,
    {
      result: {
        sensitive: trust.labels.sensitive === true,
        untrusted: trust.labels.untrusted === true,
        isError: own(result, 'isError') === true,
        blockCount: blocks.length,
        asserted: trust.result.asserted,
      },
      tool: req.tool,
      server: req.server,
      context: req.context,
      validation: validation.map((v) => ({ rule: v.rule, severity: v.severity, pointer: v.pointer })),
      resultScope: { evidence: trust.result.evidence, dataClass: trust.result.dataClass },
      blocks: trust.blocks.map((t) => ({
        index: t.index,
        pointer: `/content/${t.index}`,
        block: blockVar(blocks[t.index], t),
        evidence: t.evidence,
        dataClass: t.dataClass,
      })),
      session: opts.session,
    },
    opts.modeOverride,
    opts.budget,
  );

  let denied = false;
  let requiresConsent = false;
  let warned = false;
  const plan = emptyPlan();
  const allIndexes = blocks.map((_, i) => i);
  const findings: FindingOut[] = matches.map((m) => {
    const applied = m.mode === 'enforce';
    if (m.mode === 'warn') warned = true;
    if (applied) {
      if (m.effect === 'deny') denied = true;
      else if (m.effect === 'consent') requiresConsent = true;
      else planEffect(plan, m.effect, m.policy, m.rule, m.scope === 'result' ? allIndexes : [m.blockIndex!], m.scope === 'result');
    }
    const f: FindingOut = { policy: m.policy, rule: m.rule, mode: m.mode, effect: m.effect, scope: m.scope, pointer: m.pointer, message: m.message, applied };
    if (m.error !== undefined) f.error = m.error;
    return f;
  });

  const outcome: Outcome = denied ? 'deny' : warned || requiresConsent ? 'warn' : 'allow';
  let forwarded: Record<string, unknown> | undefined;
  let modified = false;
  let actions = new Map<number, BlockAction>();
  if (!denied) {
    const applied = applyEffects(result, plan, {
      boundary: opts.boundary,
      blockMeta: atLeast(revision, '2025-06-18'),
      ownClaims: (i) => trust.blocks[i]?.ownUnion ?? {},
    });
    forwarded = applied.result;
    modified = applied.modified;
    actions = applied.actions;
    if (opts.flow) opts.flow.forwarded = forwardedFlow(trust, actions, forwarded);
  }

  // Provenance of every flag is opt-in: on a typical result it is a third of the decision's text.
  const explain = req.options?.explain === true;
  const decision: Decision = {
    decisionId: opts.decisionId,
    outcome,
    modified,
    requiresConsent,
    policyRevision: opts.policies.revision,
    protocolVersion: revision,
    labels: trust.labels,
    blocks: trust.blocks.map((t) => {
      const a = actions.get(t.index);
      const b: BlockOut = { index: t.index, type: t.type, sensitive: t.sensitive, untrusted: t.untrusted, actions: a ? [a] : [] };
      if (explain) b.sources = t.sources;
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
    validation,
  };
  if (omitted > 0) decision.validationOmitted = omitted;
  if (explain) decision.labelSources = trust.result.sources;
  if (own(result, 'structuredContent') !== undefined) decision.structuredContent = trust.structured;
  if (forwarded !== undefined) {
    // The host already holds an unchanged result; sending it back is optional.
    if (!modified && req.options?.omitUnmodifiedResult === true && opts.resultRepeatsNames?.() === false) decision.resultOmitted = true;
    else decision.result = forwarded;
  }
  return decision;
}
