/**
 * Credentials known by their structure alone (src/detect/shaped.ts): a
 * Discord token of any id and a Bitcoin WIF key of any key are found and
 * masked whole wherever they stand, and the checks hold: a WIF key with one
 * character changed, or a token whose first part is no id, is none.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DetectionCache, SECRET_KINDS, spansOf } from '../../../src/detect/index.js';
import { scanShaped } from '../../../src/detect/shaped.js';

const KINDS = new Set(SECRET_KINDS);
const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Bitcoin's base58check of `payload` (the version byte in it), as wallets write a WIF key. */
function base58check(payload: Buffer): string {
  const sum = createHash('sha256').update(createHash('sha256').update(payload).digest()).digest();
  const bytes = Buffer.concat([payload, sum.subarray(0, 4)]);
  let x = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  while (x > 0n) {
    out = B58[Number(x % 58n)]! + out;
    x /= 58n;
  }
  return out;
}

const wif = fc.record({ key: fc.uint8Array({ minLength: 32, maxLength: 32 }), compressed: fc.boolean() }).map(({ key, compressed }) =>
  base58check(Buffer.concat([Buffer.from([0x80]), Buffer.from(key), compressed ? Buffer.from([1]) : Buffer.alloc(0)])),
);

const chars = (alphabet: string, min: number, max: number) => fc.array(fc.constantFrom(...alphabet), { minLength: min, maxLength: max }).map((a) => a.join(''));
const discord = fc
  .tuple(fc.constantFrom(...'123456789'), chars('0123456789', 16, 19), chars(B64URL, 6, 6), chars(B64URL, 27, 38))
  .map(([first, rest, time, hmac]) => `${Buffer.from(first + rest).toString('base64url')}.${time}.${hmac}`);

/** What may stand before and after a token: blanks, quotes, brackets, prose, a name. */
const before = fc.constantFrom('', ' ', '"', "'", '(', '\n', 'token ', 'key: ', 'TOKEN=', 'Bot ');
const after = fc.constantFrom('', ' ', '"', "'", ')', '\n', ' ok', ',', '.', ';');

function maskedWhole(text: string, value: string): boolean {
  const at = text.indexOf(value);
  return spansOf(new DetectionCache(), text, KINDS).some((s) => s.start <= at && at + value.length <= s.end);
}

describe('credentials known by their structure alone', () => {
  it('finds and masks a Discord token of any id, timestamp and HMAC wherever it stands', () => {
    fc.assert(
      fc.property(discord, before, after, (token, b, a) => {
        expect(scanShaped(token)).toEqual([{ kind: 'discord-bot-token', start: 0, end: token.length }]);
        expect(maskedWhole(`${b}${token}${a}`, token)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('finds and masks a WIF key of any key, compressed or not, and reads none with one character changed', () => {
    fc.assert(
      fc.property(wif, before, after, fc.nat(), fc.constantFrom(...B58), (key, b, a, at, c) => {
        expect(scanShaped(key)).toEqual([{ kind: 'bitcoin-private-key', start: 0, end: key.length }]);
        expect(maskedWhole(`${b}${key}${a}`, key)).toBe(true);
        const i = at % key.length;
        fc.pre(key[i] !== c);
        const changed = key.slice(0, i) + c + key.slice(i + 1);
        expect(scanShaped(changed)).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it('reads neither inside a longer token, nor a first part that is no id', () => {
    fc.assert(
      fc.property(discord, wif, fc.constantFrom(...'Ab9_-'), chars('abcdefghijklmnopqrstuvwxyz ', 13, 20), (token, key, glued, words) => {
        expect(scanShaped(`${glued}${token}`)).toEqual([]);
        expect(scanShaped(`${glued}${key}`)).toEqual([]);
        const notId = `${Buffer.from(words).toString('base64url')}${token.slice(token.indexOf('.'))}`;
        expect(scanShaped(notId)).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});
