import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DetectionCache, scanPii, scanSecrets, type Detector } from '../../../src/detect/index.js';

describe('DetectionCache joins', () => {
  it('answers a joined text from its parts, scanning each part once, whatever the order of joins', () => {
    const c = new DetectionCache();
    const a = c.join(['mail jane.doe@example.com', 'key AKIAIOSFODNN7EXAMPLE']);
    const b = c.join(['card 4111 1111 1111 1111', 'nothing']);
    // The same text as `a`, built apart: answered as `a` (by content, not identity).
    const a2 = ['mail jane.doe@example.com', 'key AKIAIOSFODNN7EXAMPLE'].join('\n');
    expect(c.kinds('pii', a)).toEqual(['email']);
    expect(c.kinds('secrets', a2)).toEqual(['aws-access-key-id']);
    expect(c.kinds('pii', b)).toEqual(['credit-card']);
    expect(c.kinds('secrets', b)).toEqual([]);
    expect(c.scans).toEqual({ secrets: 4, pii: 4 });
  });

  it('a value split over two parts is read across their seam, and each part holds its piece of it', () => {
    const c = new DetectionCache();
    const parts = ['key AKIAIOSFOD', 'NN7EXAMPLE for the deploy'];
    const joined = c.join(parts);
    expect(c.kinds('secrets', joined)).toEqual(['aws-access-key-id']);
    expect(c.spans('secrets', parts[0]!)).toEqual([{ kind: 'aws-access-key-id', start: 4, end: 14 }]);
    expect(c.spans('secrets', parts[1]!)).toEqual([{ kind: 'aws-access-key-id', start: 0, end: 10 }]);
    // Neither part alone holds one.
    expect(new DetectionCache().kinds('secrets', parts[0]!)).toEqual([]);
  });
});

describe('DetectionCache lookups', () => {
  it('answer what a scan of the string answers, for strings repeated, equal but built apart, and past the ones compared by identity', () => {
    const texts = ['mail jane.doe@example.com', 'key AKIAIOSFODNN7EXAMPLE', 'card 4111 1111 1111 1111', 'nothing', 'a', 'b', '+44 20 7946 0958', 'ghp_0123456789abcdefghijABCDEFGHIJ012345'];
    const text = fc.oneof(fc.constantFrom(...texts), fc.string({ maxLength: 6 }));
    const scan: Record<Detector, typeof scanPii> = { pii: scanPii, secrets: scanSecrets };
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom<Detector>('pii', 'secrets'), text, fc.boolean()), { maxLength: 40 }), (lookups) => {
        const c = new DetectionCache();
        const seen: Record<Detector, Set<string>> = { pii: new Set(), secrets: new Set() };
        for (const [d, s, apart] of lookups) {
          // The same content as a string of its own (not the same pointer).
          const t = apart ? [...s].join('') : s;
          expect(c.spans(d, t)).toEqual(scan[d](s));
          if (s.length > 0) seen[d].add(s);
        }
        // Each distinct string scanned once per detector.
        expect(c.scans).toEqual({ pii: seen.pii.size, secrets: seen.secrets.size });
      }),
      { numRuns: 500 },
    );
  });
});
