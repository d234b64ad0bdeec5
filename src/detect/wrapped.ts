/**
 * A token cut by a line break (docs/behaviour/labels-and-detectors.md#normalization): a terminal's or a tool's
 * output wrapped at its width, a long value hard-wrapped in a document, a shell's `\` line continuation. A model
 * reads `ghp_aB3dE5fG7hJ9` then a line break then `kL1mN3pQ5...` as one token; a scan of the text as written finds
 * neither piece. Here the stretches around such breaks are read with the breaks removed, for a provider's format
 * (the rule set's and the own formats: their prefixes and lengths make a find across a break the credential);
 * a generic assignment is not read so, since a line that ends with a value and a line that starts with a word would
 * join into one.
 *
 * A break read: a line feed (after a carriage return or a `\` of a continuation) between two characters a credential
 * is made of as written (isWrapChar), in a chain of such breaks whose runs make 16 characters or more, a letter and a
 * digit or letters of both cases among them (unwrappedStretches).
 */
import { ASK_MASK, isAlnum, isDigit, isLower, isUpper } from './chars.js';
import { DetectionStopped } from './ruleset.js';

/** Characters of each side of a break read as the token it cuts: a JWT's line of a wrapped document, a PEM's 64. */
const WRAP_RUN = 1024;
/** The shortest token two runs make that is read across their break. */
const MIN_WRAPPED = 16;
/** Most characters one stretch reads; the breaks after it start another. */
const WRAP_TEXT = 16 * 1024;

/**
 * Whether a credential may hold `c` where a line break cuts it, as written: a letter, a digit or
 * `_ - + / = . ~ : @ ? & % ! * $ ^ # ( )` (a token, a URL that holds one, a Django key), `,` (an Argon2 or scrypt
 * hash's parameters, `m=65536,t=3,p=4`), `\\` and `;` (an escape, a character reference), or any non-ASCII character
 * (a confusable, an invisible character, a mark).
 */
function isWrapChar(c: number): boolean {
  return isAlnum(c) || WRAP_MARKS.has(c) || c >= 0x80;
}
const WRAP_MARKS = new Set([...'_-+/=.~:@?&%!*$^#();,\\'].map((c) => c.charCodeAt(0)));

/** A text read with some of its line breaks removed: `text`, and for each character of it where it stands in the input. */
export interface Unwrapped {
  text: string;
  /** Places in `text` where a break was removed, in order: a find that crosses one is a token the break cut. */
  seams: number[];
  /** Where a character of `text` stands in the input (a separator's: where the character before it stands). */
  sourceOf(at: number): number;
}

/** A break that may cut a token: where the run before it starts and ends (`from`, `end`), where the run after it starts and ends (`next`, `to`). */
interface Break {
  from: number;
  end: number;
  next: number;
  to: number;
}

/**
 * The break at the line feed `i`, or undefined: the carriage return and a continuation's `\\` before it (a blank before
 * the `\\` or after the break ends the token, as a shell reads it); the two runs it joins.
 */
function breakAt(s: string, i: number): Break | undefined {
  const end = lineEnd(s, i);
  const next = i + 1;
  if (end === 0 || next >= s.length || !isWrapChar(s.charCodeAt(end - 1)) || !isWrapChar(s.charCodeAt(next))) return undefined;
  let from = end;
  while (from > 0 && end - from < WRAP_RUN && isWrapChar(s.charCodeAt(from - 1))) from--;
  let to = next;
  while (to < s.length && to - next < WRAP_RUN && isWrapChar(s.charCodeAt(to))) to++;
  // (A continuation's `\` at the end of the line after it is the next break's, not the run's.)
  if (s.charCodeAt(to) === 10) to = Math.max(next, lineEnd(s, to));
  else if (s.charCodeAt(to) === 13 && s.charCodeAt(to + 1) === 10) to = Math.max(next, lineEnd(s, to + 1));
  return { from, end, next, to };
}

