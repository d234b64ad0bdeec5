/**
 * A JSON value (a result's `structuredContent`, a `_meta`, annotations)
 * written out as the text it is sent as, member names beside their values,
 * with the place of each string in it: the detectors read a value a name
 * or a pair names there (`{"password": "..."}`, `{"name": "DB_PASSWORD",
 * "value": "..."}`, `{"secrets": ["..."]}`), which no string alone shows,
 * and a find is mapped back to the string it falls in. Written by
 * JSON.stringify, its strings found by one walk of the text: linear in the
 * value, no recursion however deep it is.
 */

/** The text and where each string of it (member names and values, and integers of 7 digits or more as their digits) stands in it. */
export interface Written {
  readonly text: string;
  /** Where each string's characters start and end in `text` (inside its quotes), in the order written. */
  readonly starts: readonly number[];
  readonly ends: readonly number[];
}

/** The string the `k`th place of `w` holds, as the value held it (its escapes read). */
export function leafAt(w: Written, k: number): string {
  const a = w.starts[k]!;
  const b = w.ends[k]!;
  return w.text.charCodeAt(a - 1) === 34 ? (JSON.parse(w.text.slice(a - 1, b + 1)) as string) : w.text.slice(a, b);
}

/** The longest string read as a pair's name (writeStructure). */
const SHORT = 64;

/** A character JSON.stringify writes escaped inside a string (a surrogate may be one, where it stands alone). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** How many characters JSON.stringify writes for the character at `i` of `s`. */
function width(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c === 34 || c === 92 || c === 8 || c === 9 || c === 10 || c === 12 || c === 13) return 2;
  if (c < 32) return 6;
  // A surrogate alone (not half of a pair) is written as its escape.
  if (c >= 0xd800 && c <= 0xdbff) return isLow(s.charCodeAt(i + 1)) ? 1 : 6;
  if (c >= 0xdc00 && c <= 0xdfff) return isHigh(s.charCodeAt(i - 1)) ? 1 : 6;
  return 1;
}
const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/**
 * `value` as JSON.stringify writes it, or undefined where no member's name
 * nor a pair's (a short string under a member named `name` or `key`,
 * `{"name": "DB_PASSWORD", ...}`: 64 characters at most) is one `names`
 * takes for a secret's: there no name
 * says more than its strings alone, which are read alone and across their
 * seams already.
 */
export function writeStructure(value: unknown, names: (s: string) => boolean = () => true): Written | undefined {
  if (typeof value !== 'object' || value === null || !naming(value, names)) return undefined;
  const text = JSON.stringify(value);
  const starts: number[] = [];
  const ends: number[] = [];
  const n = text.length;
  for (let i = 0; i < n; ) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      // A string: to its closing quote, an escape's second character passed over.
      let e = i + 1;
      for (let d = text.charCodeAt(e); d !== 34; d = text.charCodeAt(e)) e += d === 92 ? 2 : 1;
      starts.push(i + 1);
      ends.push(e);
      i = e + 1;
    } else if (c === 45 || (c >= 48 && c <= 57)) {
      // A number: an integer of 7 digits or more is read as the text it is written as.
      let e = i + 1;
      let integer = true;
      for (let d = text.charCodeAt(e); (d >= 48 && d <= 57) || d === 46 || d === 101 || d === 69 || d === 43 || d === 45; d = text.charCodeAt(++e)) if (d < 48 || d > 57) integer = false;
      if (integer && e - i - (c === 45 ? 1 : 0) >= 7) {
        starts.push(i);
        ends.push(e);
      }
      i = e;
    } else i++;
  }
  return { text, starts, ends };
}

/**
 * Whether a member's name in `value`, or a pair's (PAIR_NAME's string, SHORT characters at most), is one `names` takes
 * for a secret's: asked before anything is written, and answered at the first (most structures name none, and are not
 * written at all).
 */
function naming(value: object, names: (s: string) => boolean): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const x = stack.pop();
    if (Array.isArray(x)) {
      for (let i = 0; i < x.length; i++) stack.push(x[i]);
    } else if (typeof x === 'object' && x !== null) {
      const o = x as Record<string, unknown>;
      for (const k of Object.keys(o)) {
        if (names(k)) return true;
        const v = o[k];
        // (A pair's name is a string under its `name` or `key`: other strings are values, read alone.)
        if (typeof v === 'string') {
          if (v.length <= SHORT && PAIR_NAME.test(k) && names(v)) return true;
        } else if (typeof v === 'object' && v !== null) stack.push(v);
      }
    }
  }
  return false;
}

/** The member that holds a pair's name (`{"name": "DB_PASSWORD", "value": ...}`, `{"Key": ...}`, `{"ParameterKey": ...}`). */
const PAIR_NAME = /(?:name|key)$/i;

/**
 * The stretch of `leaf` itself that [from, to) of it as written (escaped) covers: every character one of whose written
 * characters falls inside. One walk of the leaf where it holds an escape.
 */
export function rawStretch(leaf: string, from: number, to: number): [number, number] {
  if (!NEEDS_ESCAPE.test(leaf)) return [from, to];
  let written = 0;
  let start = leaf.length;
  for (let i = 0; i < leaf.length; i++) {
    const next = written + width(leaf, i);
    if (start === leaf.length && next > from) start = i;
    if (next >= to) return [start, i + 1];
    written = next;
  }
  return [start, leaf.length];
}
