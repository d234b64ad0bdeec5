/**
 * Deep-frozen values and the work kept per value: what is kept for a
 * deep-frozen value is what would be computed for the same value unfrozen,
 * and a value that is not deep-frozen (also one frozen only at its top) is
 * computed anew every time, so a change to it is seen.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { deepFreeze, isDeepFrozen, perFrozen } from '../../../src/json/frozen.js';

describe('deepFreeze', () => {
  it('freezes every nested member, also of a value nested far deeper than the stack allows', () => {
    const t = deepFreeze({ a: { b: { c: [1, { d: 'x' }] } } });
    expect(Object.isFrozen(t.a.b.c[1])).toBe(true);
    expect(isDeepFrozen(t.a.b)).toBe(true);
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 200_000; i++) deep = deep.next = {};
    expect(() => deepFreeze(root)).not.toThrow();
    expect(Object.isFrozen(deep)).toBe(true);
  });

  it('freezes what lies below a member someone froze only at its top', () => {
    const inner = { mutable: { x: 1 } };
    Object.freeze(inner);
    expect(isDeepFrozen(inner)).toBe(false);
    const outer = deepFreeze({ inner });
    expect(Object.isFrozen(outer.inner.mutable)).toBe(true);
    expect(isDeepFrozen(outer)).toBe(true);
  });

  it('counts a value frozen with Object.freeze alone as not deep-frozen', () => {
    expect(isDeepFrozen(Object.freeze({ a: {} }))).toBe(false);
    expect(isDeepFrozen('text')).toBe(false);
    expect(isDeepFrozen(null)).toBe(false);
  });
});

describe('perFrozen', () => {
  it('gives for a deep-frozen value what it gives for the same value unfrozen, computed once', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        let runs = 0;
        const f = perFrozen((x: unknown) => {
          runs++;
          return JSON.stringify(x);
        });
        const want = f(v);
        const frozen = deepFreeze(structuredClone(v));
        expect(f(frozen)).toBe(want);
        expect(f(frozen)).toBe(want);
        // Objects are kept (2 runs: the plain value, the frozen one once); primitives are computed every time.
        expect(runs).toBe(typeof v === 'object' && v !== null ? 2 : 3);
      }),
    );
  });

  it('computes anew for a value frozen only at its top, so a change below it is seen', () => {
    const f = perFrozen((x: { inner: { n: number } }) => x.inner.n);
    const v = Object.freeze({ inner: { n: 1 } });
    expect(f(v)).toBe(1);
    v.inner.n = 2;
    expect(f(v)).toBe(2);
  });
});
