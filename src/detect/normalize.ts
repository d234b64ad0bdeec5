/**
 * Text as the detectors read it (docs/behaviour/labels-and-detectors.md#normalization):
 * tag characters read as the ASCII they stand for, every other character
 * drawn as nothing (zero-width characters, the soft hyphen, bidirectional
 * and invisible controls, variation selectors) removed, each character in its
 * NFKC form, Unicode's confusables of ASCII letters and digits folded to
 * them (the table of the `unhomoglyph` package, built from Unicode's
 * confusables.txt; only entries whose prototype is one ASCII letter or
 * digit, and of those whose NFKC form is one, that form), marks drawn on
 * ASCII characters removed and letters written with
 * marks read as their base letter (where they could hide a credential,
 * mayChange), and one round of percent-decoding (a run of escapes read as
 * UTF-8, `%25` before two hex digits read through: `%2541` is `A`), of HTML character references (`&#65;`, `&#x41;`, `&amp;`) and of
 * JavaScript and JSON escapes (`\u0041`, `\x41`, `\"`, `\n`, each after
 * any run of backslashes, so a text escaped twice reads as once); a
 * terminal's escape sequences (colours, cursor moves, hyperlinks: what a
 * shell's output holds and a terminal draws as nothing) removed. A credential
 * written `AKIA\u200bIOSF...`, in fullwidth or Cyrillic letters, as
 * `%41KIA...`, coloured by `grep --color`, or in a JSON string's
 * `\"DB_PASSWORD=...\"\n` reads as itself.
 *
 * The result keeps, for every character, where it came from in the input,
 * so a span found in the normalized text masks the characters it came
 * from. One pass, each character looked at once: linear in the text.
 */
import { isUtf8 } from 'node:buffer';
import { createRequire } from 'node:module';
import { decodeEntity } from 'html-entities';
import { ASK_MASK, hexValue, isAlnum, isDigit, nextAt, stringOf } from './chars.js';
import { DetectionStopped } from './ruleset.js';

const require = createRequire(import.meta.url);
const CONFUSABLES = require('unhomoglyph/data.json') as Record<string, string>;

/** Non-ASCII characters whose confusable prototype is one ASCII letter or digit. */
const FOLD = new Map<number, string>();
for (const [from, to] of Object.entries(CONFUSABLES)) {
  if (!/^[A-Za-z0-9]$/.test(to)) continue;
  const cp = from.codePointAt(0)!;
  if (cp < 0x80 || String.fromCodePoint(cp) !== from) continue;
  // A character whose compatibility form is one ASCII letter or digit reads as that form: the table's prototype is
  // the skeleton of a family (`l` for `I`, `l` and `1`; `O` for `O` and `0`), which NFKC tells apart (`𝐈` is `I`,
  // `𝟎` is `0`, `ſ` is `s`).
  const compatible = from.normalize('NFKC');
  if (/^[A-Za-z0-9]$/.test(compatible)) FOLD.set(cp, compatible);
  // The table's prototype of `I`, `l` and `1` is `l`: a capital letter that looks like them reads as `I`.
  else FOLD.set(cp, to === 'l' && from !== from.toLowerCase() ? 'I' : to);
}

/**
 * Removed before detection: every character Unicode says is drawn as
 * nothing (Default_Ignorable_Code_Point, from the engine's Unicode data):
 * the zero-width space, non-joiner and joiner, the soft hyphen, the word
 * joiner and invisible operators, bidirectional marks and controls,
 * variation selectors, fillers, the BOM, tag characters. Each is known per
 * code point after its first sight.
 */
const IGNORABLE = /^\p{Default_Ignorable_Code_Point}$/u;
/** Every default-ignorable character of a text, for a replace. */
export const IGNORABLE_CHARS = /\p{Default_Ignorable_Code_Point}/gu;
/**
 * Whether one code point matches `re` (a pattern of one character), known
 * per code point after its first sight (BMP in a table, others in a Map
 * of at most 65,536); below `from`, none does.
 */