/**
 * Whether the run at `a` starts with a name and its `=` or `:` before a value (`SECRET_VALUE=k8Xq...`,
 * `client_secret: ...`, `password=...`): a line of its own, a config's next entry, not the rest of a token. A name
 * here is 64 characters at most and holds `_`, `.` or `-`, or is lower-case letters; a token's piece is neither
 * (`GSQ=89G6...`, base64's `Fg==`), nor is a URL's scheme (`edis://`, `https:` at a line's end) or a host and its
 * port (`cache.internal:6379`).
 */
export function startsAssignment(s: string, a: number): boolean {
  let b = a;
  while (b < s.length && b - a <= 65 && isWrapChar(s.charCodeAt(b))) b++;
  let k = a;
  let joined = false;
  let lower = true;
  for (; k < b; k++) {
    const c = s.charCodeAt(k);
    if (c === 95 || c === 46 || c === 45) joined = true;
    else if (isLower(c)) continue;
    else if (isAlnum(c)) lower = false;
    else break;
  }
  const op = s.charCodeAt(k);
  if (k === a || k - a > 64 || k >= b || (op !== 61 && op !== 58) || isDigit(s.charCodeAt(a))) return false;
  // (A value or a blank after it: `https:` at a line's end is a URL the break cuts, and so is `db.internal:` before a
  // continuation's `\`.)
  const after = s.charCodeAt(k + 1);
  const continued = after === 92 && (k + 2 >= s.length || s.charCodeAt(k + 2) === 10 || s.charCodeAt(k + 2) === 13);
  return (joined || (lower && k - a >= 3)) && (after === 32 || after === 9 || (k + 1 < b && after !== 61 && after !== 47 && !continued && !(op === 58 && isDigit(after))));
}

/** The classes of characters s[a, b) holds: bit 1 a digit, 2 a lower-case letter, 4 an upper-case one. */
function classes(s: string, a: number, b: number): number {
  let out = 0;
  for (let k = a; k < b && out !== 7; k++) {
    const c = s.charCodeAt(k);
    if (isDigit(c)) out |= 1;
    else if (isLower(c)) out |= 2;
    else if (isUpper(c)) out |= 4;
  }
  return out;
}

/**
 * Where the line that the line feed `i` ends has its last character: before a carriage return, and before a `\\`
 * of a continuation (always one: an escape the break cuts, `\\` then `u0033...`, reads so too).
 */
function lineEnd(s: string, i: number): number {
  let end = i;
  if (end > 0 && s.charCodeAt(end - 1) === 13) end--;
  if (end > 0 && s.charCodeAt(end - 1) === 92) end--;
  return end;
}

/** Whether classes of a chain's runs make it read: a letter and a digit, or letters of both cases (a token of letters, `hf_...`). */
const mayBeToken = (cls: number): boolean => ((cls & 1) !== 0 && (cls & 6) !== 0) || (cls & 6) === 6;

/** Builds one text of pieces of `s`, separators and removed breaks between them, with where each character came from. */
class Stretch {
  readonly #texts: string[] = [];
  /** Per piece, where it starts in the text and in `s`. */
  readonly #starts: number[] = [];
  readonly #sources: number[] = [];
  readonly seams: number[] = [];
  length = 0;
  constructor(readonly s: string) {}
  /** The characters [a, b) of `s`. */
  piece(a: number, b: number): void {
    if (b <= a) return;
    this.#texts.push(this.s.slice(a, b));
    this.#starts.push(this.length);
    this.#sources.push(a);
    this.length += b - a;
  }
  /** A removed break: the next piece runs on from the one before. */
  seam(): void {
    this.seams.push(this.length);
  }
  /** A line break between two readings: a token ends there. */
  separate(): void {
    this.#texts.push('\n');
    this.length++;
  }
  done(): Unwrapped {
    const starts = this.#starts;
    const sources = this.#sources;
    return {
      text: this.#texts.join(''),
      seams: this.seams,
      sourceOf: (at) => {
        // The last piece that starts at or before `at` (a separator after a piece maps past its end; see below).
        let lo = 0;
        let hi = starts.length - 1;
        while (lo < hi) {
          const mid = (lo + hi + 1) >> 1;
          if (starts[mid]! <= at) lo = mid;
          else hi = mid - 1;
        }
        return sources[lo]! + (at - starts[lo]!);
      },
    };
  }
}

