/**
 * The values of a text (docs/behaviour/flows.md): the pieces Trustgate can
 * recognise again when a call's arguments carry them. What a result showed
 * the model and what a call passes go through the same two functions, so a
 * value is recognised however the model re-quotes it within the
 * normalization:
 *
 * - `normalize`: tag characters read as the ASCII they stand for, every
 *   other character drawn as nothing (Unicode's Default_Ignorable_Code_Point:
 *   zero-width, soft-hyphen, bidirectional and invisible controls,
 *   variation selectors) removed, Unicode NFKC, one round of percent-decoding,
 *   of HTML entities and of JavaScript escapes, white space folded, surrounding quotes and punctuation
 *   stripped;
 * - `valuesOf`: every email address (and its domain), URL (and its host),
 *   domain name, IP address, IBAN, card, phone and account-like number,
 *   file path and identifier (a token of at least 6 characters holding a
 *   digit, `@`, `/`, `.`, `_` or `:`, not an ordinary word) found in a
 *   string, and every string of at most 256 characters as a whole. Hosts,
 *   emails and URLs' scheme and host are case-folded.
 *
 * Linear in the text: one pass of tokens, each classified by anchored
 * patterns whose quantifiers are bounded; at most MAX_VALUES_PER_STRING
 * values of one string (the rest are counted, and the caller treats a
 * count past its bound as an overflow: fail closed).
 */

import { isUtf8 } from 'node:buffer';
import { decodeEscapes, hasTags, IGNORABLE_CHARS, readTag, TAG_CHARS, TERMINAL_ESCAPES, type TagReading } from '../detect/normalize.js';
import { DECODE_ROUNDS, encodedRuns, MIN_RUN } from '../detect/encoded.js';
import { DetectionStopped } from '../detect/ruleset.js';

/** What a value is. */
export type ValueKind = 'string' | 'email' | 'url' | 'host' | 'ip' | 'iban' | 'card' | 'phone' | 'account' | 'path' | 'id';

export interface FoundValue {
  /** The normalized text: what is digested, never stored. */
  value: string;
  kind: ValueKind;
}

/** Strings of at most this many characters (after normalization) are also a value whole. */
export const WHOLE_STRING_MAX = 256;
/** Most values taken from one string; past it the rest are counted as left out. */
export const MAX_VALUES_PER_STRING = 4096;
/** Longest token classified; a longer run of non-space characters is cut into tokens of this size. */
const MAX_TOKEN = 2048;

const PERCENT = /(?:%[0-9A-Fa-f]{2})+/g;
const NON_ASCII = /[^\x00-\x7f]/;
/** Characters stripped from both ends of a value: white space, quotes, brackets, sentence punctuation. */
const EDGE_CHARS = new Set([...' \t\n\r"\'`“”‘’«»<>()[]{}.,;:!?*']);

/** Classes of ASCII characters for the loops below: white space, an edge to strip, a mark of a kind (not a word), glue between tokens. */
const SPACE = 1;
const EDGE = 2;
const MARK_CHAR = 4;
const GLUE = 8;
const ASCII = new Uint8Array(128);
for (let c = 0; c <= 0x20; c++) ASCII[c] = SPACE;
for (const ch of EDGE_CHARS) if (ch.charCodeAt(0) < 128) ASCII[ch.charCodeAt(0)]! |= EDGE;
for (const ch of '0123456789@/.:_+-\\') ASCII[ch.charCodeAt(0)]! |= MARK_CHAR;
for (const ch of ',;|=') ASCII[ch.charCodeAt(0)]! |= GLUE;

function isEdge(c: number): boolean {
  return c < 128 ? (ASCII[c]! & EDGE) !== 0 : EDGE_CHARS.has(String.fromCharCode(c));
}

/** `s` without EDGE_CHARS at either end (a loop, not a regular expression: linear on any run of them). */
function stripEdges(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && isEdge(s.charCodeAt(a))) a++;
  while (b > a && isEdge(s.charCodeAt(b - 1))) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

/** A percent-escape of a byte past ASCII: only a run holding one can fail to be UTF-8. */
const HIGH_BYTE = /%[89A-Fa-f]/;

/**
 * A run of percent-escapes as the UTF-8 it encodes, or as written when its
 * bytes are no UTF-8: checked before decodeURIComponent is asked, since its
 * throw costs some 5 µs (`%FF ` again and again: 0.8 s/MB, before the
 * deadline is asked).
 */
function decodePercent(run: string): string {
  if (!HIGH_BYTE.test(run)) return decodeURIComponent(run);
  // One byte past ASCII alone is never UTF-8; a longer run's bytes are read into a kept array and checked.
  const n = run.length / 3;
  if (n === 1) return run;
  const bytes = n <= RUN_BYTES.length ? RUN_BYTES.subarray(0, n) : new Uint8Array(n);
  for (let k = 0; k < n; k++) bytes[k] = parseInt(run.slice(3 * k + 1, 3 * k + 3), 16);
  return isUtf8(bytes) ? decodeURIComponent(run) : run;
}