function perCodePoint(re: RegExp, from: number): (cp: number) => boolean {
  /** Per BMP code point: 0 not yet known, 1 no, 2 yes. */
  const bmp = new Uint8Array(65536);
  const astral = new Map<number, boolean>();
  return (cp) => {
    if (cp < from) return false;
    if (cp <= 0xffff) {
      let st = bmp[cp]!;
      if (st === 0) {
        st = re.test(String.fromCharCode(cp)) ? 2 : 1;
        bmp[cp] = st;
      }
      return st === 2;
    }
    let v = astral.get(cp);
    if (v === undefined) {
      v = re.test(String.fromCodePoint(cp));
      if (astral.size < 65536) astral.set(cp, v);
    }
    return v;
  };
}

const isInvisible = perCodePoint(IGNORABLE, 0x80);

/**
 * Tag characters U+E0020..U+E007E are drawn as nothing, yet each stands for
 * the ASCII character at its place less 0xE0000, and a model reads them as
 * such: text hidden from the user, not from the model. Before detection
 * each is read as that character (the other tags, U+E0001 and U+E007F, are
 * removed as ignorable).
 */
export function tagAscii(cp: number): number {
  return cp >= 0xe0020 && cp <= 0xe007e ? cp - 0xe0000 : -1;
}

const HAS_TAG = /[\u{E0020}-\u{E007E}]/u;
/** Whether a text holds a tag character (it reads two ways: tags as ASCII, and removed). */
export const hasTags = (s: string): boolean => HAS_TAG.test(s);

/** Tag characters a text hides, for a replace with readTag. */
export const TAG_CHARS = /[\u{E0020}-\u{E007E}]/gu;
export const readTag = (c: string): string => String.fromCharCode(c.codePointAt(0)! - 0xe0000);

/** A text that may read differently normalized: one with a non-ASCII character, a percent-escape, an escape or a terminal's escape sequence. */
const MAY_CHANGE = /[^\x00-\x7f]|%[0-9A-Fa-f]{2}|&#?[0-9A-Za-z]{1,32};|\\[ux][0-9A-Fa-f]{2}|\\[nrt"'/]|\x1b/;

/**
 * A terminal's escape sequence at the place it is tried, drawn as nothing:
 * a control sequence (ESC `[` or CSI, parameters, intermediates, a final
 * byte: colours, cursor moves, erasing), an operating system command (ESC
 * `]` to BEL or ESC `\`: a title, a hyperlink's target), or ESC and an
 * intermediate and final byte (a character set chosen). Each part bounded:
 * one try reads at most 512 characters, and stops at the next ESC.
 */
const TERMINAL_AT = /(?:\x1b\[|\x9b)[0-?]{0,32}[ -/]{0,8}[@-~]|\x1b\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)|\x1b[ -/]{0,8}[0-Z\\^-~]/y;
/**
 * The rest of a terminal's escape sequence after an ESC written as an escape (`\u001b[32m`: coloured output in a JSON
 * string), read as TERMINAL_AT reads it after the character; an operating system command ends at BEL or ESC `\`,
 * either written as an escape too, escaped as often as the ESC before (where the ESC's escape holds r backslashes,
 * the `\` after it holds 2r).
 */
const TERMINAL_REST = /\[[0-?]{0,32}[ -/]{0,8}[@-~]|\][^\x07\x1b\\]{0,512}(?:\x07|\x1b\\|(\\{1,16})(?:u0007|x07|(?:u001[bB]|x1[bB])\1\1))|[ -/]{0,8}[0-Z^-~]/y;
/** Every terminal escape sequence of a text, for a replace (flows read values so). */
export const TERMINAL_ESCAPES = new RegExp(TERMINAL_AT.source, 'g');
/** A character a terminal's escape sequence starts with. */
const isTerminalStart = (c: number): boolean => c === 0x1b || c === 0x9b;

/**
 * An escape a reader reads through, at the place it is tried: an HTML
 * character reference (`&#65;`, `&#x41;`, `&amp;`, a name of HTML5's:
 * namedReference) or a JavaScript/JSON escape (`\u0041`, `\x41`).
 */