const NONE: readonly Unwrapped[] = Object.freeze([]);
const NO_PLACES: readonly number[] = Object.freeze([]);

/**
 * Pieces [a, b) of `pieces` read as one token, a seam between each two, then a separator: `limit` characters at most,
 * the first ones or (`fromEnd`) the last ones.
 */
function readPieces(st: Stretch, pieces: readonly (readonly [number, number])[], a: number, b: number, limit: number, fromEnd: boolean): void {
  if (fromEnd) {
    // The pieces from k on, the first of them in part: `limit` characters in all.
    let k = b;
    let taken = 0;
    while (k > a && taken < limit) {
      k--;
      taken += pieces[k]![1] - pieces[k]![0];
    }
    for (let j = k; j < b; j++) {
      if (j > k) st.seam();
      const [p, q] = pieces[j]!;
      st.piece(j === k ? p + Math.max(0, taken - limit) : p, q);
    }
  } else {
    let left = limit;
    for (let j = a; j < b && left > 0; j++) {
      if (j > a) st.seam();
      const [p, q] = pieces[j]!;
      const end = Math.min(q, p + left);
      st.piece(p, end);
      left -= end - p;
    }
  }
  st.separate();
}

/**
 * The stretches of `s` around line breaks that may cut a token, read with breaks removed. Breaks follow one another
 * in a chain where the line between them is one run; a chain whose runs make MIN_WRAPPED characters or more, with a
 * letter and a digit or letters of both cases among them, is read: each of its breaks alone (its two runs and a
 * character on each side: a token across one break), and, of two breaks or more, all of them removed (a token across
 * several lines: a JWT wrapped at a terminal's width), and again without its first line, its last or both, WRAP_RUN
 * characters of each (a token that starts the line after a command, `creds` then `AKIA4D` then `OWM6...`, or ends its
 * line before a word the chain runs on into). Readings go into texts of about WRAP_TEXT characters; a chain is cut at
 * WRAP_TEXT. Linear in `s`: a run is walked from each break next to it, WRAP_RUN characters at most (a line feed ends
 * it, so each character is walked twice at most), and read at most six times (about four and a half on chains of three
 * or four short lines, the most a text can make it). The line feeds at `apart` (sorted) are read as no break: those
 * between strings joined to be read at once (DetectionCache.joinShown).
 * @throws DetectionStopped when `stop` says the decision's time is spent
 */
