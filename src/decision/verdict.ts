/**
 * What every binding renders (docs/architecture.md, "The path of a
 * decision"): a decision becomes one verdict, computed here once,
 *
 * - `pass`: nothing withheld and nothing changed; the binding forwards the
 *   original (or, for a result, the judged copy, which equals it);
 * - `replace`: the result as judged differs from what came, and is what
 *   must be forwarded;
 * - `withhold`: the call or result must not reach its reader: denied, or
 *   it needs a consent that cannot be asked or was not given; `text` is
 *   what the reader is told instead (docs/behaviour/decisions.md);
 * - `ask`: it needs the user's consent and the binding can ask: `question`
 *   is asked, and a refusal becomes `declined(...)`'s withhold;
 * - `unchecked`: no decision could be made (a bad request, a store that
 *   cannot be reached, an internal error): fail closed, the one way every
 *   binding says "could not decide" (Envoy's CheckStatus `Error`);
 *   `uncheckedVerdict(...)` makes it.
 *
 * The texts name the policies, the rules and the decision id; they never
 * quote the content that was judged. A binding turns the verdict into its
 * own wire format (an empty body, an `isError` CallToolResult, a validator
 * answer, a JSON-RPC reply) and nothing else.
 */
import { ERRORS, TrustgateError } from '../errors.js';
import { SessionStoreFull, SessionStoreUnavailable } from '../session/store.js';
import type { FindingOut, Outcome } from './types.js';

/** What was judged: a tool call, a tool result, or another message the server sent (the proxy). */
export type Subject =
  | { kind: 'call' | 'result'; name: string; /** The operator's name for the server, when the binding knows it. */ server?: string; /** A call's argument names. */ args?: readonly string[] }
  | { kind: 'message'; method: string; name: string; server?: string };

/** Why a call or a result was withheld, as the proxy's log line says it. */
export type Withheld = 'call-denied' | 'call-consent' | 'call-declined' | 'result-denied' | 'result-consent' | 'result-declined' | 'message-denied' | 'message-consent' | 'message-declined';

/** What a verdict is computed from: a result or a call decision. */
export interface Decided {
  decisionId: string;
  outcome: Outcome;
  requiresConsent: boolean;
  findings: FindingOut[];
  /** A result decision's: whether the result as judged differs from what came. */
  modified?: boolean;
  /** A result decision's: the result as judged (absent on deny). */
  result?: Record<string, unknown>;
}

export type Verdict =
  | { kind: 'pass'; result?: Record<string, unknown> | undefined }
  | { kind: 'replace'; result: Record<string, unknown> }
  | Withhold
  | { kind: 'ask'; question: string }
  | Unchecked;

/** No decision could be made; what is judged never passes. */
export interface Unchecked {
  kind: 'unchecked';
  /** The error's registered code (docs/errors.md), e.g. `TG_ERR_SESSION_STORE_UNAVAILABLE`. */
  code: string;
  /** What went wrong, content-free. */
  detail: string;
  /** The request was at fault (a 4xx code), not the service: JSON-RPC bindings answer -32602 rather than -32603. */
  requestFault: boolean;
  /** What the reader is told instead of the call, result or message. */
  text: string;
}

export interface Withhold {
  kind: 'withhold';
  withheld: Withheld;
  /** What the reader is told instead. */
  text: string;
}

/** Whether the binding can ask the user for a consent, and when not, why (said in the withheld text). */
export type Consent = { ask: true } | { ask: false; why: string };

/**
 * The verdict of a decision. `reparse`: the request text repeats a member
 * name, so JSON parsers may disagree on which copy wins: the original
 * bytes never pass, the result as judged replaces them.
 */
