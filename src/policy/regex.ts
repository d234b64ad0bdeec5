/**
 * CEL `matches()` in linear time, with RE2 syntax as the CEL specification
 * defines it (re2js, a port of RE2).
 *
 * The CEL engine's own `matches()` runs JavaScript regular expressions,
 * which backtrack: `block.uri.matches("^(a+)+$")` takes 40 s on a 31
 * character uri, and a policy's pattern meets request data (block uris,
 * tool names, context). The CEL budget cannot stop a regular expression
 * that is running, so one such request would hold a worker for good.
 *
 * The engine's built-in overload is frozen, so `compileCel` rewrites each
 * `.matches(` of a `when` to `.re2find(` (a name of the same length, so
 * every position in the engine's error ranges still points into the
 * author's text) and registers `re2find`, defined here. Literal patterns are
 * compiled at load, where a pattern that is not RE2 syntax is a load error;
 * patterns read from data are compiled when met and cached.
 *
 * Compiling is not linear: a 64 KB pattern takes 200 to 400 ms and tens of
 * MB, so patterns are at most MAX_PATTERN characters (longer literal ones
 * are a load error, longer ones from data an evaluation error). Literal
 * patterns stay compiled for the life of the process; patterns from data
 * share a bounded cache, so no stream of them can push a policy's own
 * pattern out and make every decision compile it again.
 */
import { RE2JS } from 're2js';

/** The name `matches` is rewritten to: same length, so source positions do not move. */
export const RE2_FUNCTION = 're2find';

/** Longest pattern compiled, in UTF-16 code units. */
export const MAX_PATTERN = 1024;
const CACHE_SIZE = 64;
const cache = new Map<string, RE2JS>();
const literals = new Map<string, RE2JS>();

/** A pattern that is not RE2 syntax; `code` is what the policy adapter reports for a runtime error. */
export class RegexSyntaxError extends Error {
  override readonly name = 'RegexSyntaxError';
  readonly code = 'invalid_regular_expression';
}

function compile(pattern: string): RE2JS {
  if (pattern.length > MAX_PATTERN) throw new RegexSyntaxError(`longer than ${MAX_PATTERN} characters`);
  try {
    return RE2JS.compile(pattern);
  } catch (err) {
    // The library's message names the offending part of the pattern, which is the policy's (or the data's) own text.
    const why = err instanceof Error ? err.message : String(err);
    throw new RegexSyntaxError(`not an RE2 regular expression: ${why.replace(/^error parsing regexp: /, '')}`);
  }
}

/** Compile a policy's literal pattern at load and keep it. @throws RegexSyntaxError */
export function compileLiteralRe2(pattern: string): void {
  if (!literals.has(pattern)) literals.set(pattern, compile(pattern));
}

/** A pattern met at evaluation: a policy's own, or one from data (cached, bounded). @throws RegexSyntaxError */
function patternOf(pattern: string): RE2JS {
  let re = literals.get(pattern) ?? cache.get(pattern);
  if (re !== undefined) return re;
  re = compile(pattern);
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  cache.set(pattern, re);
  return re;
}

/** CEL `string.matches(string)`: true when the pattern matches some part of the string (RE2 semantics). */
export function re2find(text: string, pattern: string): boolean {
  return patternOf(pattern).matcher(text).find();
}