export function unwrappedStretches(s: string, stop?: () => boolean, apart: readonly number[] = NO_PLACES): readonly Unwrapped[] {
  // (Most strings hold no line break: nothing is made for them.)
  const first = s.indexOf('\n');
  if (first < 0) return NONE;
  // The next of `apart` (sorted) not before the break at hand.
  let skip = 0;
  const out: Unwrapped[] = [];
  let alone = new Stretch(s);
  let chains = new Stretch(s);
  /** The chain's breaks, and its pieces of `s` (between them its breaks). */
  let breaks: Break[] = [];
  let chain: [number, number][] = [];
  let chainLength = 0;
  let cls = 0;
  const endChain = () => {
    const last = breaks[breaks.length - 1];
    if (last !== undefined && chainLength >= MIN_WRAPPED && mayBeToken(cls)) {
      for (const br of breaks) {
        alone.piece(Math.max(0, br.from - 1), br.end);
        alone.seam();
        alone.piece(br.next, Math.min(s.length, br.to + 1));
        alone.separate();
      }
      if (alone.length >= WRAP_TEXT) {
        out.push(alone.done());
        alone = new Stretch(s);
      }
    }
    if (last !== undefined && breaks.length >= 2 && chainLength >= MIN_WRAPPED && mayBeToken(cls)) {
      // All its breaks removed, the last run and the character after it read too; and without its first line, its
      // last or both, WRAP_RUN characters of each.
      chain[chain.length - 1]![1] = Math.min(s.length, last.to + 1);
      const n = chain.length;
      readPieces(chains, chain, 0, n, Infinity, false);
      readPieces(chains, chain, 1, n, WRAP_RUN, false);
      readPieces(chains, chain, 0, n - 1, WRAP_RUN, true);
      if (n >= 4) readPieces(chains, chain, 1, n - 1, WRAP_RUN, false);
      if (chains.length >= WRAP_TEXT) {
        out.push(chains.done());
        chains = new Stretch(s);
      }
    }
    breaks = [];
    chain = [];
    chainLength = 0;
    cls = 0;
  };
  let steps = 0;
  for (let i = first; i >= 0; i = s.indexOf('\n', i + 1)) {
    if (stop !== undefined && (++steps & ASK_MASK) === 0 && stop()) throw new DetectionStopped('the time for this decision ran out while reading lines a token may run across');
    // (A line break between two strings joined to be read at once is no place a token runs across.)
    while (skip < apart.length && apart[skip]! < i) skip++;
    if (skip < apart.length && apart[skip] === i) continue;
    const br = breakAt(s, i);
    if (br === undefined) continue;
    const last = breaks[breaks.length - 1];
    // The chain goes on where this break's run before it is the whole line after the last break.
    if (last !== undefined && br.from === last.next && last.to === br.end && chainLength < WRAP_TEXT) chain[chain.length - 1]![1] = br.end;
    else {
      endChain();
      chain.push([Math.max(0, br.from - 1), br.end]);
      chainLength = br.end - br.from;
      cls = classes(s, br.from, br.end);
    }
    chain.push([br.next, br.to]);
    chainLength += br.to - br.next;
    if (cls !== 7) cls |= classes(s, br.next, br.to);
    breaks.push(br);
  }
  endChain();
  if (alone.length > 0) out.push(alone.done());
  if (chains.length > 0) out.push(chains.done());
  return out;
}

/**
 * Where a program's string literals meet in a concatenation: a closing quote, an operator that joins strings (`+`,
 * PHP's `.`, Lua's `..`, SQL's `||`, VB's `&`, or none: Python's and C's literals side by side) between blanks and one
 * line break at most, an opening quote of the same kind. `"ghp_" + "R8kL..."` is one token to a model that reads the
 * program.
 */