const ESCAPE_AT = /&#([0-9]{1,7});|&#[xX]([0-9A-Fa-f]{1,6});|&([A-Za-z][A-Za-z0-9]{1,31});|\\u([0-9A-Fa-f]{4})|\\x([0-9A-Fa-f]{2})/y;
const ESCAPE_ANY = /&#?[0-9A-Za-z]{1,32};|\\[ux][0-9A-Fa-f]{2}|\\[nrt"'/]|[\x1b\x9b]/;
/** What a JSON or JavaScript escape of one letter stands for (`\n`, `\"`...). */
const SHORT_ESCAPES: Readonly<Record<string, number>> = { n: 10, r: 13, t: 9, '"': 34, "'": 39, '/': 47 };
/** Most backslashes read before an escape (a text escaped four times writes fifteen). */
const MAX_BACKSLASHES = 16;
const NAMED: Readonly<Record<string, number>> = { amp: 38, lt: 60, gt: 62, quot: 34, apos: 39, nbsp: 0xa0 };
/**
 * The character an HTML5 named reference stands for (`&shy;`, `&ZeroWidthSpace;`, `&commat;`, `&period;`: one lookup in
 * the html-entities package's table of the names the standard defines), or undefined for a name that is none (the
 * table gives the reference back) or stands for two characters.
 */
function namedReference(name: string): number | undefined {
  const reference = `&${name};`;
  const text = decodeEntity(reference, { level: 'html5' });
  const cp = text.codePointAt(0)!;
  return text === reference || text.length !== (cp > 0xffff ? 2 : 1) ? undefined : cp;
}

/** Where a character reference or an escape may start. */
const ESCAPE_START = /[&\\]/g;

/** `s` with one round of character references and escapes read (escapeAt), where no position need map back (flows). */
export function decodeEscapes(s: string): string {
  let out = '';
  let from = 0;
  ESCAPE_START.lastIndex = 0;
  for (let m = ESCAPE_START.exec(s); m !== null; m = ESCAPE_START.exec(s)) {
    const e = escapeAt(s, m.index);
    if (e === undefined) continue;
    out += s.slice(from, m.index) + String.fromCodePoint(e.cp);
    from = m.index + e.length;
    ESCAPE_START.lastIndex = from;
  }
  return from === 0 ? s : out + s.slice(from);
}

/**
 * The escape at `i` of `s`: the code point it stands for and its length, or undefined (none there, or one that stands
 * for no character). Backslashes before an escape are read with it (a text escaped again doubles them: `\\\"` in a
 * JSON string written in a JSON string is `"`).
 */
function escapeAt(s: string, i: number): { cp: number; length: number } | undefined {
  if (s.charCodeAt(i) === 92 /* \\ */) {
    let j = i + 1;
    while (j < s.length && j - i < MAX_BACKSLASHES && s.charCodeAt(j) === 92) j++;
    if (s.charCodeAt(j) === 92) return undefined;
    const short = SHORT_ESCAPES[s.charAt(j)];
    if (short !== undefined) return { cp: short, length: j + 1 - i };
    if (j - i > 1) {
      const e = escapeAt(s, j - 1);
      return e === undefined ? undefined : { cp: e.cp, length: e.length + j - 1 - i };
    }
  }
  ESCAPE_AT.lastIndex = i;
  const m = ESCAPE_AT.exec(s);
  if (m === null) return undefined;
  let cp: number | undefined;
  if (m[1] !== undefined) cp = Number(m[1]);
  else if (m[2] !== undefined) cp = parseInt(m[2], 16);
  else if (m[3] !== undefined) cp = NAMED[m[3].toLowerCase()] ?? namedReference(m[3]);
  else if (m[5] !== undefined) cp = parseInt(m[5], 16);
  else {
    cp = parseInt(m[4]!, 16);
    // A surrogate pair written as two escapes is one character; a lone surrogate is none.
    if (cp >= 0xd800 && cp <= 0xdbff) {
      ESCAPE_AT.lastIndex = i + 6;
      const low = ESCAPE_AT.exec(s);
      const lo = low?.[4] === undefined ? -1 : parseInt(low[4], 16);
      return lo >= 0xdc00 && lo <= 0xdfff ? { cp: 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00), length: 12 } : undefined;
    }
  }
  if (cp === undefined || cp === 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return undefined;
  return { cp, length: m[0].length };
}

/**
 * Marks drawn on a letter (Unicode's general category M: the acute accent,
 * the dot above, the combining overlays) and letters written with them
 * (`á`, `ǵ`): a model reads `g\u0301h\u0301p\u0301_` as `ghp_`. A mark directly after a
 * printable ASCII character of the normalized text is removed; a letter whose
 * canonical decomposition is one ASCII letter or digit (or a confusable of
 * one) and marks reads as that letter. Marks after any other character are
 * kept (they are part of the word of another script).
 */
