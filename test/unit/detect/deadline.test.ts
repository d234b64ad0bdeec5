/**
 * Every scan a decision runs asks the decision's deadline as it goes, on the
 * texts that make each part of it work hardest: none reads a crafted text
 * to its end without asking (a 7 MiB result once held the process 0.6 s in
 * the credential formats alone, 0.6 s in normalization, 0.3 s in the
 * generic assignments). A deadline never reached changes no answer.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DetectionCache, DetectionStopped, scanPii, scanSecrets, withDetection, type Detector } from '../../../src/detect/index.js';
import { normalizeForDetection } from '../../../src/detect/normalize.js';
import { scanFormats } from '../../../src/detect/secrets.js';
import { scanRuleset } from '../../../src/detect/ruleset.js';
import { encodedRuns } from '../../../src/detect/encoded.js';

/** `unit` repeated to at least `length` characters. */
const fill = (unit: string, length: number) => unit.repeat(Math.ceil(length / unit.length));

/** How often `scan` asks its deadline over `text` (a deadline never reached). */
function asks(scan: (s: string, stop: () => boolean) => unknown, text: string): number {
  let n = 0;
  scan(text, () => (n++, false));
  return n;
}

describe('each part of the scans asks the deadline on the texts that work it hardest', () => {
  const L = 400_000;
  // [what, the part's scan, its hardest unit, the most characters it may read between two asks]
  const cases: Array<[string, (s: string, stop: () => boolean) => unknown, string, number]> = [
    ['credential formats, URL-like', scanFormats, 'a://b ', 6 * 4096],
    ['credential formats, connection strings', scanFormats, 'postgres://app:Xk9mQ2vL7pR@db.example.com ', 42 * 4096],
    ['credential formats, AWS keys', scanFormats, 'AKIAIOSFODNN7EXAMPLE ', 21 * 4096],
    ['normalization, escapes and confusables', (s, stop) => normalizeForDetection(s, stop), '%41KIA\u0430\u200b%EF%BC%AB ', 22 * 4096],
    ['normalization, character references and escapes', (s, stop) => normalizeForDetection(s, stop), '&#65;\\u0041&amp;\\x41 ', 22 * 4096],
    ['base64 runs', (s, stop) => encodedRuns(s, stop), 'Zm9vYmFyYmF6cXV4cXV1eA== ', 26 * 4096],
    // The generic assignments (no keyword of the rule set in the name): asked once per 4,096 operators.
    ['generic assignments', scanSecrets, 'q = "Zx9Lm2Pq8Rt5Vw3Yb7Nc" ', 26 * 4096],
    ['the rule set, one keyword again and again', scanRuleset, 'sourcegraph_token = "0123456789abcdef0123456789abcdef01234567" ', 65536],
    ['the rule set, no keyword at all', scanRuleset, 'lorem ipsum dolor ', 65536],
    ['personal data, digits', scanPii, '4111 1111-1111 1111 +44 20 7946 0958 ', 37 * 4096],
    ['personal data, one-digit groups', scanPii, '4 5 x ', 6 * 4096],
    // Digits that open nothing, which the search for the next place passes over without the scan's loop.
    ['personal data, digits inside words', scanPii, 'password: Xy9', 13 * 4096],
  ];
  for (const [what, scan, unit, most] of cases) {
    it(what, () => {
      const text = fill(unit, L);
      expect(asks(scan, text)).toBeGreaterThanOrEqual(Math.floor(text.length / most) - 1);
      // Told to stop at its first ask, it stops.
      expect(() => scan(text, () => true)).toThrow(DetectionStopped);
    });
  }
});

describe('a deadline never reached changes no answer', () => {
  const pieces = fc.constantFrom(
    'a://b ', 'postgres://app:Xk9mQ2vL7pR@db.example.com ', 'AKIAIOSFODNN7EXAMPLE ', '%41KIA\u0430\u200b%EF%BC%AB ', 'q = "Zx9Lm2Pq8Rt5Vw3Yb7Nc" ',
    'sourcegraph_token = "0123456789abcdef0123456789abcdef01234567" ', 'lorem ipsum ', '4111 1111-1111 1111 ', '+44 20 7946 0958 ', 'jane.doe@example.com ',
    'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 ', 'AKIA\u200bIOSFODNN7EXAMPLE ', 'caf\u00e9 ', 'Z2hwX0ExYjJDM2Q0RTVmNkc3aDhJOWowSzFsMk0zbjRPNXA2UTdyOA== ', '&#65;KIAIOSFODNN7EXAMPLE ',
  );
  it('the decision\'s scans with a deadline that is never reached answer as the scans without one', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(pieces, fc.integer({ min: 1, max: 3000 })), { minLength: 1, maxLength: 6 }), fc.constantFrom<Detector>('secrets', 'pii'), (runs, d) => {
        const text = runs.map(([p, n]) => p.repeat(n)).join('');
        const timed = new DetectionCache(() => false);
        const untimed = new DetectionCache();
        expect(withDetection(timed, () => timed.spans(d, text))).toEqual(untimed.spans(d, text));
        expect(timed.stopped).toBe(false);
      }),
      { numRuns: 60 },
    );
  });
});
