/**
 * A JSON value (a result's `structuredContent`, a `_meta`, annotations)
 * written out as the text it is sent as, member names beside their values,
 * with the place of each string in it: the detectors read a value a name
 * or a pair names there (`{"password": "..."}`, `{"name": "DB_PASSWORD",
 * "value": "..."}`, `{"secrets": ["..."]}`), which no string alone shows,
 * and a find is mapped back to the strings it falls in. Written with an
 * explicit stack (no recursion however deep the value), each string once:
 * linear in the value.
 */

/** The text and, per string written (member names and values, and integers of 7 digits or more as their digits), where its characters stand in it. */
export interface Written {
  readonly text: string;
  /** The strings, in the order written. */
  readonly leaves: readonly string[];
  /** Where each leaf's characters start and end in `text` (inside its quotes). */
  readonly starts: readonly number[];
  readonly ends: readonly number[];
}

/** The longest string value read as a pair's name (writeStructure). */
const SHORT = 64;

/** A character JSON writes escaped inside a string. */
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;

/** `c` as JSON writes it inside a string. */
function escaped(c: number): string {
  if (c === 34) return '\\"';
  if (c === 92) return '\\\\';
  if (c === 10) return '\\n';
  if (c === 13) return '\\r';
  if (c === 9) return '\\t';
  if (c < 32) return `\\u${c.toString(16).padStart(4, '0')}`;
  return String.fromCharCode(c);
}

/** `s` as JSON writes it inside a string (its quotes left out). */
function escape(s: string): string {
  if (!NEEDS_ESCAPE.test(s)) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) out += escaped(s.charCodeAt(i));
  return out;
}

/** Whether a JSON number is read as text as a string is: an integer of 7 digits or more (a card or an account written as a number). */
function longInteger(x: unknown): x is number {
  return typeof x === 'number' && Number.isInteger(x) && Math.abs(x) >= 1e6;
}

/**
 * `value` written as compact JSON, or undefined where no member's name nor
 * a short string (a pair's name, `{"name": "DB_PASSWORD", ...}`: 64
 * characters at most) is one `names` takes for a secret's: there no name
 * says more than its strings alone, which are read alone and across their
 * seams already.
 */
export function writeStructure(value: unknown, names: (s: string) => boolean = () => true): Written | undefined {
  if (typeof value !== 'object' || value === null || !naming(value, names)) return undefined;
  const pieces: string[] = [];
  const leaves: string[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  let at = 0;
  const put = (s: string): void => {
    pieces.push(s);
    at += s.length;
  };
  const leaf = (s: string): void => {
    put('"');
    const e = escape(s);
    leaves.push(s);
    starts.push(at);
    put(e);
    ends.push(at);
    put('"');
  };
  // The stack holds what is still to write: a value, or a literal (a closing bracket, a comma) as a string marked by a box.
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const x = stack.pop();
    if (x instanceof Literal) put(x.text);
    else if (typeof x === 'string') leaf(x);
    else if (longInteger(x)) {
      leaves.push(String(x));
      starts.push(at);
      put(String(x));
      ends.push(at);
    } else if (typeof x === 'number' || typeof x === 'boolean' || x === null) put(String(x));
    else if (Array.isArray(x)) {
      put('[');
      stack.push(CLOSE_LIST);
      for (let i = x.length - 1; i >= 0; i--) {
        stack.push(x[i]);
        if (i > 0) stack.push(COMMA);
      }
    } else if (x instanceof Name) {
      leaf(x.name);
      put(':');
    } else if (typeof x === 'object') {
      const o = x as Record<string, unknown>;
      const keys = Object.keys(o);
      put('{');
      stack.push(CLOSE_MAP);
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push(o[keys[i]!]);
        stack.push(new Name(keys[i]!));
        if (i > 0) stack.push(COMMA);
      }
    }
  }
  return { text: pieces.join(''), leaves, starts, ends };
}

/**
 * Whether a member's name in `value`, or a string of SHORT characters at most in it, is one `names` takes for a
 * secret's: asked before anything is written, and answered at the first (most structures name none, and are not
 * written at all).
 */
function naming(value: object, names: (s: string) => boolean): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const x = stack.pop();
    if (typeof x === 'string') {
      if (x.length <= SHORT && names(x)) return true;
    } else if (Array.isArray(x)) {
      for (let i = 0; i < x.length; i++) stack.push(x[i]);
    } else if (typeof x === 'object' && x !== null) {
      const o = x as Record<string, unknown>;
      for (const k of Object.keys(o)) {
        if (names(k)) return true;
        stack.push(o[k]);
      }
    }
  }
  return false;
}

class Literal {
  constructor(readonly text: string) {}
}
class Name {
  constructor(readonly name: string) {}
}
const COMMA = new Literal(',');
const CLOSE_LIST = new Literal(']');
const CLOSE_MAP = new Literal('}');

/**
 * The stretch of `leaf` itself that [from, to) of it as written (escaped) covers: every character one of whose written
 * characters falls inside. One walk of the leaf where it holds an escape.
 */
export function rawStretch(leaf: string, from: number, to: number): [number, number] {
  if (!NEEDS_ESCAPE.test(leaf)) return [from, to];
  let written = 0;
  let start = leaf.length;
  for (let i = 0; i < leaf.length; i++) {
    const next = written + escaped(leaf.charCodeAt(i)).length;
    if (start === leaf.length && next > from) start = i;
    if (next >= to) return [start, i + 1];
    written = next;
  }
  return [start, leaf.length];
}
