/**
 * Words shared by the MCP bindings: what a host reads when Trustgate
 * withholds a call or a result (an `isError` CallToolResult naming the
 * policy, the rule and the decision id), and how an error of the core
 * becomes an MCP error. Never quotes the content that was judged.
 */
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { TrustgateError } from '../errors.js';
import type { FindingOut } from '../decision/types.js';
import { SessionStoreFull, SessionStoreUnavailable } from '../session/store.js';

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
 * JSON-escaped, with line and paragraph separators and every control and
 * format character (bidirectional overrides, zero-width ones) escaped as
 * `\uXXXX` too, so the name can neither close its quotes, start a line
 * of its own, nor reorder the question around it.
 */
export function quotedName(name: string): string {
  const points = Array.from(name);
  const clipped = points.length > QUOTED_NAME_MAX ? points.slice(0, QUOTED_NAME_MAX).join('') : name;
  const quoted = JSON.stringify(clipped).replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (c) => escapeUnits(c));
  return points.length > QUOTED_NAME_MAX ? `${quoted}…` : quoted;
}

/** `\uXXXX` for every UTF-16 code unit of `c` (an astral format character takes two). */
function escapeUnits(c: string): string {
  let out = '';
  for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}

/** Why a decision asks for consent: each applied consent finding's policy, rule and message. */
export function consentReasons(findings: readonly FindingOut[]): string {
  return findings
    .filter((f) => f.applied && f.effect === 'consent')
    .map((f) => `${f.policy}/${f.rule}: ${f.message}`)
    .join('; ');
}

/** The question a binding asks the user before a call runs, or before a result is passed on, when a policy asks for consent. */
export function consentQuestion(what: 'call' | 'result', name: string, findings: readonly FindingOut[]): string {
  const why = consentReasons(findings);
  return what === 'call'
    ? `The tool ${quotedName(name)} needs your consent before it runs (${why}). Run it?`
    : `The result of the tool ${quotedName(name)} needs your consent before it is passed on (${why}). Pass it on?`;
}

/** An `isError` CallToolResult carrying one text block. */
export function isErrorResult(text: string): { content: Array<{ type: 'text'; text: string }>; isError: true } {
  return { content: [{ type: 'text', text }], isError: true };
}

export type Withheld = 'call-denied' | 'call-consent' | 'call-declined' | 'result-denied' | 'result-consent' | 'result-declined';

/** The text of an `isError` answer for a decision that withholds a call or a result. */
export function withheldText(kind: Withheld, findings: readonly FindingOut[], decisionId: string, how = ''): string {
  switch (kind) {
    case 'call-denied':
      return `Trustgate denied this tool call: ${rulesOf(findings, 'deny')} (decision ${decisionId}).`;
    case 'call-consent':
      return `Trustgate denied this tool call: it needs the user's consent (${rulesOf(findings, 'consent')}), which ${how || 'could not be asked'} (decision ${decisionId}).`;
    case 'call-declined':
      return `Trustgate did not run this tool call: the user did not consent (${rulesOf(findings, 'consent')}, decision ${decisionId}).`;
    case 'result-denied':
      return `Trustgate withheld this tool result: denied by ${rulesOf(findings, 'deny')} (decision ${decisionId}).`;
    case 'result-consent':
      return `Trustgate withheld this tool result: it needs the user's consent (${rulesOf(findings, 'consent')}), which ${how || 'could not be asked'} (decision ${decisionId}).`;
    case 'result-declined':
      return `Trustgate withheld this tool result: the user did not consent (${rulesOf(findings, 'consent')}, decision ${decisionId}).`;
  }
}

/** The answer when a call or result could not be checked: fail closed, say why, never quote content. */
export function uncheckedText(what: 'call' | 'result', err: unknown): string {
  return `Trustgate could not check this tool ${what}, so it is withheld: ${errorDetail(err)}.`;
}

/** A short, content-free description of an error of the core. */
export function errorDetail(err: unknown): string {
  if (err instanceof TrustgateError) return `${err.message} (${err.code})`;
  if (err instanceof SessionStoreFull) return 'the session store is full: no new session until one ends or expires (TG_ERR_SESSION_STORE_FULL)';
  if (err instanceof SessionStoreUnavailable) return 'the session store is unavailable (TG_ERR_SESSION_STORE_UNAVAILABLE)';
  return 'internal error (TG_ERR_SERVER_INTERNAL)';
}

/** An error of the core as an MCP error: the caller's input (4xx) is -32602, anything else -32603. */
export function mcpErrorOf(err: unknown): McpError {
  if (err instanceof McpError) return err;
  if (err instanceof TrustgateError && err.status < 500) return new McpError(ErrorCode.InvalidParams, errorDetail(err));
  return new McpError(ErrorCode.InternalError, errorDetail(err));
}
