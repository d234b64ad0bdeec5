/**
 * The JSON text of an answer. An unchanged result, and the unchanged blocks
 * of a changed one, are copied from the request text where the pre-parse
 * scan located them, instead of being serialized a second time: the same
 * JSON values (parsing the copied text gives exactly what the pipeline
 * judged), at about half the cost of serializing a typical decision.
 *
 * The copy is used only when the text cannot mean something other than the
 * parsed value: never when a member name repeats (JSON.parse keeps one copy
 * of several), an integer literal is outside ±(2^53-1) (JSON.parse rounds
 * it) or a number literal overflows or is a negative zero. Then, and
 * whenever a span is missing, JSON.stringify answers. Other spellings
 * (whitespace, `\u` escapes, `1.0` for `1`) parse to the same values.
 */
import type { JsonScan } from '../json/scan.js';
import { own } from '../model.js';
import type { Decision } from './pipeline.js';

/**
 * True when the scan's spans may stand for the parsed value: no repeated
 * member name, every number written back as itself, and no lone surrogate
 * in the text (text decoded from bytes never has one; it would be written
 * out as U+FFFD where JSON.stringify writes an escape).
 */
function spansUsable(scan: JsonScan | undefined): scan is JsonScan {
  return (
    scan !== undefined &&
    scan.duplicateKeys.length === 0 &&
    scan.unsafeIntegers.length === 0 &&
    scan.spans.numbersExact &&
    (scan.spans.text as string & { isWellFormed(): boolean }).isWellFormed()
  );
}

/**
 * JSON text of `out`, the result to forward, given `input`, the result as
 * parsed from the scanned text. Members and blocks that are the very
 * objects of the input come from the text; everything else (a fenced block,
 * a placeholder) is serialized. `undefined` when the text cannot be used.
 */
export function resultJson(out: Record<string, unknown>, input: unknown, scan: JsonScan | undefined): string | undefined {
  if (!spansUsable(scan)) return undefined;
  const { text, resultStart, resultEnd, blocks } = scan.spans;
  if (out === input) return resultStart >= 0 ? text.slice(resultStart, resultEnd) : undefined;
  const inContent = typeof input === 'object' && input !== null ? own(input as Record<string, unknown>, 'content') : undefined;
  const outContent = own(out, 'content');
  if (!Array.isArray(inContent) || !Array.isArray(outContent)) return undefined;
  // Each input block the scan located, by identity: effects keep untouched blocks as they are.
  const located = new Map<unknown, number>();
  for (let k = 0; k < inContent.length && 2 * k + 1 < blocks.length; k++) {
    if (blocks[2 * k]! >= 0) located.set(inContent[k], k);
  }
  let json = '{';
  for (const key of Object.keys(out)) {
    const value = out[key];
    if (value === undefined) continue;
    if (json.length > 1) json += ',';
    json += JSON.stringify(key) + ':';
    if (value !== outContent) {
      json += JSON.stringify(value);
      continue;
    }
    json += '[';
    for (let i = 0; i < outContent.length; i++) {
      if (i > 0) json += ',';
      const block: unknown = outContent[i];
      const k = located.get(block);
      json += k === undefined ? (JSON.stringify(block) ?? 'null') : text.slice(blocks[2 * k], blocks[2 * k + 1]);
    }
    json += ']';
  }
  return json + '}';
}

/**
 * JSON text of a decision of /v1/evaluate, `input` being the request's
 * `result` as parsed. `result` is the decision's last member, so the rest is
 * serialized without it and the result's text appended.
 */
export function decisionJson(decision: Decision, input: unknown, scan: JsonScan | undefined): string {
  const result = decision.result;
  const text = result === undefined ? undefined : resultJson(result, input, scan);
  if (text === undefined) return JSON.stringify(decision);
  const head = JSON.stringify({ ...decision, result: undefined });
  return `${head.slice(0, -1)},"result":${text}}`;
}
