/**
 * Text a string holds base64- or hex-encoded (docs/behaviour/labels-and-detectors.md#normalization):
 * a model decodes `Z2hwXzE2...` as readily as it reads it, so a credential
 * written as the base64 (or the hex) of its text, alone, after `secret: `
 * or in a `data:` URI, is read as what it encodes; what it encodes is read
 * again for runs, up to DECODE_ROUNDS in all (gitleaks decodes recursively
 * too: base64 of base64, or hex of base64, is no harder for a model).
 *
 * Each run of at least MIN_RUN base64 characters (standard or URL-safe
 * alphabet) is decoded once, its lines read as one where it is wrapped at
 * a width; a run whose bytes are not UTF-8 text with no control character
 * but tab and line breaks, and hold no stretch of such text (a picture, a
 * digest, a random key, an identifier that only looks like base64), is
 * passed over; most such runs fail on the first 3 bytes they encode, read
 * without decoding.
 * Linear in the string: a search that reads most characters of prose not
 * at all and none twice, one decode of a run.
 */
import { isUtf8 } from 'node:buffer';
import { hexValue } from './chars.js';
import { DetectionStopped } from './ruleset.js';

/**
 * Rounds of decoding: a run's text is read for runs of its own, to this
 * depth. Each round reads at most three quarters of the characters of the
 * one before (what runs encode), plus a bounded context per run.
 */
export const DECODE_ROUNDS = 3;

/** Shortest run read: base64 of 12 bytes, below which no credential's text fits. */
export const MIN_RUN = 16;

/**
 * The characters of text: anything but C0 controls other than tab, line feed, carriage return, ESC and BEL (which
 * start and end a terminal's colours and links: a coloured log is text, read with its escape sequences removed,
 * normalize.ts).
 */
const CONTROL = /[\x00-\x06\x08\x0b\x0c\x0e-\x1a\x1c-\x1f]/;

const UTF8 = new TextDecoder('utf-8');

/**
 * The text `bytes` are when they are valid UTF-8 with no control character
 * but tab and line breaks; else undefined. Checked before it is decoded
 * (buffer.isUtf8, native): most bytes that are no text (a digest's hex, a
 * word that happens to be base64) fail there, and a decoder that throws on
 * them costs some 5 µs a throw.
 */
export function utf8Text(bytes: Uint8Array): string | undefined {
  if (!isUtf8(bytes)) return undefined;
  const text = UTF8.decode(bytes);
  return CONTROL.test(text) ? undefined : text;
}

/**
 * Whether a byte may open UTF-8 text: not a control character but tab,
 * line breaks, ESC and BEL, not a continuation byte, not a byte no UTF-8 holds. Bytes
 * whose first fails this are no text, whatever follows.
 */
export function opensUtf8(b: number): boolean {
  return textByte(b) && !(b >= 0x80 && b <= 0xc1) && b < 0xf5;
}

/** A capital letter. */
const UPPER = /[A-Z]/;

/** A run of hex digits only: read as hex (the base64 of text is never one). */
const HEX = /^[0-9a-fA-F]+$/;

/** Per ASCII code: its base64 value (standard or URL-safe alphabet, 0 to 63), or -1. */
const VALUE = new Int8Array(128).fill(-1);
'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.split('').forEach((c, i) => (VALUE[c.charCodeAt(0)] = i));
VALUE[45] = 62; // -
VALUE[95] = 63; // _

function valueAt(s: string, i: number): number {
  const c = s.charCodeAt(i);
  return c < 128 ? VALUE[c]! : -1;
}

/** Whether a decoded byte may go on in UTF-8 text: no control character but tab, line breaks, ESC and BEL (CONTROL). */
function textByte(b: number): boolean {
  return b >= 0x20 || b === 9 || b === 10 || b === 13 || b === 0x1b || b === 7;
}

