/**
 * `pii(string)` (docs/behaviour/labels-and-detectors.md): personal data in text, found in one
 * left-to-right pass with hand-written scanners, checksums and formats
 * checked: Luhn for card numbers, ISO 13616 length and mod-97 for IBANs,
 * the SSA's area/group/serial rules for US SSNs, and libphonenumber-js
 * (Google's libphonenumber metadata, `max` set) for phone numbers.
 */
import { DetectionStopped } from './ruleset.js';
import { getCountries, getCountryCallingCode, isValidPhoneNumber } from 'libphonenumber-js/max';
import { ASK_MASK, PackedSpans, codeAt, hexValue, isAlnum, isDigit, isLetter, isSpace, isUpper, isUpperDigit, run, b64RunEnd, isB64, type Span } from './chars.js';

/** Every kind `pii()` reports, and `mask: [pii]` covers. */
export const PII_KINDS = ['email', 'credit-card', 'iban', 'us-ssn', 'phone'] as const;
/** Each kind's index in PII_KINDS, as a scan keeps it. */
const EMAIL = 0;
const CREDIT_CARD = 1;
const IBAN = 2;
const US_SSN = 3;
const PHONE = 4;

/** Most finds a Finds keeps room for between scans; see Finds.packed. */
const KEPT_FINDS = 1 << 16;

/** A scan that found nothing. */
const NOTHING = new PackedSpans(PII_KINDS, new Int32Array(0));

/**
 * The finds of one scan, three numbers each (kind as an index into
 * PII_KINDS, start, end) in an array kept from scan to scan: a text crowded
 * with finds allocates nothing per find while it is read, and answers them
 * packed (PackedSpans), copied once at the end.
 */
class Finds {
  n = 0;
  data = new Int32Array(3 * 64);

  push(kind: number, start: number, end: number): void {
    let k = 3 * this.n;
    if (k === this.data.length) {
      const grown = new Int32Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    const d = this.data;
    d[k++] = kind;
    d[k++] = start;
    d[k] = end;
    this.n++;
  }

  /** Where the last find ends (0 when there is none). */
  lastEnd(): number {
    return this.n === 0 ? 0 : this.data[3 * this.n - 1]!;
  }

  /** The finds, packed; emptied, and the array given back when a crowded text grew it past KEPT_FINDS. */
  packed(): PackedSpans {
    let out = NOTHING;
    if (this.n > 0) {
      // A copy by set() of a subarray (a memory copy; slice() copies element by element, ten times slower).
      const data = new Int32Array(3 * this.n);
      data.set(this.data.subarray(0, 3 * this.n));
      out = new PackedSpans(PII_KINDS, data);
    }
    this.n = 0;
    if (this.data.length > 3 * KEPT_FINDS) this.data = new Int32Array(3 * 64);
    return out;
  }
}

/** The finds of the scan running (scans do not nest; one that finds it taken makes its own). */
let shared: Finds | undefined = new Finds();

/** IBAN length per country (ISO 13616 registry, SWIFT release 99). */
const IBAN_LENGTHS: Readonly<Record<string, number>> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BI: 27, BR: 29, BY: 28, CH: 21, CR: 22, CY: 28,
  CZ: 24, DE: 22, DJ: 27, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FK: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23,
  GL: 18, GR: 27, GT: 28, HN: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28,
  LC: 32, LI: 21, LT: 20, LU: 20, LV: 21, LY: 25, MC: 27, MD: 24, ME: 22, MK: 19, MN: 20, MR: 27, MT: 31, MU: 30, NI: 28,
  NL: 18, NO: 15, OM: 23, PK: 24, PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, RU: 33, SA: 24, SC: 31, SD: 18, SE: 24,
  SI: 19, SK: 24, SM: 27, SO: 23, ST: 25, SV: 28, TL: 23, TN: 24, TR: 26, UA: 29, VA: 22, VG: 24, XK: 20, YE: 30,
};

/** Characters of an email's local part (dot-atom, the common subset). */
function isLocal(c: number): boolean {
  return isAlnum(c) || c === 46 || c === 95 || c === 37 || c === 43 || c === 45;
}

function isLabel(c: number): boolean {
  return isAlnum(c) || c === 45;
}