/** The bytes of a run of percent-escapes, for the check (a longer run gets its own array). */
const RUN_BYTES = new Uint8Array(64);

/** The normalization less white-space folding and edge stripping: what the token loop reads (it splits on any white space itself). */
function decoded(s: string, tags: TagReading = 'read'): string {
  // ASCII holds no invisible character and is its own NFKC form: most text is, and skips both.
  let t = NON_ASCII.test(s) ? visible(s, tags).normalize('NFKC') : s;
  const before = t;
  if (t.includes('%')) t = t.replace(PERCENT, decodePercent);
  // HTML character references and JavaScript escapes: the detectors' one reading of them (detect/normalize.ts).
  if (t.includes('&') || t.includes('\\')) t = decodeEscapes(t);
  // A terminal's escape sequences (colours, hyperlinks), written or escaped, are drawn as nothing.
  if (t.includes('\x1b') || t.includes('\x9b')) t = t.replace(TERMINAL_ESCAPES, '');
  // NFKC again when something was decoded: a decoded character may have a compatibility form.
  if (t !== before) t = visible(t, tags).normalize('NFKC');
  return t;
}

/** `s` with its tag characters read as ASCII (or removed) and every other character drawn as nothing removed. */
function visible(s: string, tags: TagReading): string {
  return (tags === 'read' ? s.replace(TAG_CHARS, readTag) : s).replace(IGNORABLE_CHARS, '');
}

/** White space as the token loop splits on it: ASCII space and controls, and Unicode's spaces. */
function isSpace(c: number): boolean {
  return c <= 0x20 || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000;
}

/** Every run of white space as one ASCII space (a loop: a regular expression of white space costs several times more on long text). */
function foldSpaces(s: string): string {
  let out = '';
  let from = 0;
  let i = 0;
  while (i < s.length) {
    if (!isSpace(s.charCodeAt(i))) {
      i++;
      continue;
    }
    let j = i + 1;
    while (j < s.length && isSpace(s.charCodeAt(j))) j++;
    // A lone ASCII space stays as it is.
    if (j - i === 1 && s.charCodeAt(i) === 0x20) {
      i = j;
      continue;
    }
    out += s.slice(from, i) + ' ';
    from = i = j;
  }
  return from === 0 ? s : out + s.slice(from);
}

/** The one normalization of results and arguments alike (see the module comment). */
export function normalize(s: string): string {
  return stripEdges(foldSpaces(decoded(s)));
}