/**
 * Whether the first 3 bytes a run encodes may be text (most runs of letters
 * and digits that are no base64 of text, paths and identifiers, fail here,
 * without decoding the run); a run of 16 holds them.
 */
function opensText(s: string, i: number): boolean {
  const a = valueAt(s, i);
  const b = valueAt(s, i + 1);
  const c = valueAt(s, i + 2);
  const d = valueAt(s, i + 3);
  const b0 = (a << 2) | (b >> 4);
  const b1 = ((b & 15) << 4) | (c >> 2);
  const b2 = ((c & 3) << 6) | d;
  return opensUtf8(b0) && textByte(b1) && textByte(b2);
}

/** One run and the text it encodes. */
export interface EncodedRun {
  start: number;
  end: number;
  text: string;
}

/** `n`, `r` and `t`: after a backslash, an escaped line break or tab. */
const ESCAPED_BREAK = new Set([110, 114, 116]);

/** Runs read between two asks of the deadline: each may be decoded and read again by the detectors. */
const ASK_RUNS = 63;

/**
 * Every run of `s` that decodes to text, in order, each handed to `each`
 * as it is found (its reading is between two asks, not after them all).
 * A run longer than `maxRun` is passed over undecoded. `stop` is asked
 * every 64 runs. @throws DetectionStopped
 */
export function encodedRuns(s: string, stop?: () => boolean, each?: (run: EncodedRun) => void, maxRun = Infinity): EncodedRun[] {
  // No closure is made per call (this runs for every string a decision reads, most of them holding no run).
  const out: EncodedRun[] = [];
  const n = s.length;
  let runs = 0;
  // The search looks MIN_RUN - 1 characters ahead: where that character is no base64 one, no run of MIN_RUN holds any
  // character before it, and they are passed over unread (prose is read about one character in four). Before `i`
  // stands no base64 character (or nothing), so a run found from the character ahead starts where the walk back ends.
  let i = 0;
  while (i + MIN_RUN <= n) {
    const ahead = i + MIN_RUN - 1;
    if (valueAt(s, ahead) < 0) {
      i = ahead + 1;
      continue;
    }
    let start = ahead;
    while (start > i && valueAt(s, start - 1) >= 0) start--;
    // (An escaped line break or tab before it is no part of it: a JSON string's `\n` then a hex run, whose `n` read
    // with it made a base64 run of the two.)
    if (start > 0 && s.charCodeAt(start - 1) === 92 && ESCAPED_BREAK.has(s.charCodeAt(start))) start++;
    let end = ahead + 1;
    while (end < n && valueAt(s, end) >= 0) end++;
    // Lines of one run wrapped at a width (`base64` wraps at 76, `openssl` at 64, `xxd -p` at 60): the lines after a
    // line break that are as long as the first (the last no longer) are read with it, as one run; lines that make no
    // text together (a line of binary data after a line of text) are read one by one.
    const lines = wrappedLines(s, start, end);
    end = lines === undefined ? end : lines[lines.length - 1]!;
    i = end + 1;
    if (end - start < MIN_RUN || (end - start > maxRun && lines === undefined)) continue;
    askEvery(stop, ++runs);
    const read = end - start > maxRun ? undefined : lines === undefined ? readUnwrapped(s, start, end) : readRun(s, start, end, true);
    if (read !== undefined) {
      if (each === undefined) out.push(read);
      else each(read);
      // Its padding (an `=`, no base64 character, then stands before `i`).
      if (read.end > i - 1) i = read.end;
    } else if (lines !== undefined) {
      let from = start;
      for (const lineEnd of lines) {
        askEvery(stop, ++runs);
        const one = lineEnd - from <= maxRun ? readRun(s, from, lineEnd, false) : undefined;
        if (one !== undefined) {
          if (each === undefined) out.push(one);
          else each(one);
        }
        from = lineEnd + lineBreak(s, lineEnd);
      }
    }
  }
  return out;
}

