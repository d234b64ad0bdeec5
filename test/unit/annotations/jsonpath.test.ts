import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseSingularPath, type PathSegments } from '../../../src/annotations/jsonpath.js';

const ok = (text: string): PathSegments => {
  const r = parseSingularPath(text);
  if (!r.ok) throw new Error(`${text}: ${r.message}`);
  return r.segments;
};

describe('parseSingularPath: the RFC 9535 singular queries fides labels use', () => {
  it.each<[string, PathSegments]>([
    ['$', []],
    ["$['content'][0]", ['content', 0]],
    ['$["content"][0]', ['content', 0]],
    ['$.content[0]', ['content', 0]],
    ["$['structuredContent']['items'][3]['title']", ['structuredContent', 'items', 3, 'title']],
    ['$.structuredContent.items[3].title', ['structuredContent', 'items', 3, 'title']],
    ["$['content'][-1]", ['content', -1]],
    ["$['']", ['']],
    ['$._a1', ['_a1']],
    ['$.ünïcode', ['ünïcode']],
    ['$.😀x', ['😀x']],
    ["$['a b/c~d']", ['a b/c~d']],
    // RFC 9535 escapes: the delimiting quote, \ / b f n r t, \uXXXX and surrogate pairs.
    ["$['it\\'s']", ["it's"]],
    ['$["say \\"hi\\""]', ['say "hi"']],
    ['$["it\'s"]', ["it's"]],
    ["$['say \"hi\"']", ['say "hi"']],
    ["$['\\\\\\/\\b\\f\\n\\r\\t']", ['\\/\b\f\n\r\t']],
    ["$['con\\u0074ent']", ['content']],
    ["$['\\uD83D\\uDE00']", ['😀']],
    ["$['😀']", ['😀']],
    ['$[9007199254740991]', [9007199254740991]],
    ['$[-9007199254740991]', [-9007199254740991]],
  ])('%s', (text, segments) => {
    expect(ok(text)).toEqual(segments);
  });

  it.each([
    ['', 'the empty string'],
    ['content[0]', 'no root'],
    ['@.content', 'the current-node root'],
    ['$.', 'a dot without a name'],
    ['$..content', 'a descendant segment'],
    ['$..[0]', 'a descendant segment with brackets'],
    ['$[*]', 'a wildcard'],
    ['$.*', 'a wildcard shorthand'],
    ['$[0:2]', 'a slice'],
    ['$[?@.a]', 'a filter'],
    ["$['a','b']", 'two selectors'],
    ['$[0,1]', 'two indexes'],
    ["$[ 'a']", 'whitespace inside brackets'],
    ["$ ['a']", 'whitespace between segments'],
    ['$.a ', 'trailing whitespace'],
    ['$[01]', 'a leading zero'],
    ['$[-0]', 'minus zero'],
    ['$[-]', 'a minus without digits'],
    ['$[9007199254740992]', 'an index past 2^53-1'],
    ['$[12345678901234567890]', 'a very long index'],
    ['$[1.0]', 'a fraction'],
    ['$.1a', 'a shorthand starting with a digit'],
    ['$[a]', 'an unquoted name in brackets'],
    ["$['a']x", 'junk after a segment'],
    ["$['a'", 'an unclosed bracket'],
    ["$['a]", 'an unclosed string'],
    ["$['\\x']", 'an unknown escape'],
    ['$["\\\'"]', "an escaped single quote inside double quotes"],
    ["$['\\\"']", 'an escaped double quote inside single quotes'],
    ["$['\\u00']", 'a short \\u escape'],
    ["$['\\uD800']", 'an escaped lone high surrogate'],
    ["$['\\uDC00']", 'an escaped lone low surrogate'],
    ["$['\\uD800\\u0041']", 'a high surrogate followed by a non-surrogate escape'],
    ["$['\uD800']", 'a raw lone high surrogate'],
    ["$['\uDC00']", 'a raw lone low surrogate'],
    ['$.\uD800', 'a lone surrogate in a shorthand'],
    ["$['a\nb']", 'a raw control character'],
  ])('rejects %j (%s)', (text) => {
    const r = parseSingularPath(text);
    expect(r.ok).toBe(false);
    // Messages give positions, never the (attacker-controlled) text.
    if (!r.ok && text.length > 4) expect(r.message).not.toContain(text.slice(1));
  });

  /** RFC 9535 normalized path of `segments`: what fides-gateway writes. */
  const normalized = (segments: PathSegments): string =>
    '$' +
    segments
      .map((s) => {
        if (typeof s === 'number') return `[${s}]`;
        let out = '';
        for (const ch of s) {
          const c = ch.codePointAt(0)!;
          if (ch === "'") out += "\\'";
          else if (ch === '\\') out += '\\\\';
          else if (c < 0x20) out += '\\u' + c.toString(16).padStart(4, '0');
          else out += ch;
        }
        return `['${out}']`;
      })
      .join('');

  const segmentsArb: fc.Arbitrary<PathSegments> = fc.array(
    fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.integer({ min: -(2 ** 53 - 1), max: 2 ** 53 - 1 }).filter((n) => !Object.is(n, -0))),
    { maxLength: 8 },
  );

  it('reads back every normalized path', () => {
    fc.assert(
      fc.property(segmentsArb, (segments) => {
        expect(ok(normalized(segments))).toEqual(segments);
      }),
      { numRuns: 500 },
    );
  });

  it('never throws, whatever the text', () => {
    const piece = fc.constantFrom('$', '.', '..', '[', ']', "'", '"', '\\', '\\u', 'D83D', '-', '0', '1', '*', ' ', 'a', '\uD800', ':', '?', ',');
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), fc.array(piece, { maxLength: 30 }).map((p) => p.join(''))), (text) => {
        const r = parseSingularPath(text);
        expect(typeof r.ok).toBe('boolean');
      }),
      { numRuns: 2000 },
    );
  });

  it('reads long paths in one pass', () => {
    const n = 20_000;
    expect(ok("$['content']" + '[0]'.repeat(n))).toHaveLength(n + 1);
    expect(ok('$' + '.a'.repeat(n))).toHaveLength(n);
    expect(ok("$['" + 'x'.repeat(200_000) + "']")[0]).toHaveLength(200_000);
    expect(parseSingularPath("$['" + '\\\\'.repeat(100_000)).ok).toBe(false);
  });
});