const JUNCTION = /(["'`])[ \t]{0,16}(?:\r?\n[ \t]{0,64})?(?:\+|\.\.?|\|\||&)?[ \t]{0,16}(?:\r?\n[ \t]{0,64})?\1/g;
/** Most characters of a literal read on each side of a junction. */
const LITERAL_RUN = 1024;

/**
 * The stretches of `s` where string literals are concatenated, each chain of them read as one token: its literals'
 * characters with the junctions between them removed (a seam at each). A literal is read back from a junction to its
 * opening quote and on to its closing one, LITERAL_RUN characters at most, through no blank, quote, backslash or line
 * break (a token's characters); a chain ends where a literal does not meet the next. A junction across a line feed
 * of `apart` (sorted: between strings joined to be read at once) is none. Linear in `s`: one search for the junctions,
 * each literal walked from the junctions on either side of it.
 * @throws DetectionStopped when `stop` says the decision's time is spent
 */
export function concatenatedStretches(s: string, stop?: () => boolean, apart: readonly number[] = NO_PLACES): readonly Unwrapped[] {
  if (!s.includes('"') && !s.includes("'") && !s.includes('`')) return NONE;
  const out: Unwrapped[] = [];
  let st = new Stretch(s);
  // The chain being read: where its last literal's closing quote stands, or -1.
  let open = -1;
  let steps = 0;
  JUNCTION.lastIndex = 0;
  for (let m = JUNCTION.exec(s); m !== null; m = JUNCTION.exec(s)) {
    if (stop !== undefined && (++steps & ASK_MASK) === 0 && stop()) throw new DetectionStopped('the time for this decision ran out while reading concatenated literals');
    const close = m.index;
    const reopen = m.index + m[0].length - 1;
    // (A line feed between strings joined to be read at once, `apart`, is no junction. An empty literal on either side,
    // `x = ""`, is none either: it makes no piece, below.)
    if (holdsOneOf(apart, close, reopen)) {
      JUNCTION.lastIndex = close + 1;
      continue;
    }
    // The literal before: back from its closing quote to its opening one.
    let a = close;
    while (a > 0 && close - a < LITERAL_RUN && isLiteralChar(s.charCodeAt(a - 1))) a--;
    const opened = a > 0 && s.charCodeAt(a - 1) === s.charCodeAt(close);
    // The literal after: on to its closing quote.
    let b = reopen + 1;
    while (b < s.length && b - reopen <= LITERAL_RUN && isLiteralChar(s.charCodeAt(b))) b++;
    const closed = b < s.length && s.charCodeAt(b) === s.charCodeAt(reopen);
    if (!opened || !closed || a === close || b === reopen + 1) {
      if (open >= 0) st.separate();
      open = -1;
      // (The closing quote may open the next junction's literal.)
      JUNCTION.lastIndex = reopen;
      continue;
    }
    // (A chain goes on where this junction's literal before is the last one's literal after.)
    if (open !== close) {
      if (open >= 0) st.separate();
      st.piece(a, close);
    }
    st.seam();
    st.piece(reopen + 1, b);
    open = b;
    // The next junction may start at this literal's closing quote.
    JUNCTION.lastIndex = b;
    if (st.length >= WRAP_TEXT) {
      st.separate();
      out.push(st.done());
      st = new Stretch(s);
      open = -1;
    }
  }
  if (st.length > 0) {
    st.separate();
    out.push(st.done());
  }
  return out;
}

/** Whether one of `places` (sorted) lies in [from, to]: one search. */
function holdsOneOf(places: readonly number[], from: number, to: number): boolean {
  let lo = 0;
  let hi = places.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (places[mid]! < from) lo = mid + 1;
    else hi = mid;
  }
  return lo < places.length && places[lo]! <= to;
}

/** A character a literal read as a token holds: not a blank, a line break, a quote or a backslash (an escape reads otherwise). */
function isLiteralChar(c: number): boolean {
  return c > 32 && c !== 34 && c !== 39 && c !== 96 && c !== 92 && c !== 127;
}

/** Three characters in a row each alone between blanks: where a value spelled out may stand. */
const SPACED_HINT = /[ \u00a0]\S[ \u00a0]\S[ \u00a0]\S[ \u00a0]/;
/**
 * A value spelled out a character at a time, one blank (a space or a no-break space) between each two: 16 characters
 * or more, each alone between blanks, a quote or a bracket before the first and a sentence's mark after the last
 * (`A K I A Z 3 M J ...`, as a model is asked to write a value so that no filter reads it, and reads back whole).
 */
const SPACED = /(?<=^|[\s"'(\[])(?:\S[ \u00a0]){15,}\S(?=$|[\s.,;:!?)\]"'])/g;

/**
 * The stretches of `s` where a value is spelled out a character at a time (SPACED), each read as one token: its
 * characters with the blanks between them removed (a seam at each). Linear in `s`: one search, each character of a run
 * read once.
 * @throws DetectionStopped when `stop` says the decision's time is spent
 */
export function spacedStretches(s: string, stop?: () => boolean): readonly Unwrapped[] {
  // (One native search first: three characters alone between blanks, which prose seldom holds.)
  if (s.length < 31 || !SPACED_HINT.test(s)) return NONE;
  const out: Unwrapped[] = [];
  let st = new Stretch(s);
  let steps = 0;
  SPACED.lastIndex = 0;
  for (let m = SPACED.exec(s); m !== null; m = SPACED.exec(s)) {
    const end = m.index + m[0].length;
    for (let i = m.index; i < end; i += 2) {
      if (stop !== undefined && (++steps & ASK_MASK) === 0 && stop()) throw new DetectionStopped('the time for this decision ran out while reading a value spelled out');
      if (i > m.index) st.seam();
      // (Each piece one code unit: a character of two, a surrogate pair, ends a run where it stands, and no credential
      // holds one.)
      st.piece(i, i + 1);
    }
    st.separate();
    if (st.length >= WRAP_TEXT) {
      out.push(st.done());
      st = new Stretch(s);
    }
  }
  if (st.length > 0) out.push(st.done());
  return out;
}