/** Asks `stop` at every ASK_RUNS + 1st run. @throws DetectionStopped */
function askEvery(stop: (() => boolean) | undefined, runs: number): void {
  if (stop !== undefined && (runs & ASK_RUNS) === 0 && stop()) throw new DetectionStopped('the time for this decision ran out while decoding base64 or hex in a text');
}

/** Slashes of a run after which it is read again (a URL's path glued before an encoding), among its first SLASH_REACH characters. */
const SLASHES = 4;
const SLASH_REACH = 128;
/** Longest run read for an encoding glued to what stands before it (the hex of the base64 of a credential of some 1,500 characters: an Amazon Bedrock short-term key). */
const GLUED_MAX = 4096;
/** Shortest stretch of text a glued reading keeps: a short credential's length, and 8 characters of a session's value encoded. */
const GLUED_STRETCH = 12;
/** How far into a run an encoding glued to a word before it is looked for. */
const GLUED_REACH = 24;
/** Characters of base64 that encode GLUED_STRETCH bytes. */
const GLUED_CHARS = Math.ceil((GLUED_STRETCH * 4) / 3);

/**
 * What the run [start, end) (no line break in it) encodes, as one text for
 * the whole run and its padding, or undefined.
 *
 * - The run as base64 or hex, when its bytes are text from end to end, or
 *   hold stretches of text among bytes that are none (readRun).
 * - An encoding glued to what stands before or after it (`.../webhooks/`
 *   then the base64 of an id and a token, `bot` then the hex of a token, a
 *   path after it: `/` and the letters of a word are base64 characters
 *   too), in a run longer than GLUED_CHARS: each stretch of MIN_RUN hex
 *   digits or more, from its first digit or its second (a word's last
 *   letter may be a hex digit: `bad`, `cafe`); and, when the run is no text
 *   whole, not all hex, and holds a capital letter (the base64 of ASCII
 *   text does), the run from its start to its first slash and
 *   from after each of its first SLASHES slashes (among its first
 *   SLASH_REACH characters), to its end and to the next slash; and from
 *   each of its next GLUED_REACH characters where the bytes encoded from
 *   there start with GLUED_STRETCH of ASCII text (a word glued before it:
 *   no byte of the word then stands against the encoding's text). A glued
 *   reading is decoded only where its characters encode GLUED_STRETCH
 *   bytes of ASCII text in a row (reckoned without decoding), and keeps
 *   stretches of text that long.
 *
 * The texts found are kept once each, a blank line between. A run longer
 * than GLUED_MAX is read as readRun reads it only. Each place is tried
 * reading a few characters (a wrong one fails on its first byte or two),
 * and a run is decoded only from places whose characters encode text:
 * linear in the run.
 */
