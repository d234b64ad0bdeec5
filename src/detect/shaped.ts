/**
 * Credentials known by their structure alone, with no prefix or name to
 * find them by (docs/behaviour/labels-and-detectors.md): each candidate a
 * native search finds is checked, not only matched, so that a random
 * token of the same length is none.
 *
 * - `discord-bot-token`: a Discord bot's (or user's) token, three base64url
 *   parts joined by dots: the account's id (a snowflake of 17 to 20
 *   digits) in base64, a timestamp of 6 characters, an HMAC of 27 to 38
 *   (Discord's developer documentation; gitleaks' Discord rules read a
 *   token only after the word `discord`). The first part is checked to
 *   decode to the digits of an id.
 * - `bitcoin-private-key`: a Bitcoin private key in wallet import format
 *   (WIF, Bitcoin's base58check: `5` and 50 characters, or `K`/`L` and 51
 *   for a key of a compressed public key), checked by its version byte
 *   (0x80), its length and its checksum (the first 4 bytes of SHA-256 of
 *   SHA-256 of the rest): a random base58 string of that shape passes one
 *   time in 2^32.
 *
 * Linear in the text: the search passes over what starts no candidate,
 * and each candidate is read once, to a bounded length.
 */
import { hash } from 'node:crypto';
import { codeAt, isB64url, isWord, run, type Span } from './chars.js';
import { DetectionStopped } from './ruleset.js';

/** The kinds this module reports. */
export const SHAPED_KINDS = ['discord-bot-token', 'bitcoin-private-key'] as const;

/**
 * Where a candidate may start, at the start of a token (no base64url
 * character before it): four characters of the base64 of three digits
 * (three bytes `0x30`-`0x39` encode as one of `MNO`, then one of `DTjz`,
 * one of `AEIMQUYcgk`, one of `w`-`z` and `0`-`5`), or a WIF key's first
 * character and 49 more of base58. Only a token's start starts a try, and
 * a try reads within its token: linear. The checks below read the rest.
 */
const CANDIDATE = /(?<![\w-])(?:[MNO][DTjz][AEIMQUYcgk][w-z0-5]|[5KL][1-9A-HJ-NP-Za-km-z]{49})/g;

/** A Discord account's id (a snowflake): 17 to 20 digits, the first no zero. */
const SNOWFLAKE = /^[1-9][0-9]{16,19}$/;

/** A Discord token starting at `i` (no base64url character before it): its end, or -1. */
function discordAt(s: string, i: number): number {
  // The id: 17 to 20 digits in base64 without padding (23 to 27 characters).
  const a = run(s, i, isB64url, 27);
  if (a < 23 || a > 27 || codeAt(s, i + a) !== 46) return -1;
  const id = Buffer.from(s.slice(i, i + a), 'base64url').toString('latin1');
  if (!SNOWFLAKE.test(id)) return -1;
  // The timestamp: 6 characters; the HMAC: 27 to 38.
  const t = i + a + 1;
  if (run(s, t, isB64url, 6) !== 6 || codeAt(s, t + 6) !== 46) return -1;
  const h = t + 7;
  const m = run(s, h, isB64url, 38);
  return m >= 27 && m <= 38 ? h + m : -1;
}

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const BASE58_VALUE = new Int8Array(128).fill(-1);
for (let k = 0; k < BASE58.length; k++) BASE58_VALUE[BASE58.charCodeAt(k)] = k;

/** A character of Bitcoin's base58 alphabet. */
function isBase58(c: number): boolean {
  return c < 128 && BASE58_VALUE[c]! >= 0;
}

/** Limbs of 32 bits a WIF key's base58 fills: 38 bytes. */
const LIMBS = 10;
const limbs = new Float64Array(LIMBS);
const wifBytes = new Uint8Array(LIMBS * 4);

/**
 * The `n` bytes base58 s[i, i + len) encodes, in `wifBytes`' last `n` (Bitcoin's alphabet, every character checked by
 * the caller), or false when it needs more. In limbs of 32 bits, least significant first (a limb times 58 and a carry
 * stays below 2^38, exact in a double): some 500 steps, no big integer made.
 */
function base58Into(s: string, i: number, len: number, n: number): boolean {
  limbs.fill(0);
  for (let k = i; k < i + len; k++) {
    let carry = BASE58_VALUE[s.charCodeAt(k)]!;
    for (let j = 0; j < LIMBS; j++) {
      const x = limbs[j]! * 58 + carry;
      carry = Math.floor(x / 4294967296);
      limbs[j] = x - carry * 4294967296;
    }
    if (carry !== 0) return false;
  }
  for (let j = 0; j < LIMBS; j++) {
    const x = limbs[j]!;
    const at = wifBytes.length - 4 * (j + 1);
    wifBytes[at] = x >>> 24;
    wifBytes[at + 1] = (x >>> 16) & 255;
    wifBytes[at + 2] = (x >>> 8) & 255;
    wifBytes[at + 3] = x & 255;
  }
  // Nothing above the n bytes.
  for (let k = 0; k < wifBytes.length - n; k++) if (wifBytes[k] !== 0) return false;
  return true;
}

/** A WIF key starting at `i`: its end, or -1. */
function wifAt(s: string, i: number): number {
  const n = s.charCodeAt(i) === 53 /* 5 */ ? 51 : 52;
  const end = i + n;
  if (run(s, i, isBase58, n) !== n || isWord(codeAt(s, end))) return -1;
  // 0x80, the key's 32 bytes (and 0x01 for a compressed public key's), the checksum's 4.
  const size = n === 51 ? 37 : 38;
  if (!base58Into(s, i, n, size)) return -1;
  const bytes = wifBytes.subarray(wifBytes.length - size);
  if (bytes[0] !== 0x80 || (size === 38 && bytes[33] !== 1)) return -1;
  const sum = hash('sha256', hash('sha256', bytes.subarray(0, size - 4), 'buffer'), 'buffer');
  for (let k = 0; k < 4; k++) if (sum[k] !== bytes[size - 4 + k]) return -1;
  return end;
}

/** Every Discord token and WIF key of `s`, in order, not overlapping. `stop` is asked every 64 candidates. @throws DetectionStopped */
export function scanShaped(s: string, stop?: () => boolean): Span[] {
  const out: Span[] = [];
  let tries = 0;
  CANDIDATE.lastIndex = 0;
  for (let m = CANDIDATE.exec(s); m !== null; m = CANDIDATE.exec(s)) {
    if (stop !== undefined && (++tries & 63) === 0 && stop()) throw new DetectionStopped('the time for this decision ran out inside the credentials known by their structure');
    const i = m.index;
    const end = m[0].length === 4 ? discordAt(s, i) : wifAt(s, i);
    if (end < 0) continue;
    out.push({ kind: m[0].length === 4 ? 'discord-bot-token' : 'bitcoin-private-key', start: i, end });
    CANDIDATE.lastIndex = end;
  }
  return out;
}
