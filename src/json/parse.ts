/**
 * Parse a request text: refuse hostile nesting before JSON.parse, and keep
 * what JSON.parse hides (repeated member names, numbers it rounds) so
 * evidence records can be judged as I-JSON. Shared by the HTTP layer and
 * the `trustgate intercept` command.
 */
import { TrustgateError } from '../errors.js';
import { scanJson, type JsonScan, type ScanFocus } from './scan.js';

/** Any body nesting deeper than this is a 400 (docs/behaviour/limits.md). */
export const MAX_BODY_DEPTH = 256;

/** `focus`: where repeated member names and unsafe integers matter (see scanJson); the whole body by default. */
export function parseRequestText(text: string, focus: ScanFocus = []): { value: unknown; scan: JsonScan } {
  const scan = scanJson(text, MAX_BODY_DEPTH, focus);
  if (scan.tooDeep) {
    throw new TrustgateError('TG_ERR_BODY_TOO_DEEP', `request body nests deeper than ${MAX_BODY_DEPTH} levels`);
  }
  try {
    return { value: JSON.parse(text), scan };
  } catch (err) {
    // V8's message can quote the input; keep only the position so no content reaches answers or logs.
    const at = err instanceof Error ? /position (\d+)/.exec(err.message) : null;
    const where = at ? ` (at position ${at[1]})` : /end of JSON/.test(String(err)) ? ' (unexpected end)' : '';
    throw new TrustgateError('TG_ERR_BODY_MALFORMED_JSON', `request body is not valid JSON${where}`);
  }
}
