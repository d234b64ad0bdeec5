/**
 * The one fold from matched rules to an outcome, shared by result, call
 * and tool decisions (docs/behaviour/decisions.md, "Outcome"): every match
 * becomes a finding with the mode it ran under; only enforce matches are
 * applied; the outcome is `deny` if an applied finding denies, else `warn`
 * if any finding ran in warn mode or consent is required, else `allow`.
 */
import type { Match } from '../policy/evaluate.js';
import type { FindingOut, Outcome } from './types.js';

/** What a list of matches decides. */
export interface Folded {
  findings: FindingOut[];
  outcome: Outcome;
  /** An applied finding has effect `deny`. */
  denied: boolean;
  /** An applied finding has effect `consent`. */
  requiresConsent: boolean;
}

/**
 * Fold `matches`, in order, into findings and an outcome. `apply` is called
 * with each applied match whose effect is neither deny nor consent (the
 * effects the decision carries out on what it forwards: mask, redact, drop,
 * spotlight, label, flag).
 */
export function foldMatches(matches: readonly Match[], apply?: (m: Match) => void): Folded {
  let denied = false;
  let requiresConsent = false;
  let warned = false;
  const findings: FindingOut[] = matches.map((m) => {
    const applied = m.mode === 'enforce';
    if (m.mode === 'warn') warned = true;
    if (applied) {
      if (m.effect === 'deny') denied = true;
      else if (m.effect === 'consent') requiresConsent = true;
      else apply?.(m);
    }
    const f: FindingOut = { policy: m.policy, rule: m.rule, mode: m.mode, effect: m.effect, scope: m.scope, pointer: m.pointer, message: m.message, applied };
    if (m.error !== undefined) f.error = m.error;
    return f;
  });
  return { findings, outcome: denied ? 'deny' : warned || requiresConsent ? 'warn' : 'allow', denied, requiresConsent };
}