function readUnwrapped(s: string, start: number, end: number): EncodedRun | undefined {
  // A long run is no encoding glued to a word or a path: read whole, or for stretches of text, as a wrapped line is.
  if (end - start > GLUED_MAX) return readRun(s, start, end, false);
  const texts: string[] = [];
  // Whole, or stretches of text among bytes that are none (a NUL after a credential).
  const own = readRun(s, start, end, false);
  const whole = own?.whole === true ? own : undefined;
  if (own !== undefined) texts.push(own.text);
  let to = own?.end ?? end;
  // Too short to hold GLUED_STRETCH bytes besides what it is glued to.
  if (end - start <= GLUED_CHARS) return own;
  const chars = s.slice(start, end);
  const allHex = HEX.test(chars);
  if (whole === undefined || !allHex) {
    for (let a = start; a < end; ) {
      if (!isHexDigit(s.charCodeAt(a))) {
        a++;
        continue;
      }
      let b = a + 1;
      while (b < end && isHexDigit(s.charCodeAt(b))) b++;
      for (let from = a; b - a >= MIN_RUN && from <= a + 1; from++) {
        // The run itself, all hex, was read above; else decoded only where GLUED_STRETCH bytes in a row are ASCII text
        // (reckoned from the digits, nothing made).
        if ((allHex && from === start) || !hexAsciiStretch(s, from, b)) continue;
        const text = gluedText(Buffer.from(s.slice(from, from + ((b - from) & ~1)), 'hex'));
        if (text === undefined) continue;
        texts.push(text);
        break;
      }
      a = b;
    }
  }
  // The base64 of 12 bytes of ASCII text holds a capital letter (the first character of a group of most bytes of it is
  // one); a path or an identifier in lower case holds none and is passed over (a native search).
  if (whole === undefined && !allHex && UPPER.test(chars)) {
    // A path glued before (`.../webhooks/`) or after (`/getMe`): the run from after each of its first few slashes, to
    // its end and to the next slash (a base64url encoding and a path after it are no base64 together).
    const reach = Math.min(end - MIN_RUN, start + SLASH_REACH);
    for (let k = start - 1, slashes = 0; k < reach && slashes <= SLASHES; k++) {
      if (k >= start && s.charCodeAt(k) !== 47) continue;
      slashes++;
      if (k >= start && asciiStretch(s, k + 1, end)) {
        const text = readRun(s, k + 1, end, false)?.text;
        if (text !== undefined) texts.push(text);
      }
      let next = k + 1;
      while (next < end && s.charCodeAt(next) !== 47) next++;
      if (next < end && asciiStretch(s, k + 1, next)) {
        const text = readRun(s, k + 1, next, false)?.text;
        if (text !== undefined) texts.push(text);
      }
    }
    // A word glued before (`bot`, `token`): the run as base64 from each of its next GLUED_REACH characters where the
    // first GLUED_STRETCH bytes it encodes from there are ASCII text (the encoding's start: most places fail on their
    // first byte or two, reckoned without decoding).
    // Of the places of one alignment, the first two (a group before the encoding may decode to ASCII too); a later one
    // reads what those read, from further on.
    const tried = [0, 0, 0, 0];
    for (let from = start + 1; from <= start + GLUED_REACH && end - from > GLUED_CHARS; from++) {
      if (tried[(from - start) & 3]! >= 2 || !asciiStretch(s, from, end, true)) continue;
      tried[(from - start) & 3]!++;
      let tail = chars.slice(from - start);
      const urlSafe = tail.includes('-') || tail.includes('_');
      if (urlSafe) {
        // Base64url, and a path after it (`/getMe`): read up to where the other alphabet starts.
        const other = tail.search(/[+/]/);
        if (other >= 0) tail = tail.slice(0, other);
      }
      if (tail.length % 4 === 1) tail = tail.slice(0, -1);
      const text = gluedText(Buffer.from(tail, urlSafe ? 'base64url' : 'base64'));
      if (text !== undefined) texts.push(text);
    }
  }
  if (texts.length === 0) return undefined;
  // Its padding with it.
  for (let k = 0; k < 2 && s.charCodeAt(to) === 61; k++) to++;
  // Each text once, a blank line between (two lines as long would read as one run wrapped at a width).
  return { start, end: to, text: texts.length === 1 ? texts[0]! : [...new Set(texts)].join('\n\n') };
}

/**
 * Whether the base64 characters [from, to) encode GLUED_STRETCH bytes in a
 * row that are ASCII text (printable, tab, line breaks): anywhere, or with
 * `first`, as the first bytes they encode. Reckoned from the characters'
 * values, nothing decoded.
 */
function asciiStretch(s: string, from: number, to: number, first = false): boolean {
  if (to - from < GLUED_CHARS) return false;
  let run = 0;
  let bits = 0;
  let held = 0;
  for (let i = from; i < to; i++) {
    const v = valueAt(s, i);
    if (v < 0) return false;
    bits = ((bits << 6) | v) & 0xfff;
    held += 6;
    if (held < 8) continue;
    held -= 8;
    const x = (bits >> held) & 0xff;
    run = x < 0x7f && textByte(x) ? run + 1 : 0;
    if (run >= GLUED_STRETCH) return true;
    // Not text from the first byte; or too few characters left to make the rest of a stretch.
    if (run === 0 && (first || to - i - 1 < GLUED_CHARS)) return false;
  }
  return false;
}

