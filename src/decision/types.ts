/**
 * The wire types the decision core takes and answers, by the names the core
 * uses (docs/behaviour/decisions.md, docs/behaviour/sessions.md). Each is
 * derived from its schema in src/wire/; nothing here restates one.
 */
import type { blockOutcome, Decision, EvaluateRequest } from '../wire/evaluate.js';
import type { CallDecision, EvaluateCallRequest } from '../wire/evaluate-call.js';
import type { FromWire, ValidateAnswer, ValidateRequest, WireShape } from '../wire/shared.js';

export type { CallDecision, Decision, EvaluateCallRequest, EvaluateRequest, ValidateAnswer, ValidateRequest };

/** One finding of an answer (the `Finding` schema). */
export type FindingOut = WireShape<'Finding'>;

/** One `blocks` entry of a decision. */
export type BlockOut = FromWire<typeof blockOutcome>;

/** One `evidence` outcome of an answer (the `EvidenceOutcome` schema). */
export type EvidenceOut = WireShape<'EvidenceOutcome'>;

export type Outcome = Decision['outcome'];

/** A session as answers show it (the `Session` schema): the state plus its id; `dataClass` is `{}` while no verified class was forwarded. */
export type SessionView = WireShape<'Session'>;