const MARK = /^\p{M}$/u;
const MARKS = /\p{M}/gu;
const isMark = perCodePoint(MARK, 0x300);

const bareCache = new Map<number, string | null>();
/** The ASCII letter or digit `cp` is written on with marks (`á` → `a`), or undefined. */
function bareLetter(cp: number): string | undefined {
  if (cp < 0xc0) return undefined;
  let out = bareCache.get(cp);
  if (out === undefined) {
    const bare = String.fromCodePoint(cp).normalize('NFD').replace(MARKS, '');
    const first = bare.codePointAt(0);
    out = null;
    if (first !== undefined && bare.length === (first > 0xffff ? 2 : 1) && first !== cp) {
      if (first < 0x80) out = isAlnum(first) ? bare : null;
      else out = FOLD.get(first) ?? null;
    }
    if (bareCache.size < 65536) bareCache.set(cp, out);
  }
  return out ?? undefined;
}

/** One bit per BMP code point that normalizing removes or folds (beyond the BMP: checked in the Map). */
const FOLDS_BMP = new Uint8Array(8192);
for (const cp of FOLD.keys()) if (cp <= 0xffff) FOLDS_BMP[cp >> 3]! |= 1 << (cp & 7);
/**
 * Per BMP code point: 0 not yet known, 1 normalizing keeps it, 2 normalizing changes it, 3 a mark, 4 a letter
 * written with marks (normalizing changes these where they stand, mayChange).
 */
const BMP_STATE = new Uint8Array(65536);
const KEEPS = 1;
const CHANGES = 2;
const A_MARK = 3;
const MARKED_LETTER = 4;

function stateOf(c: number): number {
  let st = BMP_STATE[c]!;
  if (st === 0) {
    const ch = String.fromCharCode(c);
    if ((FOLDS_BMP[c >> 3]! & (1 << (c & 7))) !== 0 || isInvisible(c) || (c < 0xd800 || c > 0xdfff ? ch.normalize('NFKC') !== ch : false)) st = CHANGES;
    else if (isMark(c)) st = A_MARK;
    else if (bareLetter(c) !== undefined) st = MARKED_LETTER;
    else st = KEEPS;
    BMP_STATE[c] = st;
  }
  return st;
}

/** A printable ASCII character other than the space: a mark drawn on one is removed. */
const isAsciiGlyph = (u: number): boolean => u > 32 && u < 127;
/** Whether the ASCII unit `u` ends a word for the reckoning of letters written with marks: a blank or a control. */
const endsWord = (u: number): boolean => u <= 32 || u === 127;

/**
 * Whether normalizing could change `s`: a percent-escape, or a character
 * it removes, folds or gives another NFKC form (known per code point after
 * its first sight). One loop over the text, a table lookup per non-ASCII
 * character.
 *
 * Marks and letters written with them change a text only where they could
 * hide a credential: a mark drawn on an ASCII character; a letter written
 * with marks in a word (a run between blanks) that holds an ASCII digit or
 * an `@` (an address, `jos\u00e9@example.com`, reads whole), or 4 such letters among
 * 16 characters or more. Words of a language
 * written with accents (`résumé`, `Überschreitungsmöglichkeiten`) and marks of
 * another script (Devanagari's vowel signs) leave the text read once;
 * where a text is normalized for another reason, its marked letters are
 * read as their letters all the same.
 */
