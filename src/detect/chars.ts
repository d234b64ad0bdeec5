/**
 * Character classes for the content detectors, as lookup tables over
 * UTF-16 code units below 128 (anything above is none of them). Every
 * scanner in src/detect walks its text with these and bounded runs, never
 * with a backtracking regular expression: detection is linear in the text.
 */

function table(test: (c: string) => boolean): Uint8Array {
  const t = new Uint8Array(128);
  for (let i = 0; i < 128; i++) t[i] = test(String.fromCharCode(i)) ? 1 : 0;
  return t;
}

const DIGIT_T = table((c) => c >= '0' && c <= '9');
const UPPER_T = table((c) => c >= 'A' && c <= 'Z');
const LOWER_T = table((c) => c >= 'a' && c <= 'z');
const ALNUM_T = table((c) => /[A-Za-z0-9]/.test(c));
const WORD_T = table((c) => /[A-Za-z0-9_]/.test(c));
const B64URL_T = table((c) => /[A-Za-z0-9_-]/.test(c));
const UPPER_DIGIT_T = table((c) => /[A-Z0-9]/.test(c));

const at = (t: Uint8Array, c: number): boolean => c < 128 && t[c] === 1;

const B64_T = table((c) => /[A-Za-z0-9+/=]/.test(c));
/** `[A-Za-z0-9+/=]`: the base64 alphabet. */
export const isB64 = (c: number): boolean => c >= 0 && c < 128 && B64_T[c] === 1;

/**
 * Where the run of base64 characters from `i` ends, when it is at least
 * `min` long (encoded data: the detectors pass over it whole); -1 when it
 * is shorter. One table lookup per character, no callback.
 */
export function b64RunEnd(s: string, i: number, min: number): number {
  const n = s.length;
  let e = i;
  while (e < n) {
    const c = s.charCodeAt(e);
    if (c >= 128 || B64_T[c] !== 1) break;
    e++;
    if (e - i < min) continue;
  }
  return e - i >= min ? e : -1;
}

export const isDigit = (c: number): boolean => c >= 48 && c <= 57;
export const isUpper = (c: number): boolean => at(UPPER_T, c);
export const isLower = (c: number): boolean => at(LOWER_T, c);
export const isAlnum = (c: number): boolean => at(ALNUM_T, c);
/** `[A-Za-z0-9_]`, what `\b` means in a JavaScript regular expression. */
export const isWord = (c: number): boolean => at(WORD_T, c);
export const isB64url = (c: number): boolean => at(B64URL_T, c);
export const isUpperDigit = (c: number): boolean => at(UPPER_DIGIT_T, c);
export const isDigitT = (c: number): boolean => at(DIGIT_T, c);
/** A letter of any script (for "not preceded by a letter", as secretlint's `(?<!\p{L})`). */
export function isLetter(c: number): boolean {
  if (c < 128) return at(UPPER_T, c) || at(LOWER_T, c);
  return /\p{L}/u.test(String.fromCharCode(c));
}
export const isSpace = (c: number): boolean => c === 32 || c === 9 || c === 10 || c === 13 || c === 12 || c === 11;

/** The value of a hex digit, or -1 for any other code unit. */
export function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 65 && c <= 70) return c - 55;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/** The code unit at `i`, or -1 outside the text (so every class test is false there). */
export function codeAt(s: string, i: number): number {
  return i >= 0 && i < s.length ? s.charCodeAt(i) : -1;
}

/** Length of the run of `cls` characters starting at `i`, counting at most `max + 1` (so "longer than max" is visible). */
export function run(s: string, i: number, cls: (c: number) => boolean, max: number): number {
  let n = 0;
  const end = Math.min(s.length, i + max + 1);
  for (let j = i; j < end && cls(s.charCodeAt(j)); j++) n++;
  return n;
}

/** One detected value: its kind and where it is (`start` inclusive, `end` exclusive, UTF-16 units). */
export interface Span {
  kind: string;
  start: number;
  end: number;
}

