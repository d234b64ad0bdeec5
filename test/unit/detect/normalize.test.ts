/** Text as the detectors read it (src/detect/normalize.ts): what each normalization makes of a value, and where each character came from. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeForDetection } from '../../../src/detect/normalize.js';

describe('normalizeForDetection', () => {
  it('reads a value behind each normalization as the value', () => {
    const v = 'AKIAIOSFODNN7EXAMPLE';
    for (const written of ['AKIA\u200bIOSFODNN7EXAMPLE', 'AKIA\u00adIOSFODNN7EXAMPLE', '\uff21KIAIOSFODNN7EXAMPLE', 'AK\u0406AIOSFODNN7EXAMPLE', '%41KIAIOSFODNN7EXAMPLE', 'A%EF%BC%ABIAIOSFODNN7EXAMPLE']) {
      expect(normalizeForDetection(written)?.text, written).toBe(v);
    }
  });

  it('leaves plain ASCII alone, and maps every character back inside the input, in order', () => {
    expect(normalizeForDetection('plain ASCII, 100% sure')).toBeUndefined();
    fc.assert(
      fc.property(fc.string({ unit: fc.oneof(fc.constantFrom('a', '%', '4', '1', 'E', 'F', '\u200b', '\u00ad', '\u0430', '\uff21', 'ß', '\ufb01', '😀'), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 })), maxLength: 60 }), (s) => {
        const n = normalizeForDetection(s);
        if (n === undefined) return;
        expect(n.from.length).toBe(n.text.length);
        for (let i = 0; i < n.text.length; i++) {
          expect(n.from[i]).toBeLessThan(n.to[i]!);
          expect(n.to[i]).toBeLessThanOrEqual(s.length);
          if (i > 0) expect(n.from[i]).toBeGreaterThanOrEqual(n.from[i - 1]!);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