export function mayChange(s: string): boolean {
  if (!MAY_CHANGE.test(s)) return false;
  if (s.includes('%') && /%[0-9A-Fa-f]{2}/.test(s)) return true;
  if ((s.includes('&') || s.includes('\\') || s.includes('\x1b') || s.includes('\x9b')) && ESCAPE_ANY.test(s)) return true;
  // The word being read: its length, its ASCII digits and at-signs, its letters written with marks.
  let wordLength = 0;
  let digitsOrAt = 0;
  let marked = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) {
      if (endsWord(c)) {
        if (hidesOne(marked, digitsOrAt, wordLength)) return true;
        wordLength = digitsOrAt = marked = 0;
      } else {
        wordLength++;
        if (isDigit(c) || c === 64 /* @ */) digitsOrAt++;
      }
      continue;
    }
    wordLength++;
    if (c >= 0xd800 && c <= 0xdbff) {
      const cp = s.codePointAt(i)!;
      if (FOLD.has(cp) || isInvisible(cp) || nfkc(cp) !== String.fromCodePoint(cp)) return true;
      if (isMark(cp) && i > 0 && isAsciiGlyph(s.charCodeAt(i - 1))) return true;
      i++;
      continue;
    }
    const st = stateOf(c);
    if (st === CHANGES) return true;
    if (st === A_MARK && i > 0 && isAsciiGlyph(s.charCodeAt(i - 1))) return true;
    if (st === MARKED_LETTER) marked++;
  }
  return hidesOne(marked, digitsOrAt, wordLength);
}

/** Whether a word with `marked` letters written with marks could be a credential or an address disguised by them. */
function hidesOne(marked: number, digitsOrAt: number, wordLength: number): boolean {
  return marked > 0 && (digitsOrAt > 0 || (marked >= 4 && wordLength >= 16));
}

const nfkcCache = new Map<number, string>();
function nfkc(cp: number): string {
  let out = nfkcCache.get(cp);
  if (out === undefined) {
    out = String.fromCodePoint(cp).normalize('NFKC');
    if (nfkcCache.size < 65536) nfkcCache.set(cp, out);
  }
  return out;
}

/** The bytes of one run of percent-escapes (64 at most, read as one). */
const PERCENT_BYTES = new Uint8Array(64);
/** Where each byte's escape starts in the text, and after the last, where the run ends. */
const PERCENT_AT = new Uint32Array(65);
/** Most `25` pairs read through in one escape (`%2525...41`): a text percent-encoded up to this many times over reads as once. */
const PERCENT_DEPTH = 8;

/** Decodes bytes isUtf8 passed (a decoder that throws on the others costs some 5 µs a throw: `%FF ` again and again). */
const UTF8 = new TextDecoder('utf-8');

/** A normalized text: `text`, and for its UTF-16 unit `i` the input's units [from[i], to[i]) it came from. */
export interface Normalized {
  text: string;
  from: Uint32Array;
  to: Uint32Array;
  /** Whether the text held tag characters read as ASCII: it also reads otherwise, with them removed (`tags: 'drop'`). */
  tags: boolean;
}

/**
 * How tag characters are read: as the ASCII they stand for (`read`, the
 * default) or removed as drawn as nothing (`drop`). A model may do either,
 * so a text that holds them is scanned both ways.
 */
export type TagReading = 'read' | 'drop';

/** Where the next character that normalizing may change is: a non-ASCII one, `%`, `&`, a backslash or ESC. */
const SPECIAL = /[^\x00-\x7f]|[%&\\\x1b]/g;

/** Whether normalizing may read the character of code unit `c` as another, or as none: SPECIAL's class, one character. */
export function mayBeReadOtherwise(c: number): boolean {
  return c >= 128 || c === 37 || c === 38 || c === 92 || c === 27;
}

/**
 * Normalizations kept for the next detector, by string: both detectors
 * read the same strings of a decision, in either order (every text's
 * PII, then every text's credentials), so the second reads what the first
 * made. `null` where normalizing changes nothing. Strings of at most
 * KEEP_MAX characters, at most KEEP_CHARS in all (the position maps hold
 * some 10 bytes a character): past that the table starts again empty.
 */
const kept = new Map<string, Normalized | null>();
let keptChars = 0;

/** Longest string whose normalization is kept for the next detector: a large one's position maps are not held on to. */
const KEEP_MAX = 65536;
/** Most characters of strings whose normalizations are kept at once. */
const KEEP_CHARS = 131072;

/**
 * `s` normalized, or undefined when normalizing changes nothing (the common case: checked with one native search).
 * `stop` is asked every 4,096 special characters (a text made of percent-escapes or confusables takes some 80 ms a
 * MB). @throws DetectionStopped
 */