export function verdictOf(d: Decided, subject: Subject, consent: { ask: false; why: string }, reparse?: boolean): Exclude<Verdict, { kind: 'ask' } | Unchecked>;
export function verdictOf(d: Decided, subject: Subject, consent: Consent, reparse?: boolean): Exclude<Verdict, Unchecked>;
export function verdictOf(d: Decided, subject: Subject, consent: Consent, reparse = false): Exclude<Verdict, Unchecked> {
  if (d.outcome === 'deny') return withhold(d, subject, 'denied');
  if (d.requiresConsent) {
    if (!consent.ask) return withhold(d, subject, 'consent', consent.why);
    return { kind: 'ask', question: consentQuestion(subject, d.findings) };
  }
  if ((d.modified === true || reparse) && d.result !== undefined) return { kind: 'replace', result: d.result };
  return { kind: 'pass', result: d.result };
}

/** The verdict once the user did not give the consent an `ask` verdict asked for. */
export function declined(d: Decided, subject: Subject): Withhold {
  return withhold(d, subject, 'declined');
}

function withhold(d: Decided, subject: Subject, cause: 'denied' | 'consent' | 'declined', why = ''): Withhold {
  return { kind: 'withhold', withheld: `${subject.kind}-${cause}`, text: withheldText(subject, cause, d.findings, d.decisionId, why) };
}

/** `policy/rule` of the applied findings with this effect, each once. */
export function rulesOf(findings: readonly FindingOut[], effect: string): string {
  const names = findings.filter((f) => f.applied && f.effect === effect).map((f) => `${f.policy}/${f.rule}`);
  return [...new Set(names)].join(', ') || 'a policy';
}

/** Most characters of a name a consent question quotes. */
export const QUOTED_NAME_MAX = 128;

/**
 * A name the server chose (a tool, a prompt, a resource) as a consent
 * question quotes it to the user: clipped to QUOTED_NAME_MAX characters
 * (whole code points; `…` after the closing quote says it was cut) and
 * JSON-escaped, with line and paragraph separators, every control and
 * format character (bidirectional overrides, zero-width ones) and every
 * other character drawn as nothing (variation selectors, fillers) escaped
 * as `\uXXXX` too, so the name can neither close its quotes, start a line
 * of its own, reorder the question around it, nor hide a part of itself.
 */
export function quotedName(name: string): string {
  const points = Array.from(name);
  const clipped = points.length > QUOTED_NAME_MAX ? points.slice(0, QUOTED_NAME_MAX).join('') : name;
  const quoted = JSON.stringify(clipped).replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/gu, (c) => escapeUnits(c));
  return points.length > QUOTED_NAME_MAX ? `${quoted}…` : quoted;
}

/** `\uXXXX` for every UTF-16 code unit of `c` (an astral format character takes two). */
function escapeUnits(c: string): string {
  let out = '';
  for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}

/** Most argument names a consent question lists. */
const QUOTED_ARGS_MAX = 8;

function onServer(server: string | undefined): string {
  return server ? ` of the server ${quotedName(server)}` : '';
}

/** The argument names of a call as a question lists them (the findings say which values made it ask). */
function withArgs(args: readonly string[] | undefined): string {
  if (args === undefined || args.length === 0) return '';
  const shown = args.slice(0, QUOTED_ARGS_MAX).map(quotedName).join(', ');
  return `, called with ${shown}${args.length > QUOTED_ARGS_MAX ? ` and ${args.length - QUOTED_ARGS_MAX} more` : ''},`;
}

/** Why a decision asks for consent: each applied consent finding's policy, rule and message. */
export function consentReasons(findings: readonly FindingOut[]): string {
  return findings
    .filter((f) => f.applied && f.effect === 'consent')
    .map((f) => `${f.policy}/${f.rule}: ${f.message}`)
    .join('; ');
}

/** The question a binding asks the user before a call runs, or before a result or message is passed on, when a policy asks for consent. */
export function consentQuestion(subject: Subject, findings: readonly FindingOut[]): string {
  const why = consentReasons(findings);
  switch (subject.kind) {
    case 'call':
      return `The tool ${quotedName(subject.name)}${onServer(subject.server)}${withArgs(subject.args)} needs your consent before it runs (${why}). Run it?`;
    case 'result':
      return `The result of the tool ${quotedName(subject.name)}${onServer(subject.server)} needs your consent before it is passed on (${why}). Pass it on?`;
    case 'message':
      return `What the server${subject.server ? ` ${quotedName(subject.server)}` : ''} sent for ${subject.method} ${quotedName(subject.name)} needs your consent before it is passed on (${why}). Pass it on?`;
  }
}