/**
 * Spans packed three numbers each (an index into `kinds`, start, end) in one
 * Int32Array: a scan that finds thousands of values in a crowded text makes
 * one object, not one per value (each object made while a scan runs is
 * carried through the collections its reading triggers, and costs several
 * times its making). Spans are made only where they are read one by one
 * (masking); the kinds a policy asks for are read from the numbers.
 */
export class PackedSpans {
  constructor(
    readonly kinds: readonly string[],
    readonly data: Int32Array,
  ) {}

  get length(): number {
    return this.data.length / 3;
  }

  toSpans(): Span[] {
    const d = this.data;
    const out = new Array<Span>(d.length / 3);
    for (let q = 0, k = 0; k < d.length; q++, k += 3) out[q] = { kind: this.kinds[d[k]!]!, start: d[k + 1]!, end: d[k + 2]! };
    return out;
  }
}

/** What a scan answers: spans, or spans packed. */
export type Found = readonly Span[] | PackedSpans;

/** The spans of `f`, made where they are packed. */
export function unpack(f: Found): readonly Span[] {
  return f instanceof PackedSpans ? f.toSpans() : f;
}

/** Adds the kinds of `f` to `seen`, in order of first appearance. */
export function addKinds(f: Found, seen: Set<string>): void {
  if (!(f instanceof PackedSpans)) {
    for (const sp of f) seen.add(sp.kind);
    return;
  }
  // Each kind index once (there are few): a crowded text's thousands of finds are passed over as numbers.
  const d = f.data;
  let had = 0;
  for (let k = 0; k < d.length; k += 3) {
    const bit = 1 << d[k]!;
    if ((had & bit) !== 0) continue;
    had |= bit;
    seen.add(f.kinds[d[k]!]!);
  }
}

/**
 * A scan given a deadline asks it when its count of steps has none of these
 * bits set (every 4,096 steps): each step's work is bounded (a few hundred
 * characters at most), so no crafted text holds a scan long past it.
 */
export const ASK_MASK = 4095;

/** Counts per ASCII unit, and the units in the order first seen: shannonEntropy's tables, left all zero between calls. */
const COUNTS = new Int32Array(128);
const FIRST_SEEN = new Int32Array(128);

/**
 * Shannon entropy of `s` in bits per character, as gitleaks computes it
 * (over its UTF-16 units). ASCII (every secret the rules look for) is
 * counted in a table, summed in the order each unit is first seen, as the
 * Map of any other text is: the same sum, to the last bit.
 */
export function shannonEntropy(s: string): number {
  if (s.length === 0) return 0;
  let distinct = 0;
  let i = 0;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128) break;
    if (COUNTS[c]!++ === 0) FIRST_SEEN[distinct++] = c;
  }
  let h = 0;
  for (let k = 0; k < distinct; k++) {
    const c = FIRST_SEEN[k]!;
    const p = COUNTS[c]! / s.length;
    COUNTS[c] = 0;
    h -= p * Math.log2(p);
  }
  return i === s.length ? h : entropyOfAny(s);
}

function entropyOfAny(s: string): number {
  const counts = new Map<number, number>();
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

/** Whether `s` holds an ASCII digit. */
export function hasDigit(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) return true;
  }
  return false;
}

/** The parts of a name: split at what is no letter or digit and before a capital that starts a word (`Uint8`, `Array`). */
const NAME_PARTS = /[A-Z]+(?![a-z])[0-9]*|[A-Z]?[a-z0-9]+/g;
/** A word as names are written: a capital at most, two or more lower-case letters, digits after. */
const WORD = /^[A-Z]?[a-z]{2,}[0-9]*$/;
/** One of English's words of two letters capitalized, as camel case writes them inside a name (`IsOptional`, `ToString`, `ById`). */
const SMALL_WORD = /^(?:Is|Of|To|By|On|In|At|Or|As|If|No|Up|An|Do|Be|It|My|Id|Ok)[0-9]*$/;
/** Words of three letters or more a value holds for SMALL_WORD's to count as words in it: a method's name (`_getNationalPrefixIsOptionalWhenFormatting`), not a random run that happens to hold one (`aaAsAbdfciabgeha0`). */
const SMALL_AMONG = 3;
const VOWEL = /[aeiouy]/i;
/** A word of three letters or more (digits after it at most). */
const LONG_WORD = /^(?:[A-Z][a-z]{2,}|[a-z]{3,})[0-9]*$/;
/** Five consonants in a row: seldom in a word, often in a random run of letters. */
const CONSONANTS = /[b-df-hj-np-tv-xz]{5}/i;

