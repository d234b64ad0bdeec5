import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { scanJson } from '../../../src/json/scan.js';
import { jsonDepth } from '../../../src/json/depth.js';

describe('pre-parse JSON scan', () => {
  it('finds repeated member names, escaped spellings included, with the object pointer', () => {
    const s = scanJson('{"a":1,"b":[0,{"k":1,"\\u006b":2}],"c/d":{"~":1,"~":2}}', 256);
    expect(s.duplicateKeys).toEqual(['/b/1', '/c~1d']);
  });

  it('finds integer literals outside ±(2^53-1) and leaves floats and safe integers alone', () => {
    const s = scanJson(
      '{"ok":[9007199254740991,-9007199254740991,1e300,12345678901234567.5],"big":9007199254740992,"neg":[-9007199254740992]}',
      256,
    );
    expect(s.unsafeIntegers).toEqual(['/big', '/neg/0']);
  });

  it('is not fooled by brackets, quotes and backslashes inside strings', () => {
    const s = scanJson('{"a":"[[[{\\"\\\\","b":"\\\\","b2":"x"}', 2);
    expect(s).toMatchObject({ depth: 1, tooDeep: false, duplicateKeys: [] });
  });

  it('stops as soon as nesting passes the bound, without recursion', () => {
    const deep = '['.repeat(200_000) + ']'.repeat(200_000);
    const s = scanJson(deep, 256);
    expect(s.tooDeep).toBe(true);
    expect(s.depth).toBe(257);
  });

  it('agrees with the parsed depth on generated JSON', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), (v) => {
        const text = JSON.stringify(v);
        expect(scanJson(text, 1000).depth).toBe(jsonDepth(v));
        expect(scanJson(text, 1000).duplicateKeys).toEqual([]);
      }),
      { seed: 7, numRuns: 500 },
    );
  });
});

describe('jsonDepth', () => {
  it('counts containers and stops early above the bound', () => {
    expect(jsonDepth(1)).toBe(0);
    expect(jsonDepth({})).toBe(1);
    expect(jsonDepth({ a: [1] })).toBe(2);
    let v: unknown = 0;
    for (let i = 0; i < 100_000; i++) v = [v];
    expect(jsonDepth(v, 128)).toBe(129);
  });
});
