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

describe('result spans', () => {
  const slice = (text: string, s: number, e: number) => JSON.parse(text.slice(s, e));

  it('locate the result member and each container block of its content, whitespace and escapes included', () => {
    const text = ' { "tool" : { "result" : { "content" : [ {"x":1} ] } } ,\n "result" : {\n  "content" : [ { "type" : "text", "text" : "a\\"]}" } , 7 , [ 1 ] , {"content":[{"deep":true}]} ],\n "isError" : false } } ';
    const s = scanJson(text, 256);
    const parsed = JSON.parse(text);
    expect(slice(text, s.spans.resultStart, s.spans.resultEnd)).toEqual(parsed.result);
    const b = s.spans.blocks;
    expect(slice(text, b[0]!, b[1]!)).toEqual(parsed.result.content[0]);
    expect([b[2], b[3]]).toEqual([-1, -1]); // a scalar block has no span
    expect(slice(text, b[4]!, b[5]!)).toEqual(parsed.result.content[2]);
    expect(slice(text, b[6]!, b[7]!)).toEqual(parsed.result.content[3]); // a block's own `content` is not the result's
    expect(b).toHaveLength(8);
  });

  it('take the whole text as the result when asked to (a bare CallToolResult)', () => {
    const text = '{"content":[{"type":"text","text":"x"},{"type":"image"}],"result":{"content":[{}]}}';
    const s = scanJson(text, 256, '');
    expect([s.spans.resultStart, s.spans.resultEnd]).toEqual([0, text.length]);
    expect(JSON.parse(text.slice(s.spans.blocks[2], s.spans.blocks[3]))).toEqual({ type: 'image' });
    expect(s.spans.blocks).toHaveLength(4);
  });

  it('are absent when there is no result object or content array', () => {
    for (const text of ['[{"result":{}}]', '{"result":[{"content":[{}]}]}', '{"result":{"content":{"a":{}}}}']) {
      const s = scanJson(text, 256);
      expect(s.spans.blocks, text).toEqual([]);
    }
    expect(scanJson('{"result":[]}', 256).spans.resultStart).toBe(10);
    expect(scanJson('{"a":{}}', 256).spans.resultStart).toBe(-1);
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