/** A stretch of text [from, to) already read back over for user info: it holds no `/`, blank, quote or angle bracket. */
interface Clean {
  from: number;
  to: number;
}

/**
 * File name extensions that are no top-level domain (none is in the Public Suffix List): a name with an `@` and one
 * of these after its last dot is a file's (`icon@2x.png`, `photo@home.jpg`, a listing of an app's images), not an
 * address. (`.map`, `.java`, `.zip`, `.mov`, `.py`, `.rs`, `.sh`, `.md`, `.pl` and `.so` are domains, and left out.)
 */
const FILE_TYPES = new Set(
  (
    'png jpg jpeg gif svg webp bmp tif tiff ico icns heic avif pdf txt json yaml yml xml htm html css scss less js mjs cjs ' +
    'ts tsx jsx vue lock log csv tsv gz tgz xz zst tar rar exe dll dylib wasm bin dat iso dmg pkg deb rpm apk ipa jar ' +
    'war class pyc whl wav ogg webm flac mkv avi doc docx xls xlsx ppt pptx odt rtf woff ttf otf eot sql toml ini cfg ' +
    'conf swift kt php rb cpp hpp'
  ).split(' '),
);

/** The email around the `@` at `i`: [start, end], or undefined. Starts no earlier than `from`. */
function email(s: string, i: number, from: number, clean: Clean = { from: -1, to: -1 }): [number, number] | undefined {
  // The domain first: most at-signs that are no address (`a@`, `@user`) fail there, before any reading back.
  let pos = i + 1;
  let labels = 0;
  let lastStart = pos;
  for (;;) {
    const n = run(s, pos, isLabel, 63);
    if (n === 0 || n > 63 || s.charCodeAt(pos) === 45 || s.charCodeAt(pos + n - 1) === 45) return undefined;
    lastStart = pos;
    pos += n;
    labels++;
    if (codeAt(s, pos) === 46 && isAlnum(codeAt(s, pos + 1))) pos++;
    else break;
  }
  if (labels < 2 || pos - (i + 1) > 253) return undefined;
  for (let k = lastStart; k < pos; k++) if (!isLetter(s.charCodeAt(k))) return undefined;
  if (pos - lastStart < 2 || (pos - lastStart <= 5 && FILE_TYPES.has(s.slice(lastStart, pos).toLowerCase()))) return undefined;
  const domainEnd = pos;
  let a = i;
  while (a > from && i - a < 64 && isLocal(s.charCodeAt(a - 1))) a--;
  while (a < i && s.charCodeAt(a) === 46) a++;
  if (a === i || s.charCodeAt(i - 1) === 46) return undefined;
  // `user:password@host` in a URL is user info, not an address (mailto: excepted).
  const before = codeAt(s, a - 1);
  if ((before === 58 || before === 47) && !(before === 58 && s.slice(Math.max(0, a - 7), a).toLowerCase() === 'mailto:')) return undefined;
  // A password with characters an address cannot hold (`scheme://user:pa#ss@host`): still user info (looked for within 300 characters).
  // What earlier addresses read back over is not read again (a text of `a@a@a@...` stays linear).
  let k = a;
  for (; k > 0 && a - k < 300; k--) {
    if (k <= clean.to && k > clean.from) {
      k = clean.from + 1;
      if (a - k >= 300) break;
      continue;
    }
    const c = s.charCodeAt(k - 1);
    if (isSpace(c) || c === 34 || c === 39 || c === 60 || c === 62) break;
    if (c === 47) {
      if (codeAt(s, k - 2) === 47 && codeAt(s, k - 3) === 58) return undefined;
      break;
    }
  }
  if (k < a) {
    clean.from = k;
    clean.to = a;
  }
  return [a, domainEnd];
}

/** `ddd-dd-dddd` at `i` with the SSA's rules: area not 000, 666 or 900-999; group not 00; serial not 0000. */
function ssn(s: string, i: number): number {
  for (let k = 0; k < 11; k++) {
    const c = codeAt(s, i + k);
    if (k === 3 || k === 6 ? c !== 45 : !isDigit(c)) return -1;
  }
  const next = codeAt(s, i + 11);
  if (isAlnum(next) || (next === 45 && isDigit(codeAt(s, i + 12)))) return -1;
  const area = s.slice(i, i + 3);
  if (area === '000' || area === '666' || area[0] === '9' || s.slice(i + 4, i + 6) === '00' || s.slice(i + 7, i + 11) === '0000') return -1;
  return i + 11;
}