/** Whether the hex digits [from, to) encode GLUED_STRETCH bytes in a row that are ASCII text (printable, tab, line breaks). */
function hexAsciiStretch(s: string, from: number, to: number): boolean {
  let run = 0;
  for (let i = from; i + 1 < to; i += 2) {
    const x = hexValue(s.charCodeAt(i)) * 16 + hexValue(s.charCodeAt(i + 1));
    run = x < 0x7f && textByte(x) ? run + 1 : 0;
    if (run >= GLUED_STRETCH) return true;
    // Too few digits left to make the rest of a stretch.
    if (run === 0 && to - i - 2 < 2 * GLUED_STRETCH) return false;
  }
  return false;
}

/** The stretches of text of at least GLUED_STRETCH bytes `bytes` hold (a glued reading's scraps are shorter), or undefined. */
function gluedText(bytes: Buffer): string | undefined {
  const text = utf8Text(bytes);
  if (text !== undefined) return text.length >= GLUED_STRETCH ? text : undefined;
  return textStretches(bytes, GLUED_STRETCH);
}

function isHexDigit(c: number): boolean {
  return hexValue(c) >= 0;
}

/** The length of the line break at `i` (CRLF or LF), or 0. */
function lineBreak(s: string, i: number): number {
  const c = s.charCodeAt(i);
  return c === 10 ? 1 : c === 13 && s.charCodeAt(i + 1) === 10 ? 2 : 0;
}

/**
 * Where each line of a run wrapped at a width ends, when the run [start,
 * end) is at least MIN_RUN characters, a multiple of 4, and ends a line
 * that lines as long follow; undefined when none follows. Each character
 * is read once.
 */
function wrappedLines(s: string, start: number, end: number): number[] | undefined {
  const width = end - start;
  if (width < MIN_RUN || width % 4 !== 0 || lineBreak(s, end) === 0) return undefined;
  // Lines of hex digits go on with hex digits only (a word after them is no part of them).
  const hex = HEX.test(s.slice(start, end));
  const ends = [end];
  for (let at = end; ; ) {
    const from = at + lineBreak(s, at);
    if (from === at) break;
    let e = from;
    while (e < s.length && e - from <= width && (hex ? isHexDigit(s.charCodeAt(e)) : valueAt(s, e) >= 0)) e++;
    const len = e - from;
    // A line longer than the width, or one that goes on in other letters, is no line of the run.
    if (len === 0 || len > width || (e < s.length && valueAt(s, e) >= 0)) break;
    ends.push(e);
    at = e;
    if (len < width) break;
  }
  return ends.length > 1 ? ends : undefined;
}

/**
 * The text the run [start, end) encodes (with its line breaks when
 * `wrapped`, and its padding), or undefined: text from end to end
 * (`whole`), or its stretches of text among bytes that are none
 * (textStretches).
 */
function readRun(s: string, start: number, end: number, wrapped: boolean): (EncodedRun & { whole: boolean }) | undefined {
  const chars = wrapped ? s.slice(start, end).replace(/\r?\n/g, '') : s.slice(start, end);
  if (chars.length < MIN_RUN) return undefined;
  if (HEX.test(chars)) {
    // Hex digits: the hex of text (two digits a byte, as gitleaks also decodes), or a digest, which is no text. Its
    // first byte must open text before the run is decoded.
    const opens = opensUtf8(parseInt(chars.slice(0, 2), 16));
    return opens && chars.length % 2 === 0 ? runOf(Buffer.from(chars, 'hex'), start, end) : undefined;
  }
  if (!opensText(chars, 0)) return undefined;
  let padded = end;
  for (let k = 0; k < 2 && s.charCodeAt(padded) === 61; k++) padded++;
  // Only a run that is base64 in one alphabet, at a length a whole encoding has (a last group of 2, 3 or 4).
  const urlSafe = chars.includes('-') || chars.includes('_');
  if (urlSafe && (chars.includes('+') || chars.includes('/'))) return undefined;
  if (chars.length % 4 === 1) return undefined;
  return runOf(Buffer.from(chars, urlSafe ? 'base64url' : 'base64'), start, padded);
}

