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
import { DetectionStopped } from './ruleset.js';

/**
 * Rounds of decoding: a run's text is read for runs of its own, to this
 * depth. Each round reads at most three quarters of the characters of the
 * one before (what runs encode), plus a bounded context per run.
 */
export const DECODE_ROUNDS = 3;

/** Shortest run read: base64 of 12 bytes, below which no credential's text fits. */
export const MIN_RUN = 16;

/** The characters of text: anything but C0 controls other than tab, line feed and carriage return. */
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f]/;

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
 * Whether a byte may open UTF-8 text: not a control character but tab and
 * line breaks, not a continuation byte, not a byte no UTF-8 holds. Bytes
 * whose first fails this are no text, whatever follows.
 */
export function opensUtf8(b: number): boolean {
  return (b >= 0x20 || b === 9 || b === 10 || b === 13) && !(b >= 0x80 && b <= 0xc1) && b < 0xf5;
}

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

/** Whether a decoded byte may go on in UTF-8 text: no control character but tab and line breaks. */
function textByte(b: number): boolean {
  return b >= 0x20 || b === 9 || b === 10 || b === 13;
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

/** Runs read between two asks of the deadline: each may be decoded and read again by the detectors. */
const ASK_RUNS = 63;

/**
 * Every run of `s` that decodes to text, in order, each handed to `each`
 * as it is found (its reading is between two asks, not after them all).
 * A run longer than `maxRun` is passed over undecoded. `stop` is asked
 * every 64 runs. @throws DetectionStopped
 */
export function encodedRuns(s: string, stop?: () => boolean, each?: (run: EncodedRun) => void, maxRun = Infinity): EncodedRun[] {
  const out: EncodedRun[] = [];
  const hand = (run: EncodedRun) => (each === undefined ? out.push(run) : each(run));
  const n = s.length;
  let runs = 0;
  const ask = () => {
    if (stop !== undefined && (++runs & ASK_RUNS) === 0 && stop()) throw new DetectionStopped('the time for this decision ran out while decoding base64 or hex in a text');
  };
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
    let end = ahead + 1;
    while (end < n && valueAt(s, end) >= 0) end++;
    // Lines of one run wrapped at a width (`base64` wraps at 76, `openssl` at 64, `xxd -p` at 60): the lines after a
    // line break that are as long as the first (the last no longer) are read with it, as one run; lines that make no
    // text together (a line of binary data after a line of text) are read one by one.
    const lines = wrappedLines(s, start, end);
    end = lines === undefined ? end : lines[lines.length - 1]!;
    i = end + 1;
    if (end - start < MIN_RUN || (end - start > maxRun && lines === undefined)) continue;
    ask();
    const read = end - start <= maxRun ? readRun(s, start, end, lines !== undefined) : undefined;
    if (read !== undefined) {
      hand(read);
      // Its padding (an `=`, no base64 character, then stands before `i`).
      if (read.end > i - 1) i = read.end;
    } else if (lines !== undefined) {
      let from = start;
      for (const lineEnd of lines) {
        ask();
        const one = lineEnd - from <= maxRun ? readRun(s, from, lineEnd, false) : undefined;
        if (one !== undefined) hand(one);
        from = lineEnd + lineBreak(s, lineEnd);
      }
    }
  }
  return out;
}

function isHexDigit(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
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

/** The text the run [start, end) encodes (with its line breaks when `wrapped`, and its padding), or undefined. */
function readRun(s: string, start: number, end: number, wrapped: boolean): EncodedRun | undefined {
  const chars = wrapped ? s.slice(start, end).replace(/\r?\n/g, '') : s.slice(start, end);
  if (chars.length < MIN_RUN) return undefined;
  if (HEX.test(chars)) {
    // Hex digits: the hex of text (two digits a byte, as gitleaks also decodes), or a digest, which is no text. Its
    // first byte must open text before the run is decoded.
    const opens = opensUtf8(parseInt(chars.slice(0, 2), 16));
    const text = opens && chars.length % 2 === 0 ? textOf(Buffer.from(chars, 'hex')) : undefined;
    return text === undefined ? undefined : { start, end, text };
  }
  if (!opensText(chars, 0)) return undefined;
  let padded = end;
  for (let k = 0; k < 2 && s.charCodeAt(padded) === 61; k++) padded++;
  // Only a run that is base64 in one alphabet, at a length a whole encoding has (a last group of 2, 3 or 4).
  const urlSafe = chars.includes('-') || chars.includes('_');
  if (urlSafe && (chars.includes('+') || chars.includes('/'))) return undefined;
  if (chars.length % 4 === 1) return undefined;
  const text = textOf(Buffer.from(chars, urlSafe ? 'base64url' : 'base64'));
  return text === undefined ? undefined : { start, end: padded, text };
}

/** Shortest stretch of text read among bytes that are not text throughout. */
const MIN_STRETCH = 8;

/**
 * The text `bytes` are (utf8Text), when it is at least 8 characters long;
 * or, when bytes that are no text stand among it (a NUL after a credential,
 * a line of binary data wrapped with lines of text), its stretches of 8
 * bytes or more, each a line: a model that decodes the run reads them.
 */
function textOf(bytes: Buffer): string | undefined {
  const text = utf8Text(bytes) ?? textStretches(bytes);
  return text === undefined || text.length < MIN_STRETCH ? undefined : text;
}

/** The stretches of `bytes` that are UTF-8 text with no control character but tab and line breaks, MIN_STRETCH bytes or more each, a line each; undefined when none is. One pass. */
function textStretches(bytes: Uint8Array): string | undefined {
  const parts: string[] = [];
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
    if (len > 0) {
      i += len;
      continue;
    }
    if (i - from >= MIN_STRETCH) parts.push(UTF8.decode(bytes.subarray(from, i)));
    from = ++i;
  }
  if (n - from >= MIN_STRETCH) parts.push(UTF8.decode(bytes.subarray(from, n)));
  return parts.length === 0 ? undefined : parts.join('\n');
}
