/**
 * `pii(string)` (docs/behaviour/labels-and-detectors.md): personal data in text, found in one
 * left-to-right pass with hand-written scanners, checksums and formats
 * checked: Luhn for card numbers, ISO 13616 length and mod-97 for IBANs,
 * the SSA's area/group/serial rules for US SSNs, and libphonenumber-js
 * (Google's libphonenumber metadata, `max` set) for phone numbers.
 */
import { DetectionStopped } from './ruleset.js';
import { getCountries, getCountryCallingCode, isValidPhoneNumber } from 'libphonenumber-js/max';
import { ASK_MASK, codeAt, isAlnum, isDigit, isLetter, isSpace, isUpper, isUpperDigit, run, b64RunEnd, isB64, type Span } from './chars.js';

/** Every kind `pii()` reports, and `mask: [pii]` covers. */
export const PII_KINDS = ['email', 'credit-card', 'iban', 'us-ssn', 'phone'] as const;

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
  if (pos - lastStart < 2) return undefined;
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

/**
 * The number token being read, in buffers reused from token to token (a
 * token may be a whole text: `4 5 4 5 ...`): per group its start and end in
 * the text and the count of the token's digits before it; per digit its
 * value, the Luhn sums of the digits before it (one doubling the digits at
 * even places, one at odd places), and where the next different digit is.
 */
/** Most digits (or groups) the number token's buffers keep between tokens; see NumberToken.#release. */
const KEPT_DIGITS = 1 << 20;

/** Where the next group of a number token starts after a group ending at `pos` (one space or dash, then a digit), or -1 where the token ends. */
function groupAfter(s: string, pos: number): number {
  const c = codeAt(s, pos);
  return (c === 32 || c === 45) && isDigit(codeAt(s, pos + 1)) ? pos + 1 : -1;
}

class NumberToken {
  groups = 0;
  digits = 0;
  start = new Int32Array(64);
  end = new Int32Array(64);
  before = new Int32Array(65);
  value = new Uint8Array(64);
  /** sums[2p + k]: the Luhn sum of the first p digits with the digits at places of parity k doubled. */
  sums = new Int32Array(130);
  nextOther = new Int32Array(64);

  /**
   * Reads the token at `i` (digits with single spaces or dashes between
   * groups); returns where it ends. A caller with a deadline (`stop`) is
   * asked every 4,096 groups: a text that is one long token cannot hold the
   * read past it.
   */
  read(s: string, i: number, stop?: () => boolean): number {
    this.#release();
    // The buffers in locals (reloaded when they grow): this loop runs once per digit of every number read.
    let { start, end, before, value, sums } = this;
    const n = s.length;
    let groups = 0;
    let digits = 0;
    // The Luhn sums so far: even doubles the digits at even places, odd those at odd places.
    let even = 0;
    let odd = 0;
    let pos = i;
    for (;;) {
      const g0 = pos;
      for (let c = pos < n ? s.charCodeAt(pos) : -1; c >= 48 && c <= 57; c = ++pos < n ? s.charCodeAt(pos) : -1) {
        if (digits + 1 >= value.length) {
          this.#growDigits();
          ({ value, sums } = this);
        }
        const d = c - 48;
        const doubled = d * 2 > 9 ? d * 2 - 9 : d * 2;
        value[digits] = d;
        if ((digits & 1) === 0) {
          even += doubled;
          odd += d;
        } else {
          even += d;
          odd += doubled;
        }
        sums[2 * digits + 2] = even;
        sums[2 * digits + 3] = odd;
        digits++;
      }
      if (groups + 1 >= start.length) {
        this.#growGroups();
        ({ start, end, before } = this);
      }
      before[groups] = digits - (pos - g0);
      start[groups] = g0;
      end[groups] = pos;
      groups++;
      if (stop !== undefined && (groups & ASK_MASK) === 0 && stop()) throw new DetectionStopped('the time for this decision ran out inside the personal-data scan');
      const next = groupAfter(s, pos);
      if (next < 0) break;
      pos = next;
    }
    this.groups = groups;
    this.digits = digits;
    before[groups] = digits;
    const next = this.nextOther;
    if (digits > 0) next[digits - 1] = digits;
    for (let p = digits - 2; p >= 0; p--) next[p] = value[p] === value[p + 1] ? next[p + 1]! : p + 1;
    return pos;
  }

  /**
   * The buffers grow with the longest token read and are kept for the next
   * (regrowing them would cost more than reading); past KEPT_DIGITS (a
   * token only crafted text holds, some 13 MB of buffers) they are given
   * back, so the process does not keep the largest token's size.
   */
  #release(): void {
    if (this.value.length <= KEPT_DIGITS && this.start.length <= KEPT_DIGITS) return;
    this.start = new Int32Array(64);
    this.end = new Int32Array(64);
    this.before = new Int32Array(65);
    this.value = new Uint8Array(64);
    this.sums = new Int32Array(130);
    this.nextOther = new Int32Array(64);
  }

  #growGroups(): void {
    const grow = (a: Int32Array) => {
      const b = new Int32Array(a.length * 2 + 1);
      b.set(a);
      return b;
    };
    this.start = grow(this.start);
    this.end = grow(this.end);
    this.before = grow(this.before);
  }

  #growDigits(): void {
    const value = new Uint8Array(this.value.length * 2);
    value.set(this.value);
    this.value = value;
    const sums = new Int32Array(this.sums.length * 2);
    sums.set(this.sums);
    this.sums = sums;
    const next = new Int32Array(this.nextOther.length * 2);
    next.set(this.nextOther);
    this.nextOther = next;
  }

  /**
   * Whether digits [a, b) are a card number: 13 to 19 digits, issuer
   * industries 2 to 6 (Mastercard, Amex/JCB/Diners, Visa, Mastercard,
   * Discover/UnionPay/Maestro; 13-digit millisecond timestamps and ids
   * starting with 1, 7, 8, 9 or 0 are not cards), not one digit repeated,
   * Luhn-valid. Constant time: the Luhn sum from the prefix sums, whose
   * doubled places are those of the parity the last digit's is not.
   */
  isCard(a: number, b: number): boolean {
    const len = b - a;
    const first = this.value[a]!;
    if (len < 13 || len > 19 || first < 2 || first > 6 || this.nextOther[a]! >= b) return false;
    const k = (b - 1) % 2 === 0 ? 1 : 0;
    return (this.sums[2 * b + k]! - this.sums[2 * a + k]!) % 10 === 0;
  }
}