/** Abbreviations without a vowel that programs write as words in camel case (`XMLHttpRequest`, `parseHtml`, `SslContext`, `cmdArgs`). */
const ABBREVIATION = /^(?:https?|x?html|xhr|css|sql|dns|tcp|udp|rpc|grpc|svg|pdf|csv|tls|ssl|ssh|jwt|rgba?|hsla?|std|src|msg|cmd|ctx|cfg|pkg)$/i;

/** Whether `part` reads as a word: a vowel and no five consonants in a row, or an abbreviation written as one (ABBREVIATION). */
export function wordLike(part: string): boolean {
  return (VOWEL.test(part) && !CONSONANTS.test(part)) || ABBREVIATION.test(part);
}

/**
 * Whether `v` is written in words, as names are (`_getString`, `Uint8Array`, `io.modelcontextprotocol/clientInfo`,
 * `ProgressTokenSchema$1`): two words or more (with a vowel, without five consonants in a row), every other part a
 * number but one at most, and the words three fifths of its letters and digits. A random value's parts are seldom
 * words: of random strings of 16 to 40 characters, some 0.02 % (base64, base62) to 0.16 % (lower-case letters,
 * digits, `-` and `_`) read so, and none of hex or lower-case letters and digits alone (one part). `strict`: every
 * part a word or a number (`ProgressTokenSchema$1`, `Uint8Array`): 0.0015 % of random base62 strings, 0.04 % of the
 * lower-case ones (a count of two million strings each). English's words of two letters capitalized are words among
 * three longer ones at least (SMALL_WORD, `_getNationalPrefixIsOptionalWhenFormatting`).
 */
export function wordy(v: string, strict = false): boolean {
  let inWords = 0;
  let words = 0;
  let others = 0;
  let alnum = 0;
  let long = 0;
  let small = 0;
  let inSmall = 0;
  for (const m of v.matchAll(NAME_PARTS)) {
    const part = m[0];
    alnum += part.length;
    if (/^[0-9]+$/.test(part)) continue;
    if (WORD.test(part) && wordLike(part)) {
      inWords += part.length;
      words++;
      if (LONG_WORD.test(part)) long++;
    } else if (SMALL_WORD.test(part)) {
      small++;
      inSmall += part.length;
    } else if (++others > (strict ? 0 : 1)) return false;
  }
  // (English's short words are words among SMALL_AMONG longer ones at least, else parts of no word.)
  if (long >= SMALL_AMONG) {
    words += small;
    inWords += inSmall;
  } else if ((others += small) > (strict ? 0 : 1)) return false;
  return words >= 2 && inWords * 5 >= alnum * 3;
}

/** UTF-16 code units as the string they are, lone surrogates kept (a decoder would make each U+FFFD), flat. */
export function stringOf(units: Uint16Array): string {
  const parts: string[] = [];
  for (let k = 0; k < units.length; k += 8192) parts.push(String.fromCharCode.apply(null, units.subarray(k, k + 8192) as unknown as number[]));
  return parts.join('');
}

/**
 * Where the next character `re` matches stands in `s` from `i`, or `s.length`: `re` a global pattern of one unit, so
 * where its search ends tells where the match is, no match array made.
 */
export function nextAt(re: RegExp, s: string, i: number): number {
  re.lastIndex = i;
  return re.test(s) ? re.lastIndex - 1 : s.length;
}