/** What names an SSN just before its digits: `SSN`, `SSN#`, `social security number` or `no.`, and a `:`, `#`, `=` or `is`. */
const SSN_LABEL = /(?:\bssn|\bsocial[ -]security(?:[ -](?:number|no\.?|#))?)[ \t]*(?:#|:|=|\bis\b)?[ \t]*["']?$/i;

/**
 * Where the SSN written without dashes at `i` ends (nine digits, or three, two and four with a blank between), where a
 * label just before it names one (SSN_LABEL, within 40 characters) and the SSA's rules hold; -1 otherwise. Nine digits
 * alone are an id of any kind: only the label says whose they are.
 */
function labelledSsn(s: string, i: number): number {
  // Nine digits in a row, or three, two and four with a blank between: read by their codes, no string made.
  const spaced = codeAt(s, i + 3) === 32;
  const end = spaced ? i + 11 : i + 9;
  for (let p = i; p < end; p++) {
    const blank = spaced && (p === i + 3 || p === i + 6);
    if (blank ? codeAt(s, p) !== 32 : !isDigit(codeAt(s, p))) return -1;
  }
  const next = codeAt(s, end);
  if (isAlnum(next) || ((next === 45 || next === 32 || next === 46) && isDigit(codeAt(s, end + 1)))) return -1;
  const digits = spaced ? s.slice(i, i + 3) + s.slice(i + 4, i + 6) + s.slice(i + 7, i + 11) : s.slice(i, end);
  if (digits.startsWith('000') || digits.startsWith('666') || digits[0] === '9' || digits.slice(3, 5) === '00' || digits.slice(5) === '0000') return -1;
  return SSN_LABEL.test(s.slice(Math.max(0, i - 40), i)) ? end : -1;
}

/**
 * Groups of the number token being read, in rings of RING (each group is
 * judged once the token has read 20 digits past it, and a card from it
 * ends at most 19 groups on, so the rings hold every group still needed
 * (21 at most); a token may be a whole text, `4 5 4 5 ...`, and is read
 * with no buffer that grows with it). Per group: where it starts and ends
 * in the text, its first digit, and where the run of equal digits its last
 * digit ends starts; per boundary before a group (and after the last): the
 * count of the token's digits before it and their Luhn sums modulo 10, one
 * doubling the digits at even places, one at odd places.
 */
const RING = 64;
const RING_MASK = RING - 1;
const gStart = new Int32Array(RING);
const gEnd = new Int32Array(RING);
const gFirst = new Uint8Array(RING);
const gRun = new Int32Array(RING);
const gBefore = new Int32Array(RING);
const gEven = new Uint8Array(RING);
const gOdd = new Uint8Array(RING);
/** Groups of two digits or fewer among the groups before each (a hex dump's bytes, `41 42 43 44`, an OID's: no card's groups). */
const gShortBefore = new Int32Array(RING);
/** The most digits of a group no card is written in. */
const SHORT_GROUP = 2;

/** Digit d doubled as Luhn doubles it (its digits summed). */
const DOUBLED = Uint8Array.of(0, 2, 4, 6, 8, 1, 3, 5, 7, 9);

/**
 * US SSNs and card numbers in the number token at `i` (digits with single
 * spaces or dashes between groups), pushed to `finds`; returns where the
 * token ends. A token a letter or digit follows (`0123abc`) holds nothing.
 *
 * Cards: runs of whole groups with 13 to 19 digits, issuer industries 2 to 6
 * (Mastercard, Amex/JCB/Diners, Visa, Mastercard, Discover/UnionPay/Maestro;
 * industry 2 only as 22 to 27 and 16 digits or more, Mastercard's and Mir's;
 * 13-digit millisecond timestamps and ids starting with 1, 7, 8, 9 or 0 are
 * not cards), not one digit repeated, no group of two digits or fewer
 * (a hex dump's bytes, `41 42 43 44 45 46 47 48`), Luhn-valid; the longest from each
 * group on (so `x=1 3782 8224 6310 005` finds the card after the `1`). The
 * groups a run from one start may end at are a range that only moves
 * forward as the start does, and each is checked in constant time (the
 * Luhn sum from the sums at its two boundaries, whose doubled places are
 * those of the parity the last digit's is not): linear in the token, read
 * once. A caller with a deadline (`stop`) is asked every 4,096 groups: a
 * text that is one long token cannot hold the read past it.
 */
function numbers(s: string, i: number, finds: Finds, stop?: () => boolean): number {
  const n = s.length;
  // Most numbers of prose are one group of a few digits (`42`, `2026`): known for nothing before the rings are written.
  let e = i + 1;
  while (e < n && isDigit(s.charCodeAt(e))) e++;
  if (e - i < 9) {
    const c = codeAt(s, e);
    if ((c !== 32 && c !== 45) || !isDigit(codeAt(s, e + 1))) return e;
  }
  const mark = finds.n;
  // Groups read (G), the token's digits so far and their Luhn sums, where the current run of equal digits starts.
  let G = 0;
  let digits = 0;
  let even = 0;
  let odd = 0;
  let short = 0;
  let runStart = 0;
  let last = -1;
  // The group judged next (g), and the range of groups a card from it may end at: [lo, hi).
  let g = 0;
  let lo = 0;
  let hi = 0;
  let pos = i;
  let ended = false;
  gBefore[0] = 0;
  gShortBefore[0] = 0;
  gEven[0] = 0;
  gOdd[0] = 0;
  while (!ended) {
    const r = G & RING_MASK;
    gStart[r] = pos;
    gFirst[r] = s.charCodeAt(pos) - 48;
    let c = s.charCodeAt(pos);
    for (; c >= 48 && c <= 57; c = ++pos < n ? s.charCodeAt(pos) : -1) {
      const d = c - 48;
      if ((digits & 1) === 0) {
        even += DOUBLED[d]!;
        odd += d;
      } else {
        even += d;
        odd += DOUBLED[d]!;
      }
      if (d !== last) {
        runStart = digits;
        last = d;
      }
      digits++;
    }
    gEnd[r] = pos;
    gRun[r] = runStart;
    if (pos - gStart[r]! <= SHORT_GROUP) short++;
    G++;
    const rb = G & RING_MASK;
    gBefore[rb] = digits;
    gShortBefore[rb] = short;
    gEven[rb] = even % 10;
    gOdd[rb] = odd % 10;
    if (stop !== undefined && (G & ASK_MASK) === 0 && stop()) throw new DetectionStopped('the time for this decision ran out inside the personal-data scan');
    // The next group starts after one space or dash, at a digit.
    const after = c === 32 || c === 45 ? codeAt(s, pos + 1) : -1;
    if (after < 48 || after > 57) {
      ended = true;
      // A token a letter or digit follows, or of fewer than 9 digits (no SSN or card), holds nothing: what it found is taken back.
      if (digits < 9 || isAlnum(c)) {
        finds.n = mark;
        return pos;
      }
    } else pos++;
    // Judge each group the token has read 20 digits past (every run a card from it may end at is read), all at the end.
    while (g < G && (ended || digits - gBefore[g & RING_MASK]! > 19)) {
      const rg = g & RING_MASK;
      const at = gStart[rg]!;
      // A US SSN starts a token or follows a space inside one (`2026-12-01 123-45-6789`); its three groups are read.
      if (gEnd[rg]! - at === 3 && (g === 0 || s.charCodeAt(at - 1) === 32)) {
        const e = ssn(s, at);
        if (e > 0) {
          finds.push(US_SSN, at, e);
          g += 3;
          continue;
        }
      }
      const first = gFirst[rg]!;
      // Industry 2 is Mastercard's 2221-2720 and Mir's 2200-2204 only, of 16 digits or more: a 14-digit timestamp of this
      // century (`20150324153922`, a web archive's URL) is none.
      const second = first === 2 ? codeAt(s, isDigit(codeAt(s, at + 1)) ? at + 1 : at + 2) - 48 : 0;
      if (first < 2 || first > 6 || (first === 2 && (second < 2 || second > 7))) {
        g++;
        continue;
      }
      const a = gBefore[rg]!;
      if (lo < g) lo = g;
      while (lo < G && gBefore[(lo + 1) & RING_MASK]! - a < 13) lo++;
      if (hi < lo) hi = lo;
      while (hi < G && gBefore[(hi + 1) & RING_MASK]! - a <= 19) hi++;
      const aEven = gEven[rg]!;
      const aOdd = gOdd[rg]!;
      let found = -1;
      for (let j = hi - 1; j >= lo; j--) {
        const rj = (j + 1) & RING_MASK;
        if (first === 2 && gBefore[rj]! - a < 16) break;
        if (gRun[j & RING_MASK]! > a && gShortBefore[rj] === gShortBefore[rg] && ((gBefore[rj]! & 1) === 1 ? gOdd[rj] === aOdd : gEven[rj] === aEven)) {
          found = j;
          break;
        }
      }
      if (found >= 0) {
        finds.push(CREDIT_CARD, at, gEnd[found & RING_MASK]!);
        g = found + 1;
      } else g++;
    }
  }
  return pos;
}

function ibanAt(s: string, i: number): number {
  if (!isUpper(codeAt(s, i)) || !isUpper(codeAt(s, i + 1)) || !isDigit(codeAt(s, i + 2)) || !isDigit(codeAt(s, i + 3))) return -1;
  const len = IBAN_LENGTHS[s.slice(i, i + 2)];
  if (len === undefined) return -1;
  let chars = s.slice(i, i + 4);
  let pos = i + 4;
  while (chars.length < len) {
    const c = codeAt(s, pos);
    if (c === 32 && chars.length % 4 === 0 && isUpperDigit(codeAt(s, pos + 1))) {
      pos++;
      continue;
    }
    if (!isUpperDigit(c)) return -1;
    chars += s[pos];
    pos++;
  }
  if (isAlnum(codeAt(s, pos))) return -1;
  // ISO 7064 mod 97-10 over the rearranged number, letters as 10..35.
  const moved = chars.slice(4) + chars.slice(0, 4);
  let rem = 0;
  for (let k = 0; k < moved.length; k++) {
    const c = moved.charCodeAt(k);
    if (c <= 57) rem = (rem * 10 + (c - 48)) % 97;
    else rem = (rem * 100 + (c - 55)) % 97;
  }
  return rem === 1 ? pos : -1;
}

/** Country calling codes libphonenumber knows (1, 44, 353, ...; none starts with 0), as a table over 0-999. */
const CALLING_CODES = new Uint8Array(1000);
for (const c of getCountries()) CALLING_CODES[Number(getCountryCallingCode(c))] = 1;

/**
 * Numbers already judged, by the value of their digits (most texts repeat
 * the same few): a table of VERDICT_SLOTS slots, each holding the last
 * number whose value hashes to it (bounded, and read with no allocation: a
 * Map keyed by numbers past 2^31 boxes each key). A number judged here
 * opens with a calling code, so with a digit other than 0: its value
 * stands for its digits.
 */
const VERDICT_SLOTS = 8192;
const verdictValue = new Float64Array(VERDICT_SLOTS);
/** 0: empty slot; 1: not a phone number; 2: a phone number. */
const verdictOf = new Uint8Array(VERDICT_SLOTS);

/** The slot of a number of up to 15 digits (below 2^50: its low 32 bits and the rest, mixed). */
function verdictSlot(value: number): number {
  return (Math.imul((value >>> 0) ^ Math.floor(value / 4294967296), 0x9e3779b1) >>> 19) & (VERDICT_SLOTS - 1);
}

/**
 * Library validations per scanned string. libphonenumber takes tens of µs a
 * number; past this many in one string, a candidate whose country calling
 * code exists counts as a phone number without the library (fail closed: a
 * text made of thousands of numbers is treated as personal data), so the
 * scan stays linear with a small constant.
 */
export const PHONE_VALIDATIONS_PER_STRING = 256;

/** Whether the number [i, end) of digits `value`, whose country calling code exists, is valid for its country. */
function validPhone(s: string, i: number, end: number, value: number, budget: { left: number }): boolean {
  const slot = verdictSlot(value);
  if (verdictOf[slot] !== 0 && verdictValue[slot] === value) return verdictOf[slot] === 2;
  if (budget.left <= 0) return true;
  budget.left--;
  const v = isValidPhoneNumber(s.slice(i, end));
  verdictValue[slot] = value;
  verdictOf[slot] = v ? 2 : 1;
  return v;
}

/** The candidate ends of the number phone() reads (after each digit group with 8 to 15 digits so far), and its digits' value at each. */
const phoneEnds = new Int32Array(16);
const phoneValues = new Float64Array(16);
/** Where scanning may go on after the last call of phone(). */
let phoneSkip = 0;

/**
 * An international number from the `+` at `i`, valid for its country: its
 * end, or -1; phoneSkip is where scanning may go on. Its digits are read
 * once, as a value (15 digits at most: exact in a double), with no string
 * made unless the library is asked.
 */
function phone(s: string, i: number, budget: { left: number }): number {
  phoneSkip = i + 1;
  if (isAlnum(codeAt(s, i - 1)) || !isDigit(codeAt(s, i + 1))) return -1;
  let count = 0;
  let digits = 0;
  let seps = 0;
  let value = 0;
  let coded = false;
  const limit = Math.min(s.length, i + 32);
  for (let pos = i + 1; pos < limit; pos++) {
    const c = s.charCodeAt(pos);
    if (c >= 48 && c <= 57) {
      digits++;
      seps = 0;
      if (digits > 15) break;
      value = value * 10 + (c - 48);
      if (digits <= 3 && CALLING_CODES[value] === 1 && s.charCodeAt(i + 1) !== 48) coded = true;
      if (digits >= 8 && !isDigit(codeAt(s, pos + 1))) {
        phoneEnds[count] = pos + 1;
        phoneValues[count] = value;
        count++;
      }
    } else if (c === 32 || c === 45 || c === 46 || c === 40 || c === 41) {
      if (++seps > 2) break;
    } else break;
  }
  if (count === 0) return -1;
  phoneSkip = phoneEnds[count - 1]!;
  if (!coded) return -1;
  for (let k = count - 1; k >= 0; k--) {
    const end = phoneEnds[k]!;
    if (isAlnum(codeAt(s, end))) continue;
    if (validPhone(s, i, end, phoneValues[k]!, budget)) {
      phoneSkip = end;
      return end;
    }
  }
  return -1;
}

/**
 * The next digit, or the next `@` that may start an address (followed by
 * dotted labels and a last label opening with 2 letters: what the address
 * scanner needs before it finds anything), as one native search: a text
 * crowded with at-signs that start no address (`a@a@`, `x@y.z@`) is
 * passed over at native speed, and skipping such an `@` changes nothing
 * (the scanner finds nothing there and reads on from the next place).
 * A match is one character long: where it ends tells where it is.
 */
const HOT = /[0-9]|@(?=(?:[A-Za-z0-9-]{1,63}\.)+[A-Za-z]{2})/g;

/**
 * Whether the digit at `f` may open a find: nothing of a letter or digit
 * before it (a number, or a phone after its `+`), or an IBAN's country
 * code just before it. A digit inside a run of letters and digits (`v4`,
 * `sha256`, `Xy9`) opens nothing: each kind's scanner starts at a run's
 * first character, an `@` or a `+`.
 */
function opens(s: string, f: number): boolean {
  const p = codeAt(s, f - 1);
  return !isAlnum(p) || (isUpper(p) && isUpper(codeAt(s, f - 2)) && !isAlnum(codeAt(s, f - 3)));
}

/**
 * Where the next digit that opens a find (opens()) or `@` HOT finds is, at
 * or after `i`; `s.length` when there is none. Every kind holds such a
 * digit or `@` no more than 2 characters after where its scanner starts,
 * and those characters (`+`, a country code) are base64 characters, which
 * the scan backs up over where it lands. Characters are read in
 * JavaScript for a stretch first (where finds crowd a text, a native
 * search for each costs more than the loop), then HOT searches natively;
 * a digit it finds that opens nothing is passed over with the rest of its
 * run, and the search goes on (asking the deadline, where there is one,
 * every 4,096 digits passed over).
 */
function nextHot(s: string, i: number, stop?: () => boolean): number {
  const n = s.length;
  let passed = 0;
  let h = i;
  const near = Math.min(n, i + 16);
  for (; h < near; h++) {
    const d = s.charCodeAt(h);
    if (d === 64) break;
    if (d >= 48 && d <= 57 && opens(s, h)) return h;
  }
  while (h < n) {
    HOT.lastIndex = h;
    if (!HOT.test(s)) return n;
    const f = HOT.lastIndex - 1;
    if (s.charCodeAt(f) === 64 || opens(s, f)) return f;
    h = f + 1;
    while (h < n && isAlnum(s.charCodeAt(h))) h++;
    // A caller with a deadline is asked every 4,096 digits passed over: a text of them cannot hold the search past it.
    if (stop !== undefined && (++passed & ASK_MASK) === 0 && stop()) throw new DetectionStopped('the time for this decision ran out inside the personal-data scan');
  }
  return n;
}

/** A UUID's groups: 8, 4, 4, 4 and 12 hex digits joined by `-`. */
const UUID_GROUPS = [8, 4, 4, 4, 12] as const;

/** Where the UUID starting at `at` ends (no letter or digit on either side), or -1. */
function uuidAt(s: string, at: number): number {
  if (at < 0 || isAlnum(codeAt(s, at - 1))) return -1;
  let p = at;
  for (let k = 0; k < UUID_GROUPS.length; k++) {
    if (k > 0 && s.charCodeAt(p++) !== 45) return -1;
    for (let e = p + UUID_GROUPS[k]!; p < e; p++) if (hexValue(codeAt(s, p)) < 0) return -1;
  }
  return isAlnum(codeAt(s, p)) ? -1 : p;
}

/**
 * Where the UUID that has a group starting at `i` ends, or -1: the UUID
 * starting at `i`, or, after a `-`, one whose second to fifth group it is.
 * At most five fixed-length reads: constant time at each number.
 */
function uuidAround(s: string, i: number): number {
  let back = 0;
  for (let k = 0; k < UUID_GROUPS.length; k++) {
    if (k > 0) {
      if (codeAt(s, i - 1) !== 45) return -1;
      back += UUID_GROUPS[k - 1]! + 1;
    }
    const e = uuidAt(s, i - back);
    if (e > 0) return e;
  }
  return -1;
}

/** Every piece of personal data in `s`, left to right, not overlapping. */
export function scanPii(s: string, stop?: () => boolean): Span[] {
  return scan(s, true, stop).toSpans();
}

/** scanPii's finds, packed: what the detection cache keeps (a crowded text's finds make no object each). */
export function scanPiiPacked(s: string, stop?: () => boolean): PackedSpans {
  return scan(s, true, stop);
}

/** The scan of scanPii, reading every character (no skipping to the next digit or `@`); the tests hold the two equal. */
export function scanPiiFully(s: string): Span[] {
  return scan(s, false).toSpans();
}

/**
 * With `skip`, the scan jumps over text that cannot start a find. Every
 * kind holds a digit or an `@` no more than 2 characters after where its
 * scanner starts (an IBAN `CCdd`, a `+` before a digit, a number, an
 * email's `@`), and those 2 are base64 characters, so from `i` nothing is
 * found before the place nextHot() gives less the base64 characters before
 * it. The jump backs up to there, the start of the base64 run it would
 * land in (not before `i`): a run of 64 or more is still passed over whole,
 * from the same place as when every character is read, and the loop goes on
 * from a place that reading every character also reaches.
 */
function scan(s: string, skip: boolean, stop?: () => boolean): PackedSpans {
  const finds = shared ?? new Finds();
  shared = undefined;
  finds.n = 0;
  try {
    scanInto(s, skip, finds, stop);
    return finds.packed();
  } finally {
    shared = finds;
  }
}

function scanInto(s: string, skip: boolean, finds: Finds, stop?: () => boolean): void {
  let steps = 0;
  const clean: Clean = { from: -1, to: -1 };
  const n = s.length;
  const budget = { left: PHONE_VALIDATIONS_PER_STRING };
  let hot = -1;
  for (let i = 0; i < n; i++) {
    // A caller with a deadline is asked every 4,096 places: a crafted text cannot hold the scan past it.
    if (stop !== undefined && (++steps & ASK_MASK) === 0 && stop()) throw new DetectionStopped('the time for this decision ran out inside the personal-data scan');
    if (skip) {
      if (hot < i) {
        hot = nextHot(s, i, stop);
        if (hot === n) break;
      }
      if (hot > i) {
        let t = hot;
        while (t > i && isB64(s.charCodeAt(t - 1))) t--;
        i = t;
      }
    }
    const c = s.charCodeAt(i);
    // Inside a run of letters and digits nothing starts (each kind's scanner starts at a run's first character, an `@` or
    // a `+`): the rest of the run is passed over. Only when skipping: the scan of every character stays the reference.
    if (skip && isAlnum(c) && isAlnum(codeAt(s, i - 1))) {
      while (i + 1 < n && isAlnum(s.charCodeAt(i + 1))) i++;
      continue;
    }
    // A run of 64 or more base64 characters with no break is encoded data (an image, a key, a digest), not prose:
    // it is passed over whole, so that digits or letters inside it are never read as a card, an IBAN or a phone.
    if ((isAlnum(c) || c === 43 || c === 47) && !isB64(codeAt(s, i - 1))) {
      const e = b64RunEnd(s, i, 64);
      if (e > 0) {
        i = e - 1;
        continue;
      }
    }
    if (c === 64) {
      // @
      const m = email(s, i, finds.lastEnd(), clean);
      if (m !== undefined) {
        finds.push(EMAIL, m[0], m[1]);
        i = m[1] - 1;
      }
    } else if (c >= 48 && c <= 57) {
      if (isAlnum(codeAt(s, i - 1))) continue;
      // The fraction of a decimal number (`-4.387332384609988`, `=.25925925925925924`: sixteen digits that pass Luhn's
      // check) is no card, no phone: passed over to its end.
      if (codeAt(s, i - 1) === 46 && !isLetter(codeAt(s, i - 2))) {
        while (i + 1 < n && isDigit(s.charCodeAt(i + 1))) i++;
        continue;
      }
      // A segment of a URL's path that is one number (`/feature/5068609911521280`, `/groups/4567890123456789/`) is an
      // id: passed over.
      if (codeAt(s, i - 1) === 47) {
        let e = i + 1;
        while (e < n && isDigit(s.charCodeAt(e))) e++;
        const after = codeAt(s, e);
        if (after < 0 || after === 47 || after === 63 || after === 35 || isSpace(after) || after === 34 || after === 39 || after === 41 || after === 62) {
          i = e - 1;
          continue;
        }
      }
      // A number that is a group of a UUID (`00000000-1111-2222-3333-444444444444`: its last two groups pass Luhn's check
      // as sixteen digits) is an id: the UUID is passed over whole.
      const u = uuidAround(s, i);
      if (u > 0) {
        i = u - 1;
        continue;
      }
      // Nine digits a label names an SSN (`SSN: 123456789`, `social security number 123 45 6789`): one written without
      // its dashes.
      const l = labelledSsn(s, i);
      if (l > 0) {
        finds.push(US_SSN, i, l);
        i = l - 1;
        continue;
      }
      // The whole number is read: go on after it (an email's local part may still end in it).
      const end = numbers(s, i, finds, stop);
      i = Math.max(i, end - 1);
    } else if (c === 43) {
      // + (not after an operand: `e[1]+3545052371+(...)` adds, it dials no one)
      const before = codeAt(s, i - 1);
      if (isAlnum(before) || before === 95 || before === 36 || before === 41 || before === 93) continue;
      const e = phone(s, i, budget);
      if (e > 0) finds.push(PHONE, i, e);
      i = Math.max(i, phoneSkip - 1);
    } else if (c >= 65 && c <= 90) {
      if (isAlnum(codeAt(s, i - 1))) continue;
      const e = ibanAt(s, i);
      if (e > 0) {
        finds.push(IBAN, i, e);
        i = e - 1;
      }
    }
  }
}