export function normalizeForDetection(s: string, stop?: () => boolean, tags: TagReading = 'read'): Normalized | undefined {
  if (tags === 'drop') return normalizeUncached(s, stop, tags);
  const hit = s.length <= KEEP_MAX ? kept.get(s) : undefined;
  if (hit !== undefined) return hit ?? undefined;
  const out = normalizeUncached(s, stop);
  if (s.length <= KEEP_MAX) {
    if (keptChars + s.length > KEEP_CHARS) {
      kept.clear();
      keptChars = 0;
    }
    kept.set(s, out ?? null);
    keptChars += s.length;
  }
  return out;
}

function normalizeUncached(s: string, stop: (() => boolean) | undefined, tags: TagReading = 'read'): Normalized | undefined {
  if (!mayChange(s)) return undefined;
  // The text's UTF-16 units as they are made, and for each the input's units it came from: typed arrays, grown as
  // needed (a text crowded with escapes or confusables makes no string or object per character).
  let cap = s.length + 64;
  let units = new Uint16Array(cap);
  let from = new Uint32Array(cap);
  let to = new Uint32Array(cap);
  let n = 0;
  let changed = false;
  let sawTags = false;
  const room = (k: number) => {
    if (n + k <= cap) return;
    cap = Math.max(cap * 2, n + k);
    const u = new Uint16Array(cap);
    u.set(units.subarray(0, n));
    units = u;
    const f = new Uint32Array(cap);
    f.set(from.subarray(0, n));
    from = f;
    const t = new Uint32Array(cap);
    t.set(to.subarray(0, n));
    to = t;
  };
  /**
   * Where the terminal escape sequences removed just before the next character start, or -1: that character stands
   * for them too, so a value read after its colour is found from where the colour starts (in a block before it, where
   * the sequence is cut at a seam, as much as in its own).
   */
  let carry = -1;
  /** Where the next character made starts in the input, when it is read from `a`. */
  const startOf = (a: number): number => {
    if (carry < 0) return a;
    const c = carry;
    carry = -1;
    return c;
  };
  /** The input's units [a, b) as written (ASCII): each character from itself. */
  const copy = (a: number, b: number) => {
    if (b <= a) return;
    room(b - a);
    for (let m = a; m < b; m++) {
      units[n] = s.charCodeAt(m);
      from[n] = m === a ? startOf(m) : m;
      to[n++] = m + 1;
    }
  };
  /** One UTF-16 unit `u` standing for the input's units [a, b). */
  const emitUnit = (u: number, a: number, b: number) => {
    room(1);
    units[n] = u;
    from[n] = startOf(a);
    to[n++] = b;
  };
  const emit = (t: string, a: number, b: number) => {
    room(t.length);
    const start = startOf(a);
    for (let k = 0; k < t.length; k++) {
      units[n] = t.charCodeAt(k);
      from[n] = start;
      to[n++] = b;
    }
  };
  /** A character read as `cp` (non-ASCII) from the input's units [a, b), written as `cp` when `asWritten`: dropped, folded or in its NFKC form. */
  const fold = (cp: number, a: number, b: number, asWritten: boolean) => {
    const tag = tags === 'read' ? tagAscii(cp) : -1;
    if (tag >= 0) {
      changed = true;
      sawTags = true;
      emitUnit(tag, a, b);
      return;
    }
    if (isInvisible(cp)) {
      changed = true;
      return;
    }
    if (n > 0 && isMark(cp) && isAsciiGlyph(units[n - 1]!)) {
      // A mark drawn on the ASCII character before it (or on the marks already removed after it): it stands with that
      // character, so what masks the character masks its marks.
      changed = true;
      to[n - 1] = b;
      return;
    }
    const folded = FOLD.get(cp);
    let out: string;
    if (folded !== undefined) out = folded;
    else {
      out = nfkc(cp);
      // A compatibility form may itself be a confusable (e.g. a mathematical letter that NFKC makes Greek), or a
      // letter written with marks.
      if (out.length <= 2) {
        const inner = out.codePointAt(0)!;
        const again = inner >= 0x80 && out.length === (inner > 0xffff ? 2 : 1) ? (FOLD.get(inner) ?? bareLetter(inner)) : undefined;
        if (again !== undefined) out = again;
      }
    }
    if (!asWritten || out.length !== (cp > 0xffff ? 2 : 1) || out.codePointAt(0) !== cp) changed = true;
    emit(out, a, b);
  };
  let i = 0;
  let steps = 0;
  while (i < s.length) {
    if (stop !== undefined && (++steps & ASK_MASK) === 0 && stop()) throw new DetectionStopped('the time for this decision ran out while normalizing a text');
    const at = nextAt(SPECIAL, s, i);
    copy(i, at);
    i = at;
    if (i >= s.length) break;
    const c = s.charCodeAt(i);
    if (isTerminalStart(c)) {
      // A terminal's escape sequence is drawn as nothing: removed (a span across it masks it with what it stood in).
      TERMINAL_AT.lastIndex = i;
      if (TERMINAL_AT.test(s)) {
        changed = true;
        if (carry < 0) carry = i;
        i = TERMINAL_AT.lastIndex;
        continue;
      }
      if (c === 0x1b) {
        copy(i, i + 1);
        i++;
        continue;
      }
    }
    if (c === 38 /* & */ || c === 92 /* \\ */) {
      // One round of character references and escapes: each character stands for its whole escape.
      const e = escapeAt(s, i);
      if (e?.cp === 0x1b) {
        // An escaped ESC and the rest of its sequence as written: drawn as nothing too.
        TERMINAL_REST.lastIndex = i + e.length;
        if (TERMINAL_REST.test(s)) {
          changed = true;
          if (carry < 0) carry = i;
          i = TERMINAL_REST.lastIndex;
          continue;
        }
      }
      if (e === undefined) copy(i, i + 1);
      else {
        changed = true;
        if (e.cp < 0x80) emitUnit(e.cp, i, i + e.length);
        else fold(e.cp, i, i + e.length, false);
      }
      i += e === undefined ? 1 : e.length;
      continue;
    }
    if (c === 37 /* % */) {
      // One round of percent-decoding: a run of escapes, as UTF-8 when it is (else each ASCII byte alone). An escape of
      // `%` before two hex digits is read through (`%2541` as `%41`, `A`): a text percent-encoded twice, a link put in
      // another link's query, reads as once.
      let j = i;
      let k = 0;
      while (j + 2 < s.length && s.charCodeAt(j) === 37 && k < PERCENT_BYTES.length) {
        let hi = hexValue(s.charCodeAt(j + 1));
        let lo = hexValue(s.charCodeAt(j + 2));
        if (hi < 0 || lo < 0) break;
        let w = 3;
        for (let d = 0; hi === 2 && lo === 5 && d < PERCENT_DEPTH; d++) {
          const h = hexValue(s.charCodeAt(j + w));
          const l = hexValue(s.charCodeAt(j + w + 1));
          if (h < 0 || l < 0) break;
          hi = h;
          lo = l;
          w += 2;
        }
        PERCENT_AT[k] = j;
        PERCENT_BYTES[k++] = hi * 16 + lo;
        j += w;
      }
      PERCENT_AT[k] = j;
      const raw = PERCENT_BYTES.subarray(0, k);
      if (k === 1 && raw[0]! < 0x80) {
        // One ASCII byte (`%41`): the character it stands for, nothing to decode.
        emitUnit(raw[0]!, i, j);
        changed = true;
        i = j;
      } else if (k > 0 && isUtf8(raw)) {
        changed = true;
        // Each decoded character stands for the escapes of its bytes: [start of its first, end of its last).
        const text = UTF8.decode(raw);
        let b = 0;
        for (let q = 0; q < text.length; ) {
          const cp = text.codePointAt(q)!;
          const bytes = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
          if (cp < 0x80) emitUnit(cp, PERCENT_AT[b]!, PERCENT_AT[b + bytes]!);
          else fold(cp, PERCENT_AT[b]!, PERCENT_AT[b + bytes]!, false);
          b += bytes;
          q += cp > 0xffff ? 2 : 1;
        }
        i = j;
      } else if (k > 0 && raw[0]! < 0x80) {
        emitUnit(raw[0]!, i, PERCENT_AT[1]!);
        changed = true;
        i = PERCENT_AT[1]!;
      } else {
        copy(i, i + 1);
        i++;
      }
      continue;
    }
    const cp = s.codePointAt(i)!;
    const w = cp > 0xffff ? 2 : 1;
    fold(cp, i, i + w, true);
    i += w;
  }
  if (!changed) return undefined;
  return { text: stringOf(units.subarray(0, n)), from: from.subarray(0, n), to: to.subarray(0, n), tags: sawTags };
}
