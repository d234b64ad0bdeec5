/** Credentials written as the base64 or the hex of their text (src/detect/encoded.ts): read as what they encode, up to three rounds, and nothing else decoded. */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import credentials from '../../fixtures/secrets/credentials.json' with { type: 'json' };
import { DetectionCache } from '../../../src/detect/index.js';
import { DECODE_ROUNDS, encodedRuns } from '../../../src/detect/encoded.js';

const secrets = (s: string) => new DetectionCache().spans('secrets', s);
/** One-line credentials the scan finds in their own line. */
const lines = credentials.credentials.filter((c) => !c.value.includes('\n')).map((c) => c.text);

describe('base64 in a text', () => {
  it('a credential line written as base64, in either alphabet, or as hex, alone, after a name or in a data: URI, is found and the run masked whole', () => {
    fc.assert(
      fc.property(fc.constantFrom(...lines), fc.constantFrom<BufferEncoding>('base64', 'base64url', 'hex'), fc.constantFrom('', 'secret: ', 'icon data:text/plain;base64,', '"blob":"'), (line, enc, before) => {
        expect(secrets(line).length, line).toBeGreaterThan(0);
        const run = Buffer.from(line).toString(enc);
        const text = `${before}${run} ok`;
        const spans = secrets(text);
        expect(spans.length, text).toBeGreaterThan(0);
        // The whole run is inside what is masked.
        expect(spans.some((sp) => sp.start <= before.length && sp.end >= before.length + run.length), text).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('reads what a run encodes for runs again, up to three rounds (base64 of base64, hex of base64, ...), and masks the outer run whole', () => {
    const encodings = fc.constantFrom<BufferEncoding>('base64', 'base64url', 'hex');
    fc.assert(
      fc.property(fc.constantFrom(...lines), fc.array(encodings, { minLength: 2, maxLength: DECODE_ROUNDS }), fc.constantFrom('', 'secret: ', 'data:text/plain;base64,'), (line, chain, before) => {
        const run = chain.reduce((acc, enc) => Buffer.from(acc).toString(enc), line);
        const text = `${before}${run} ok`;
        const spans = secrets(text);
        expect(spans.some((sp) => sp.start <= before.length && sp.end >= before.length + run.length), `${chain.join(' of ')}: ${text}`).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('passes over what encodes no text', () => {
    // Random bytes in base64 or hex (a key, a digest, an id): no credential read in them, whatever they decode to.
    fc.assert(
      fc.property(fc.integer({ min: 8, max: 400 }), fc.constantFrom<BufferEncoding>('base64', 'hex'), (n, enc) => {
        expect(secrets(`sum ${randomBytes(n).toString(enc)} end`)).toEqual([]);
      }),
      { numRuns: 300 },
    );
    expect(encodedRuns('sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU= e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')).toEqual([]);
  });
});
