/**
 * A fence and what is inside it (src/policy/effects.ts): the identifiers of
 * a proxied message are masked from inside the fence a policy may put
 * around every text (src/bindings/proxy/mask-strings.ts), so reading a
 * fence back must give exactly what was fenced, and nothing for a text
 * that is not one of Trustgate's fences.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fence, unfence } from '../../../src/policy/effects.js';

describe('unfence', () => {
  it('reads back exactly what was fenced, whatever it holds (a closing tag of its own included)', () => {
    const boundary = fc.stringMatching(/^[0-9a-f]{32}$/);
    const text = fc.oneof(fc.string(), fc.constantFrom('', '\n', '</untrusted-content boundary="00">', 'a\n</untrusted-content boundary="ab">\nb'));
    fc.assert(fc.property(text, boundary, (t, b) => {
      expect(unfence(fence(t, b))).toBe(t);
    }), { numRuns: 2000 });
  });

  it('answers nothing for a text that is not a fence', () => {
    fc.assert(fc.property(fc.string(), (t) => {
      expect(unfence(t)).toBeUndefined();
    }), { numRuns: 2000 });
    const f = fence('x', 'ab12');
    for (const broken of [f.slice(1), f.slice(0, -1), f.replace('boundary="ab12">\n', 'boundary="ab13">\n'), f.replace('untrusted source', 'trusted source')]) expect(unfence(broken)).toBeUndefined();
  });
});
