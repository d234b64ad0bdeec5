/**
 * A strict subset of RFC 9535 JSONPath: the singular queries that the fides
 * dialect uses as label keys (docs/behaviour/dialects.md). A singular query names
 * at most one node: the root `$` followed by child segments, each holding
 * exactly one name or index selector.
 *
 * Accepted, with no whitespace anywhere:
 *
 *     path      = "$" *segment
 *     segment   = "[" ( string / int ) "]" / "." shorthand
 *     string    = "'" *single-char "'" / '"' *double-char '"'   (RFC 9535 string-literal, its escapes)
 *     int       = "0" / ["-"] DIGIT1 *DIGIT                        (within -(2^53-1)..2^53-1, no "-0")
 *     shorthand = name-first *(name-first / DIGIT)                 (name-first: ALPHA, "_", non-ASCII)
 *
 * So `$`, `$['content'][0]`, `$["content"][0]`, `$.content[0]`,
 * `$.structuredContent.items[-1]['a\'b']` all parse; wildcards, descendant
 * segments (`..`), slices, filters, several selectors in one segment,
 * whitespace and paths not rooted at `$` do not. One pass over the text, no
 * regular expressions: keys are attacker-controlled.
 */

/** A parsed path: member names and array indexes (negative ones count from the end). */
export type PathSegments = Array<string | number>;

export type PathParse = { ok: true; segments: PathSegments } | { ok: false; message: string };

const DOLLAR = 0x24;
const DOT = 0x2e;
const OPEN = 0x5b;
const CLOSE = 0x5d;
const SQUOTE = 0x27;
const DQUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isAlpha = (c: number): boolean => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
/** RFC 9535 name-first over a code point (surrogates are not code points of a well-formed string). */
const isNameFirst = (cp: number): boolean => isAlpha(cp) || cp === 0x5f || (cp >= 0x80 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0x10ffff);

/** Parse one singular JSONPath. Never throws; linear in the length of `text`. */
export function parseSingularPath(text: string): PathParse {
  if (text.charCodeAt(0) !== DOLLAR) return fail('does not start with the root $');
  const segments: PathSegments = [];
  let i = 1;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === DOT) {
      const start = i + 1;
      let j = start;
      while (j < n) {
        const cp = text.codePointAt(j)!;
        if (!(isNameFirst(cp) || (j > start && isDigit(cp)))) break;
        j += cp > 0xffff ? 2 : 1;
      }
      if (j === start) {
        return fail(text.charCodeAt(start) === DOT ? 'uses a descendant segment (..), which names more than one node' : `has no member name after the dot at ${i}`);
      }
      segments.push(text.slice(start, j));
      i = j;
    } else if (c === OPEN) {
      const q = text.charCodeAt(i + 1);
      if (q === SQUOTE || q === DQUOTE) {
        const s = readString(text, i + 1, q);
        if (!s.ok) return s;
        segments.push(s.value);
        i = s.end;
      } else if (q === MINUS || isDigit(q)) {
        const k = readInt(text, i + 1);
        if (!k.ok) return k;
        segments.push(k.value);
        i = k.end;
      } else {
        return fail(`holds a selector at ${i + 1} that is not a quoted name or an index (wildcards, slices, filters and spaces are not accepted)`);
      }
      if (text.charCodeAt(i) !== CLOSE) return fail(`does not close the bracket at ${i} with ] (one selector per segment)`);
      i++;
    } else {
      return fail(`has an unexpected character at ${i}`);
    }
  }
  return { ok: true, segments };
}

function fail(message: string): { ok: false; message: string } {
  return { ok: false, message };
}

/** RFC 9535 escapable characters other than the quotes and `u`. */
const SIMPLE_ESCAPES = new Map<number, string>([
  [0x62, '\b'],
  [0x66, '\f'],
  [0x6e, '\n'],
  [0x72, '\r'],
  [0x74, '\t'],
  [0x2f, '/'],
  [BACKSLASH, '\\'],
]);

/** A quoted name starting at `at` (the quote); `end` is the index after the closing quote. */
function readString(text: string, at: number, quote: number): { ok: true; value: string; end: number } | { ok: false; message: string } {
  let out = '';
  let i = at + 1;
  let run = i;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === quote) return { ok: true, value: out + text.slice(run, i), end: i + 1 };
    if (c === BACKSLASH) {
      out += text.slice(run, i);
      const e = text.charCodeAt(i + 1);
      const simple = SIMPLE_ESCAPES.get(e);
      if (simple !== undefined) {
        out += simple;
        i += 2;
      } else if (e === 0x75) {
        const u = readUnicodeEscape(text, i);
        if (u === undefined) return fail(`holds a malformed \\u escape at ${i}`);
        out += u.value;
        i = u.end;
      } else if (e === quote) {
        // Only the quote that delimits the string may be escaped.
        out += String.fromCharCode(e);
        i += 2;
      } else {
        return fail(`holds an unknown escape at ${i}`);
      }
      run = i;
      continue;
    }
    if (c < 0x20) return fail(`holds an unescaped control character at ${i}`);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = text.charCodeAt(i + 1);
      if (!(d >= 0xdc00 && d <= 0xdfff)) return fail(`holds a lone surrogate at ${i}`);
      i += 2;
      continue;
    }
    if (c >= 0xdc00 && c <= 0xdfff) return fail(`holds a lone surrogate at ${i}`);
    i++;
  }
  return fail(`does not close the string opened at ${at}`);
}

function hex4(text: string, at: number): number | undefined {
  let v = 0;
  for (let k = at; k < at + 4; k++) {
    const c = text.charCodeAt(k);
    const d = isDigit(c) ? c - 0x30 : c >= 0x41 && c <= 0x46 ? c - 0x37 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1;
    if (d < 0) return undefined;
    v = v * 16 + d;
  }
  return v;
}

/** `\uXXXX`, or a surrogate pair as two escapes (RFC 9535 hexchar); `at` is the backslash. */
function readUnicodeEscape(text: string, at: number): { value: string; end: number } | undefined {
  const hi = hex4(text, at + 2);
  if (hi === undefined) return undefined;
  if (hi >= 0xdc00 && hi <= 0xdfff) return undefined;
  if (hi < 0xd800 || hi > 0xdbff) return { value: String.fromCharCode(hi), end: at + 6 };
  if (text.charCodeAt(at + 6) !== BACKSLASH || text.charCodeAt(at + 7) !== 0x75) return undefined;
  const lo = hex4(text, at + 8);
  if (lo === undefined || lo < 0xdc00 || lo > 0xdfff) return undefined;
  return { value: String.fromCharCode(hi, lo), end: at + 12 };
}

/** An RFC 9535 index starting at `at`; `end` is the index after its last digit. */
function readInt(text: string, at: number): { ok: true; value: number; end: number } | { ok: false; message: string } {
  let i = at;
  const negative = text.charCodeAt(i) === MINUS;
  if (negative) i++;
  const first = i;
  while (i < text.length && isDigit(text.charCodeAt(i))) i++;
  if (i === first) return fail(`holds a minus sign without digits at ${at}`);
  // RFC 9535: no leading zeros, no "-0"; 16 digits is past any index an array can have.
  if (text.charCodeAt(first) === 0x30 && (i - first > 1 || negative)) return fail(`holds an index with a leading zero at ${at}`);
  if (i - first > 16) return fail(`holds an index out of range at ${at}`);
  const magnitude = Number(text.slice(first, i));
  if (!Number.isSafeInteger(magnitude)) return fail(`holds an index out of range at ${at}`);
  return { ok: true, value: negative ? -magnitude : magnitude, end: i };
}