/**
 * The run [start, end) whose bytes are `bytes`, when they are text of
 * MIN_STRETCH characters or more; or, when bytes that
 * are no text stand among it (a NUL after a credential, a line of binary
 * data wrapped with lines of text), its stretches of MIN_STRETCH bytes or
 * more, each a line: a model that decodes the run reads them.
 */
function runOf(bytes: Buffer, start: number, end: number): (EncodedRun & { whole: boolean }) | undefined {
  const whole = utf8Text(bytes);
  let text = whole ?? textStretches(bytes);
  if (text === undefined || text.length < MIN_STRETCH) return undefined;
  // (Bytes whose text opens with an assignment's operator make none with the name written before the run: a writer
  // encodes a value, not its `=`. `password ` then random bytes that decode to `=p%=܀h0` hold no password: a line break
  // stands there instead, as before a stretch after bytes that are no text.)
  if (text.charCodeAt(0) === 61 || text.charCodeAt(0) === 58) text = `\n${text}`;
  return { start, end, text, whole: whole !== undefined };
}

/** Shortest stretch of text read among bytes that are not text throughout. */
const MIN_STRETCH = 8;

/**
 * The stretches of `bytes` that are UTF-8 text with no control character but tab, line breaks, ESC and BEL, `least`
 * bytes or more each, a line each; undefined when none is. One pass.
 * A stretch is read with what stands before the run only where it starts at the first byte, and with what stands
 * after it only where it ends at the last: bytes that are no text stand between elsewhere, and a model reads no name
 * or quote through them (random bytes, `password <- ` then the base64 of `\xf0\t\n\0\0\0\x02'N_5@dm3`, hold no
 * quoted password). A line break stands there instead.
 */
function textStretches(bytes: Uint8Array, least = MIN_STRETCH): string | undefined {
  const parts: string[] = [];
  let first = -1;
  const n = bytes.length;
  let from = 0;
  let i = 0;
  while (i < n) {
    const b = bytes[i]!;
    // The length of the character at i, or 0 where it is none (a control, a stray or short sequence).
    let len = b < 0x80 ? (textByte(b) ? 1 : 0) : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    for (let k = 1; k < len; k++) {
      if (i + k >= n || (bytes[i + k]! & 0xc0) !== 0x80) len = 0;
    }
    // (A sequence UTF-8 forbids, though its continuation bytes are such, is none: an overlong form, `F0 81 ...`, a
    // surrogate's, `ED A0 ...`, one past U+10FFFF. A decoder makes each of its bytes a replacement character, which a
    // stretch of text never holds.)
    if (len > 2) {
      const c = bytes[i + 1]!;
      if ((b === 0xe0 && c < 0xa0) || (b === 0xed && c > 0x9f) || (b === 0xf0 && c < 0x90) || (b === 0xf4 && c > 0x8f)) len = 0;
    }
    if (len > 0) {
      i += len;
      continue;
    }
    if (i - from >= least) {
      if (first < 0) first = from;
      parts.push(UTF8.decode(bytes.subarray(from, i)));
    }
    from = ++i;
  }
  const last = n - from >= least;
  if (last) {
    if (first < 0) first = from;
    parts.push(UTF8.decode(bytes.subarray(from, n)));
  }
  if (parts.length === 0) return undefined;
  return `${first > 0 ? '\n' : ''}${parts.join('\n')}${last ? '' : '\n'}`;
}
