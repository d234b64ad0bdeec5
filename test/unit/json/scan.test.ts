import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { pointerOf, scanJson, type JsonScan, type ScanIssues } from '../../../src/json/scan.js';
import { jsonDepth } from '../../../src/json/depth.js';

/** The pointers a scan kept, in document order. */
const at = (issues: ScanIssues): string[] => issues.first.map(pointerOf);
/** A scan with its pointers rendered, for comparing whole scans. */
const plain = (s: JsonScan) => ({
  textLength: s.textLength,
  depth: s.depth,
  tooDeep: s.tooDeep,
  duplicateKeys: at(s.duplicateKeys),
  unsafeIntegers: at(s.unsafeIntegers),
});

describe('pre-parse JSON scan', () => {
  it('finds repeated member names, escaped spellings included, with the object pointer', () => {
    const s = scanJson('{"a":1,"b":[0,{"k":1,"\\u006b":2}],"c/d":{"~":1,"~":2}}', 256);
    expect(at(s.duplicateKeys)).toEqual(['/b/1', '/c~1d']);
  });

  it('finds integer literals outside ±(2^53-1) and leaves fractions and safe integers alone', () => {
    const s = scanJson(
      '{"ok":[9007199254740991,-9007199254740991,1e-300,12345678901234567.5,9007199254740991.5,9.007199254740991e15,0e400,-0.0],"big":9007199254740992,"neg":[-9007199254740992]}',
      256,
    );
    expect(at(s.unsafeIntegers)).toEqual(['/big', '/neg/0']);
  });

  it('finds numbers of integral value outside ±(2^53-1) in any notation (contract section 11)', () => {
    const s = scanJson(
      '{"a":9007199254740993.0,"b":9.007199254740993e15,"c":1e300,"d":-90071992547409930e-1,"e":1.5e16,"f":90071992547409910000e-4}',
      256,
    );
    expect(at(s.unsafeIntegers)).toEqual(['/a', '/b', '/c', '/d', '/e']);
  });

  it('records a repeating object once and keeps paths for the first few only, sharing the long name', () => {
    const name = 'n'.repeat(10_000);
    const text = `{"${name}":[{${'"a":1,'.repeat(5000)}"a":1},${'12345678901234567,'.repeat(2000)}1]}`;
    const s = scanJson(text, 256);
    expect(s.duplicateKeys.count).toBe(1);
    expect(at(s.duplicateKeys)).toEqual([`/${name}/0`]);
    expect(s.unsafeIntegers.count).toBe(2000);
    expect(s.unsafeIntegers.first.length).toBe(32);
    // Every kept path shares the one node of the long name.
    expect(new Set(s.unsafeIntegers.first.map((n) => n.parent)).size).toBe(1);
  });

  it('is not fooled by brackets, quotes and backslashes inside strings', () => {
    const s = scanJson('{"a":"[[[{\\"\\\\","b":"\\\\","b2":"x"}', 2);
    expect(plain(s)).toMatchObject({ depth: 1, tooDeep: false, duplicateKeys: [] });
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
        expect(scanJson(text, 1000).duplicateKeys.count).toBe(0);
      }),
      { seed: 7, numRuns: 500 },
    );
  });
});

/** A JSON text as written: objects as member lists, so that member names can repeat. */
type Doc = string | { obj: Array<[string, Doc]> } | { arr: Doc[] };
const { doc } = fc.letrec<{ doc: Doc }>((tie) => ({
  doc: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('1', '"x"', 'null', '12345678901234567890', '-9007199254740993', '1.5e300'),
    fc.array(fc.tuple(fc.constantFrom('evidence', 'record', 'result', 'a', '', '0'), tie('doc')), { maxLength: 4 }).map((obj) => ({ obj })),
    fc.array(tie('doc'), { maxLength: 3 }).map((arr) => ({ arr })),
  ),
}));
function write(d: Doc): string {
  if (typeof d === 'string') return d;
  if ('arr' in d) return `[${d.arr.map(write).join(',')}]`;
  return `{${d.obj.map(([k, v]) => `${JSON.stringify(k)}:${write(v)}`).join(',')}}`;
}
/** Whether a pointer lies at or below a focus (`*` matches any token). */
function within(pointer: string, focus: readonly string[]): boolean {
  const tokens = pointer === '' ? [] : pointer.slice(1).split('/');
  return tokens.length >= focus.length && focus.every((f, i) => f === '*' || f === tokens[i]);
}

describe('pre-parse JSON scan with a focus', () => {
  const text =
    '{"result":{"a":1,"a":2,"n":12345678901234567890},"evidence":[{"record":{"k":1,"k":2,"n":[12345678901234567890]}},{"record":-12345678901234567890,"ref":"r"}],"a":{"evidence":1,"evidence":2}}';

  it('reports repeated member names and unsafe integers only inside the focus', () => {
    const focused = scanJson(text, 256, ['evidence', '*', 'record']);
    expect([...focused.duplicateKeys.under]).toEqual(['0']);
    expect([...focused.unsafeIntegers.under]).toEqual(['0', '1']);
    expect(plain(focused)).toEqual({
      textLength: text.length,
      depth: 5,
      tooDeep: false,
      duplicateKeys: ['/evidence/0/record'],
      unsafeIntegers: ['/evidence/0/record/n/0', '/evidence/1/record'],
    });
    expect(plain(scanJson(text, 256, []))).toMatchObject({
      duplicateKeys: ['/result', '/evidence/0/record', '/a'],
      unsafeIntegers: ['/result/n', '/evidence/0/record/n/0', '/evidence/1/record'],
    });
  });

  it('follows only nesting without a focus (null)', () => {
    expect(plain(scanJson(text, 256, null))).toEqual({ textLength: text.length, depth: 5, tooDeep: false, duplicateKeys: [], unsafeIntegers: [] });
    expect(scanJson('['.repeat(300) + ']'.repeat(300), 256, null)).toMatchObject({ tooDeep: true, depth: 257 });
  });

  it('tells a repeated name on the way to the focus from one inside it', () => {
    expect(scanJson('{"result":{},"result":{}}', 256, ['result'])).toMatchObject({ repeatsOnPath: true, duplicateKeys: { count: 0 } });
    expect(scanJson('{"result":{"a":1,"a":2}}', 256, ['result'])).toMatchObject({ repeatsOnPath: false, duplicateKeys: { count: 1 } });
    expect(scanJson('{"other":{"a":1,"a":2}}', 256, ['result'])).toMatchObject({ repeatsOnPath: false, duplicateKeys: { count: 0 } });
  });

  it('finds inside a focus exactly what the whole-body scan finds there, on generated texts', () => {
    const focuses = fc.constantFrom<readonly string[]>(['evidence', '*', 'record'], ['record'], ['*'], ['a', '0'], ['', '*'], ['0']);
    fc.assert(
      fc.property(doc, focuses, (d, focus) => {
        const t = write(d);
        const whole = plain(scanJson(t, 256));
        const part = plain(scanJson(t, 256, focus));
        expect(part.depth).toBe(whole.depth);
        expect(part.duplicateKeys).toEqual(whole.duplicateKeys.filter((p) => within(p, focus)));
        expect(part.unsafeIntegers).toEqual(whole.unsafeIntegers.filter((p) => within(p, focus)));
        expect(plain(scanJson(t, 256, null))).toEqual({ ...whole, duplicateKeys: [], unsafeIntegers: [] });
      }),
      { seed: 11, numRuns: 2000 },
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