/** The text a reader gets for a withheld call, result or message. */
function withheldText(subject: Subject, cause: 'denied' | 'consent' | 'declined', findings: readonly FindingOut[], decisionId: string, why: string): string {
  if (subject.kind === 'message') {
    // Not asked and refused read the same: the message is not a tool call whose user waits on it.
    const how = cause === 'denied' ? `denied by ${rulesOf(findings, 'deny')}` : `it needs the consent of the user, who was not asked or did not give it: ${rulesOf(findings, 'consent')}`;
    return `Trustgate withheld what the server sent for ${subject.method}: ${how} (decision ${decisionId}).`;
  }
  const consent = rulesOf(findings, 'consent');
  if (subject.kind === 'call') {
    if (cause === 'denied') return `Trustgate denied this tool call: ${rulesOf(findings, 'deny')} (decision ${decisionId}).`;
    if (cause === 'consent') return `Trustgate denied this tool call: it needs the user's consent (${consent}), which ${why || 'could not be asked'} (decision ${decisionId}).`;
    return `Trustgate did not run this tool call: the user did not consent (${consent}, decision ${decisionId}).`;
  }
  if (cause === 'denied') return `Trustgate withheld this tool result: denied by ${rulesOf(findings, 'deny')} (decision ${decisionId}).`;
  if (cause === 'consent') return `Trustgate withheld this tool result: it needs the user's consent (${consent}), which ${why || 'could not be asked'} (decision ${decisionId}).`;
  return `Trustgate withheld this tool result: the user did not consent (${consent}, decision ${decisionId}).`;
}

/** An `isError` CallToolResult carrying one text block: how a withheld call or result reads to an MCP host. */
export function isErrorResult(text: string): { content: Array<{ type: 'text'; text: string }>; isError: true } {
  return { content: [{ type: 'text', text }], isError: true };
}

/**
 * The verdict when no decision could be made about `subject`: from the
 * error the core threw, or from a binding's own `{ code, detail }` (a body
 * too large, policies that did not load). The text says why and never
 * quotes the content.
 */
export function uncheckedVerdict(subject: Subject, cause: unknown): Unchecked {
  const { code, detail } = isCause(cause) ? cause : errorCause(cause);
  const status = ERRORS[code as keyof typeof ERRORS]?.status ?? 500;
  const why = `${detail} (${code})`;
  const text =
    subject.kind === 'message'
      ? `Trustgate could not check what the server sent for ${subject.method}, so it is withheld: ${why}.`
      : `Trustgate could not check this tool ${subject.kind}, so it is withheld: ${why}.`;
  return { kind: 'unchecked', code, detail, requestFault: status < 500, text };
}

function isCause(c: unknown): c is { code: string; detail: string } {
  return typeof c === 'object' && c !== null && !(c instanceof Error) && typeof (c as { code?: unknown }).code === 'string' && typeof (c as { detail?: unknown }).detail === 'string';
}

/** The registered code and a content-free description of an error of the core. */
function errorCause(err: unknown): { code: string; detail: string } {
  if (err instanceof TrustgateError) return { code: err.code, detail: err.message };
  if (err instanceof SessionStoreFull) return { code: 'TG_ERR_SESSION_STORE_FULL', detail: 'the session store is full: no new session until one ends or expires' };
  if (err instanceof SessionStoreUnavailable) return { code: 'TG_ERR_SESSION_STORE_UNAVAILABLE', detail: 'the session store is unavailable' };
  return { code: 'TG_ERR_SERVER_INTERNAL', detail: 'internal error' };
}

/** A short, content-free description of an error of the core, for log lines: `detail (code)`. */
export function errorDetail(err: unknown): string {
  const { code, detail } = errorCause(err);
  return `${detail} (${code})`;
}