const token = new NumberToken();

/** Most digits of a number token read before its buffers are filled (more than any card or SSN holds). */
const PRE_READ = 64;

/**
 * US SSNs and card numbers in the number token at `i`. Cards: runs of whole groups with 13 to
 * 19 digits, Luhn-valid, the longest from each group on (so `x=1 3782 8224
 * 6310 005` finds the card after the `1`). The groups a run from one start
 * may end at are a range that only moves forward as the start does, and
 * each is checked in constant time: linear in the token.
 */
function numbers(s: string, i: number, push: (kind: string, start: number, end: number) => void, stop?: () => boolean): number {
  // A number of fewer than 9 digits is neither an SSN nor a card, and one a letter or digit follows (`0123abc`) opens
  // nothing: the end of a token of up to PRE_READ digits is found without filling the token's buffers.
  let pos = i;
  let digits = 0;
  for (;;) {
    for (let c = codeAt(s, pos); c >= 48 && c <= 57; c = codeAt(s, ++pos)) digits++;
    if (digits > PRE_READ) break;
    const next = groupAfter(s, pos);
    if (next < 0) {
      if (digits < 9 || isAlnum(codeAt(s, pos))) return pos;
      break;
    }
    pos = next;
  }
  const t = token;
  const end = t.read(s, i, stop);
  if (isAlnum(codeAt(s, end))) return end;
  const groups = t.groups;
  // lo: the first group a run from the current start may end at (13 digits or more); hi: past the last (19 at most).
  let lo = 0;
  let hi = 0;
  let g = 0;
  while (g < groups) {
    // A US SSN starts a token or follows a space inside one (`2026-12-01 123-45-6789`).
    const at = t.start[g]!;
    if (t.end[g]! - at === 3 && (g === 0 || s.charCodeAt(at - 1) === 32)) {
      const e = ssn(s, at);
      if (e > 0 && g + 2 < groups && t.end[g + 2] === e) {
        push('us-ssn', at, e);
        g += 3;
        continue;
      }
    }
    const a = t.before[g]!;
    if (lo < g) lo = g;
    while (lo < groups && t.before[lo + 1]! - a < 13) lo++;
    if (hi < lo) hi = lo;
    while (hi < groups && t.before[hi + 1]! - a <= 19) hi++;
    let found = -1;
    for (let j = hi - 1; j >= lo; j--) {
      if (t.isCard(a, t.before[j + 1]!)) {
        found = j;
        break;
      }
    }
    if (found >= 0) {
      push('credit-card', at, t.end[found]!);
      g = found + 1;
    } else g++;
  }
  return end;
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
 * the same few); bounded. A number judged here opens with a calling code,
 * so with a digit other than 0: its value stands for its digits.
 */
const verdicts = new Map<number, boolean>();
const MAX_VERDICTS = 4096;

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
  const known = verdicts.get(value);
  if (known !== undefined) return known;
  if (budget.left <= 0) return true;
  budget.left--;
  const v = isValidPhoneNumber(s.slice(i, end));
  if (verdicts.size >= MAX_VERDICTS) verdicts.delete(verdicts.keys().next().value as number);
  verdicts.set(value, v);
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

/** Every piece of personal data in `s`, left to right, not overlapping. */
export function scanPii(s: string, stop?: () => boolean): Span[] {
  return scan(s, true, stop);
}

/** The scan of scanPii, reading every character (no skipping to the next digit or `@`); the tests hold the two equal. */
export function scanPiiFully(s: string): Span[] {
  return scan(s, false);
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
function scan(s: string, skip: boolean, stop?: () => boolean): Span[] {
  const out: Span[] = [];
  let steps = 0;
  const clean: Clean = { from: -1, to: -1 };
  const n = s.length;
  let lastEnd = 0;
  const budget = { left: PHONE_VALIDATIONS_PER_STRING };
  const push = (kind: string, start: number, end: number) => {
    out.push({ kind, start, end });
    lastEnd = end;
  };
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
      const m = email(s, i, lastEnd, clean);
      if (m !== undefined) {
        push('email', m[0], m[1]);
        i = m[1] - 1;
      }
    } else if (c >= 48 && c <= 57) {
      if (isAlnum(codeAt(s, i - 1))) continue;
      // The whole number is read: go on after it (an email's local part may still end in it).
      const end = numbers(s, i, push, stop);
      i = Math.max(i, end - 1);
    } else if (c === 43) {
      // +
      const e = phone(s, i, budget);
      if (e > 0) push('phone', i, e);
      i = Math.max(i, phoneSkip - 1);
    } else if (c >= 65 && c <= 90) {
      if (isAlnum(codeAt(s, i - 1))) continue;
      const e = ibanAt(s, i);
      if (e > 0) {
        push('iban', i, e);
        i = e - 1;
      }
    }
  }
  return out;
}
