/**
 * The wire types of the decision core: what a binding hands in and what
 * the core answers (docs/behaviour/decisions.md, docs/behaviour/sessions.md).
 * Types only, so every stage of src/decision can import them without
 * importing another stage.
 */
import type { ToolHints } from '../mcp/hints.js';
import type { Effect, Mode, Scope } from '../policy/vocabulary.js';
import type { Revision } from '../mcp/revisions.js';
import type { Tri } from '../annotations/trust.js';
import type { ValidationFinding } from '../mcp/findings.js';
import type { TraceEntry } from '../policy/evaluate.js';
import type { BlockActionOut } from '../policy/effects.js';
import type { PinStatus, SessionState } from '../session/store.js';
import type { MaskedEntry } from './forward.js';

/** The body of POST /v1/evaluate apart from `session` (docs/behaviour/decisions.md). */
export interface EvaluateRequest {
  result: Record<string, unknown>;
  protocolVersion?: string;
  tool?: Record<string, unknown>;
  server?: Record<string, unknown>;
  context?: Record<string, unknown>;
  evidence?: Array<{ digest?: string; ref?: string; record?: unknown }>;
  options?: { omitUnmodifiedResult?: boolean; explain?: boolean };
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
  actions: BlockActionOut[];
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

/** The 200 answer of /v1/evaluate (docs/behaviour/decisions.md). */
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
  /** How many validation findings were left out past TRUSTGATE_MAX_VALIDATION_FINDINGS or the answer's size bound; present when some were. */
  validationOmitted?: number;
  /** How many findings were left out past TRUSTGATE_MAX_FINDINGS or the answer's size bound; present when some were. */
  findingsOmitted?: number;
  /** How many `evidence` outcomes were left out past the answer's size bound; present when some were. */
  evidenceOmitted?: number;
  /** How many `blocks` entries were left out past the answer's size bound; present when some were. */
  blocksOmitted?: number;
  result?: Record<string, unknown>;
  /**
   * RFC 6901 pointers into the request's result of what was withheld from
   * the forwarded result beyond whole blocks (docs/behaviour/forwarding.md, law 4);
   * empty when nothing was, and when the result is denied.
   */
  withheld: string[];
  /** Pointers left out of `withheld` past TRUSTGATE_MAX_VALIDATION_FINDINGS (what they name is still withheld); present when some were. */
  withheldOmitted?: number;
  /** Each string a `mask` rule changed, per kind (docs/behaviour/labels-and-detectors.md); empty when none was, and when the result is denied. */
  masked: MaskedEntry[];
  /** Entries left out of `masked` past TRUSTGATE_MAX_VALIDATION_FINDINGS or the answer's size bound (the spans are still masked); present when some were. */
  maskedOmitted?: number;
  /** True when the caller asked to leave out a result that nothing changed (`options.omitUnmodifiedResult`). */
  resultOmitted?: boolean;
  /** With `options.explain`: every rule evaluated on every scope instance, with its value (docs/policy-testing.md). */
  trace?: TraceEntry[];
  /** Trace entries left out by the answer's size bound (every rule keeps its first entry); present when some were. */
  traceOmitted?: number;
}

/** A session as answers show it: the state plus its id; `dataClass` is `{}` while no verified class was forwarded. */
export type SessionView = { id: string } & Omit<SessionState, 'dataClass'> & { dataClass: { class: string; regulatory: string[] } | Record<string, never> };

/** POST /v1/evaluate-call (docs/behaviour/sessions.md). */
export interface EvaluateCallRequest {
  call: { name: string; arguments?: Record<string, unknown> };
  /** The tool definition from tools/list. */
  tool?: Record<string, unknown>;
  server?: Record<string, unknown>;
  session?: { id: string };
  context?: Record<string, unknown>;
  /** `explain` adds `trace` (docs/policy-testing.md). */
  options?: { explain?: boolean };
}

/** The 200 answer of /v1/evaluate-call. */
export interface CallDecision {
  decisionId: string;
  outcome: Outcome;
  requiresConsent: boolean;
  policyRevision: string;
  findings: FindingOut[];
  tool: { hints: ToolHints; digest?: string; pin: PinStatus | 'none' | 'unlisted' };
  /** After this request; present when the request named a session. */
  session?: SessionView;
  /** With `options.explain`: every call rule evaluated, with its value. */
  trace?: TraceEntry[];
}


/** POST /v1/validate (docs/behaviour/validation.md): a result checked without policies. */
export interface ValidateRequest {
  result: Record<string, unknown>;
  protocolVersion?: string;
}

/** The 200 answer of /v1/validate. */
export interface ValidateAnswer {
  valid: boolean;
  protocolVersion: Revision;
  validation: ValidationFinding[];
  /** How many validation findings were left out past TRUSTGATE_MAX_VALIDATION_FINDINGS or the answer's size bound; present when some were. */
  validationOmitted?: number;
}