const EMAIL = /^[A-Za-z0-9._%+-]{1,64}@([A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){1,8})$/;
const URL_RE = /^([a-zA-Z][a-zA-Z0-9+.-]{1,15}):\/\/([^/?#\s@]{1,256}@)?([^/?#\s:]{1,253})(:[0-9]{1,5})?([/?#].*)?$/;
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,8}[A-Za-z]{2,24}$/;
const IPV4 = /^(?:(?:25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])$/;
const IPV6 = /^[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}$/;
const IBAN = /^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$/;
const PATH = /^(?:~?\/|\.{1,2}\/|[A-Za-z]:[\\/])[^\s]{0,2047}$/;
/** An IBAN written in groups of four: `DE89 3704 0044 0532 0130 00`. */
const GROUPED_IBAN = /\b[A-Z]{2}[0-9]{2}(?: [A-Z0-9]{4}){2,7}(?: [A-Z0-9]{1,4})?\b/g;
/** A number written with separators: `+1 (555) 123-4567`, `4111 1111 1111 1111`. */
const SPACED_NUMBER = /\+?[0-9][0-9 ().-]{5,22}[0-9]/g;
/** An ordinary word: letters only, or letters with one inner apostrophe or hyphen. */
const WORD = /^[\p{L}\p{M}]+(?:['’-][\p{L}\p{M}]+)?$/u;

/** Whether a token is an ordinary word (letters, with at most one inner apostrophe or hyphen): never a value of its own. */
export function isWord(t: string): boolean {
  return WORD.test(t);
}
const ID_MARK = /[0-9@/._:]/;

function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/** The kind of a run of digits (separators dropped), or undefined when too short to recognise. */
function numberKind(digits: string, plus: boolean): ValueKind | undefined {
  if (digits.length < 6) return undefined;
  if (digits.length >= 13 && digits.length <= 19 && luhn(digits)) return 'card';
  if (plus || (digits.length >= 7 && digits.length <= 15)) return 'phone';
  return 'account';
}

/** Receives each value found; answers false to stop (the caller's bound is reached). */
export type ValueSink = (value: string, kind: ValueKind) => boolean;

/** A character every kind but a plain word holds: a digit, `@`, `/`, `.`, `:`, `_`, `+`, `-` or `\\`. */
const MARK = /[0-9@/.:_+\\-]/;

/** Classify one token (already normalized and stripped); each value is handed to `add`. */
function token(t: string, add: ValueSink): boolean {
  // Most tokens of prose are words: none of the kinds below is made of letters alone.
  if (t.length < 3 || !MARK.test(t)) return true;
  let m = EMAIL.exec(t);
  if (m !== null) return add(t.toLowerCase(), 'email') && add(m[1]!.toLowerCase(), 'host');
  m = URL_RE.exec(t);
  if (m !== null) {
    const host = m[3]!.toLowerCase();
    const url = `${m[1]!.toLowerCase()}://${m[2] ?? ''}${host}${m[4] ?? ''}${m[5] ?? ''}`.replace(/\/$/, '');
    return add(url, 'url') && add(host, 'host');
  }
  if (IPV4.test(t) || (t.includes(':') && IPV6.test(t) && t.length >= 6)) return add(t.toLowerCase(), 'ip');
  if (HOST.test(t) && !/^[0-9.]+$/.test(t)) return add(t.toLowerCase(), 'host');
  if (IBAN.test(t)) return add(t, 'iban');
  if (PATH.test(t)) return add(t, 'path');
  if (/^\+?[0-9]+$/.test(t)) {
    const kind = numberKind(t.replace('+', ''), t[0] === '+');
    if (kind !== undefined) return add(t.replace('+', ''), kind);
  }
  if (t.length >= 6 && ID_MARK.test(t) && !WORD.test(t)) return add(t, 'id');
  return true;
}

/** A quoted span of running text: what an instruction names as a value (`send 'X' to "Y"`). */
const QUOTED = /(?:^|[\s(:=,])['"`“‘«]([^'"`“”‘’«»\n]{1,256})['"`”’»](?=$|[\s).,;:!?])/g;

/** The quoted spans of a text, normalized, each handed to `add` as a `string` value; stops when `add` answers false. */
export function quotedValues(s: string, add: ValueSink): boolean {
  // exec over lastIndex, not matchAll: matchAll copies the expression for every string read.
  QUOTED.lastIndex = 0;
  for (let m = QUOTED.exec(s); m !== null; m = QUOTED.exec(s)) {
    const v = normalize(m[1]!);
    if (v.length > 0 && !add(v, 'string')) return false;
  }
  return true;
}

/** Longest base64 or hex run whose text flows read (4 KB of base64: 3 KB of text). */
export const ENCODED_VALUES_MAX = 4096;

/**
 * Every value of a string, normalized, handed to `add` in text order (the
 * whole string first when short enough); stops when `add` answers false,
 * or when `stop`, asked as the read goes over the text, answers true.
 */
export function valuesOf(s: string, add: ValueSink, skipWords = true, stop?: () => boolean): void {
  const n = decoded(s);
  valuesRead(n, add, skipWords, stop);
  // Tag characters a model may read as ASCII or skip: the values of both readings.
  if (NON_ASCII.test(s) && hasTags(s)) valuesRead(decoded(s, 'drop'), add, skipWords, stop);
  // Runs of base64 or hex that are the encoding of text (the detectors' reading, detect/encoded.ts): a value shown so
  // (`decode this and write to it`), or carried so (`?d=` and the base64 of what was read), is the text's; what a run
  // encodes is read for runs in turn, up to the detectors' DECODE_ROUNDS.
  try {
    encodedValues(n, add, skipWords, stop, DECODE_ROUNDS);
  } catch (err) {
    // Past the deadline, what was read is kept (as valuesRead stops).
    if (!(err instanceof DetectionStopped)) throw err;
  }
}

/** The values of the text each run of `n` encodes, and of the runs that text holds, to `rounds` in all. @throws DetectionStopped */
function encodedValues(n: string, add: ValueSink, skipWords: boolean, stop: (() => boolean) | undefined, rounds: number): void {
  if (n.length < MIN_RUN) return;
  // A value, or a message around one, is short; a run that encodes more is a file's data, which no model decodes in
  // its head: it is not decoded (a 5 MB run would be decoded and normalized whole, past the deadline's reach).
  encodedRuns(
    n,
    stop,
    (run) => {
      const text = decoded(run.text);
      valuesRead(text, add, skipWords, stop);
      if (rounds > 1) encodedValues(text, add, skipWords, stop, rounds - 1);
    },
    ENCODED_VALUES_MAX,
  );
}

function valuesRead(n: string, add: ValueSink, skipWords: boolean, stop: (() => boolean) | undefined): void {
  if (n.length === 0) return;
  // A string short enough to be a value whole, folded as normalize() folds it (only short ones: folding is the cost on long text).
  if (n.length <= WHOLE_STRING_MAX) {
    const whole = stripEdges(foldSpaces(n));
    if (whole.length > 0 && whole.length <= WHOLE_STRING_MAX && !add(whole, 'string')) return;
  }
  // Numbers written with separators, and IBANs in groups, as the digits (or characters) they stand for.
  if (/[0-9]/.test(n)) {
    GROUPED_IBAN.lastIndex = 0;
    for (let m = GROUPED_IBAN.exec(n); m !== null; m = GROUPED_IBAN.exec(n)) if (!add(m[0].replace(/ /g, ''), 'iban')) return;
    SPACED_NUMBER.lastIndex = 0;
    for (let m = SPACED_NUMBER.exec(n); m !== null; m = SPACED_NUMBER.exec(n)) {
      if (!/[ ().-]/.test(m[0])) continue;
      const digits = m[0].replace(/[^0-9]/g, '');
      const kind = numberKind(digits, m[0][0] === '+');
      if (kind !== undefined && !add(digits, kind)) return;
    }
  }
  // Only tokens holding a mark of some kind are read (a word never is a value of its own): a native search finds the
  // next mark, and the token around it is read by the loop of tokensIn.
  if (!skipWords) {
    tokensIn(n, 0, n.length, add);
    return;
  }
  let pos = 0;
  // Where each search found its next mark (-1: none left; -2: not searched yet); searched again only once `pos` has passed it.
  let mark = -2;
  let edge = -2;
  while (pos < n.length) {
    if (stop?.() === true) return;
    if (mark !== -1 && mark < pos) {
      MARK_AT.lastIndex = pos;
      mark = MARK_AT.test(n) ? MARK_AT.lastIndex - 1 : -1;
    }
    if (edge !== -1 && edge < pos) {
      EDGE_MARK_AT.lastIndex = pos;
      edge = EDGE_MARK_AT.test(n) ? EDGE_MARK_AT.lastIndex - 2 : -1;
    }
    if (mark === -1 && edge === -1) return;
    const at = mark === -1 ? edge : edge === -1 ? mark : Math.min(mark, edge);
    let a = at;
    while (a > pos && !isSpace(n.charCodeAt(a - 1))) a--;
    let b = at + 1;
    while (b < n.length && !isSpace(n.charCodeAt(b))) b++;
    if (!tokensIn(n, a, b, add)) return;
    pos = b + 1;
  }
}

/**
 * Where a token may be marked (MARK_CHAR of the class table): a mark, or
 * an edge mark (`.`, `:`) only when something other than white space
 * follows it, so sentence ends are passed over natively. tokensIn decides.
 * Two searches, each a single class the engine scans fast (one expression
 * with both alternatives costs twice as much on prose).
 */
const MARK_AT = /[0-9@/_+\\-]/g;
const EDGE_MARK_AT = /[.:][^\x00-\x20]/g;

/**
 * The tokens of n[from, to) (`from` at a token's start, `to` at white space
 * or the end), each read when it holds a mark (a mark that is also an edge,
 * `.` or `:`, only when more follows it: `end.` is a word); answers false
 * when `add` did.
 */
function tokensIn(n: string, from: number, to: number, add: ValueSink): boolean {
  // A mark that is also an edge (`.`, `:`) marks the token only when more follows it: `end.` is a word.
  let start = from;
  let marked = false;
  let pending = false;
  let glued = false;
  for (let i = from; i <= to; i++) {
    const c = i < to ? n.charCodeAt(i) : 0x20;
    const k = c < 128 ? ASCII[c]! : isSpace(c) ? SPACE : 0;
    const cut = (k & SPACE) === 0 && i - start >= MAX_TOKEN;
    if ((k & SPACE) === 0 && !cut) {
      if (pending && (k & EDGE) === 0) marked = true;
      if (k & MARK_CHAR) {
        if (k & EDGE) pending = true;
        else marked = true;
      }
      if (k & GLUE) glued = true;
      continue;
    }
    if (i > start && marked) {
      const t = stripEdges(n.slice(start, i));
      if (!token(t, add)) return false;
      // Tokens glued by punctuation a sentence adds (`see:https://x`, `a,b`): the parts, too.
      if (glued) for (const part of t.split(/[,;|=]+/)) if (part !== t && !token(stripEdges(part), add)) return false;
    }
    // A token cut at its bound goes on from this character; white space is skipped.
    start = cut ? i : i + 1;
    marked = cut && (k & MARK_CHAR) !== 0;
    pending = false;
    glued = cut && (k & GLUE) !== 0;
  }
  return true;
}
