/**
 * The Docker MCP Gateway interceptor contract (docs/bindings/docker-gateway.md): what
 * to send back for a decision. The gateway parses any non-empty body as the
 * replacement CallToolResult and passes the original through on an empty
 * one, so there are exactly three answers: nothing, the transformed result,
 * or an `isError` result saying why it was withheld.
 */
import type { Decision } from '../../decision/types.js';
import { isErrorResult, uncheckedVerdict, verdictOf } from '../../decision/verdict.js';

/**
 * The frames `trustgate intercept`'s evaluating process writes to the
 * guard (see docker-exec.ts): `pass\n`, or `replace\n` and the JSON of
 * the replacement result.
 */
export const FRAME_PASS = 'pass\n';
export const FRAME_REPLACE = 'replace\n';

export type InterceptAnswer = { kind: 'pass' } | { kind: 'replace'; result: Record<string, unknown> };

/**
 * The decision's verdict (src/decision/verdict.ts) as the gateway reads it.
 * `reparse` is true when the request text repeats a member name somewhere:
 * JSON parsers disagree on which copy wins, so the original bytes are never
 * passed through; the gateway gets the result exactly as it was judged.
 */
export function interceptAnswer(decision: Decision, reparse = false): InterceptAnswer {
  const verdict = verdictOf(decision, { kind: 'result', name: '' }, { ask: false, why: 'the gateway cannot ask for' }, reparse);
  switch (verdict.kind) {
    case 'withhold':
      return { kind: 'replace', result: isErrorResult(verdict.text) };
    case 'replace':
      // Without a content array the result as judged is not a CallToolResult the gateway can use (an effect such
      // as a result-scope label changed it, or its text repeats a member name): answer why, never the original.
      if (!Array.isArray(verdict.result.content)) {
        return interceptError('TG_ERR_BODY_SCHEMA', reparse ? 'the result repeats a member name and has no content array' : 'the result has no content array, so the result as judged cannot replace it');
      }
      return { kind: 'replace', result: verdict.result };
    case 'pass':
      return { kind: 'pass' };
  }
}

/** The answer for a request that could not be checked (its unchecked verdict): fail closed, say why, never quote content. */
export function interceptError(code: string, detail: string): Extract<InterceptAnswer, { kind: 'replace' }> {
  return { kind: 'replace', result: isErrorResult(uncheckedVerdict({ kind: 'result', name: '' }, { code, detail }).text) };
}
