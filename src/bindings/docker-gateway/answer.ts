/**
 * The Docker MCP Gateway interceptor contract (docs/bindings/docker-gateway.md): what
 * to send back for a decision. The gateway parses any non-empty body as the
 * replacement CallToolResult and passes the original through on an empty
 * one, so there are exactly three answers: nothing, the transformed result,
 * or an `isError` result saying why it was withheld.
 */
import type { Decision } from '../../decision/types.js';

/**
 * The frames `trustgate intercept`'s evaluating process writes to the
 * guard (see docker-exec.ts): `pass\n`, or `replace\n` and the JSON of
 * the replacement result.
 */
export const FRAME_PASS = 'pass\n';
export const FRAME_REPLACE = 'replace\n';

export type InterceptAnswer = { kind: 'pass' } | { kind: 'replace'; result: Record<string, unknown> };

/** An `isError` CallToolResult carrying one text block. */
export function withheld(text: string): Record<string, unknown> {
  return { content: [{ type: 'text', text }], isError: true };
}

function rules(decision: Decision, effect: string): string {
  const names = decision.findings.filter((f) => f.applied && f.effect === effect).map((f) => `${f.policy}/${f.rule}`);
  return [...new Set(names)].join(', ');
}

/**
 * `reparse` is true when the request text repeats a member name somewhere:
 * JSON parsers disagree on which copy wins, so the original bytes are never
 * passed through; the gateway gets the result exactly as it was judged.
 */
export function interceptAnswer(decision: Decision, reparse = false): InterceptAnswer {
  if (decision.outcome === 'deny') {
    return {
      kind: 'replace',
      result: withheld(`Trustgate withheld this tool result: denied by ${rules(decision, 'deny')} (decision ${decision.decisionId}).`),
    };
  }
  if (decision.requiresConsent) {
    return {
      kind: 'replace',
      result: withheld(
        `Trustgate withheld this tool result: it needs the user's consent (${rules(decision, 'consent')}), which the gateway cannot ask for (decision ${decision.decisionId}).`,
      ),
    };
  }
  if ((decision.modified || reparse) && decision.result) {
    // Without a content array the result as judged is not a CallToolResult the gateway can use (an effect such
    // as a result-scope label changed it, or its text repeats a member name): answer why, never the original.
    if (!Array.isArray(decision.result.content)) {
      return interceptError('TG_ERR_BODY_SCHEMA', reparse ? 'the result repeats a member name and has no content array' : 'the result has no content array, so the result as judged cannot replace it');
    }
    return { kind: 'replace', result: decision.result };
  }
  return { kind: 'pass' };
}

/** The answer for a request that could not be checked: fail closed, say why, never quote content. */
export function interceptError(code: string, detail: string): Extract<InterceptAnswer, { kind: 'replace' }> {
  return { kind: 'replace', result: withheld(`Trustgate could not check this tool result, so it is withheld: ${detail} (${code}).`) };
}
