import { describe, expect, it } from 'vitest';
import { DetectionCache } from '../../../src/detect/index.js';

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

  it('a text joined from parts whose seam holds a value is read by parts', () => {
    const c = new DetectionCache();
    // `4111 1111` / `1111 1111`: a card only across the newline, which the parts never see.
    const joined = c.join(['4111 1111', '1111 1111']);
    expect(c.kinds('pii', joined)).toEqual([]);
    expect(new DetectionCache().kinds('pii', '4111 1111 1111 1111')).toEqual(['credit-card']);
  });
});
