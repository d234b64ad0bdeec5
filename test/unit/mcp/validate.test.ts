import { describe, expect, it } from 'vitest';
import { TRUST_KEY } from '../../../src/mcp/meta-key.js';
import { REVISIONS, type Revision } from '../../../src/mcp/revisions.js';
import { defaultRevision, validateMcp } from '../../../src/mcp/shape.js';
import { errors, expectFinding, expectFindings, resultWith, text, validateBlock } from './helpers.js';

const image = { type: 'image', data: 'aW1hZ2U=', mimeType: 'image/png' };
const audio = { type: 'audio', data: 'YXVkaW8=', mimeType: 'audio/wav' };
const embeddedText = { type: 'resource', resource: { uri: 'file:///a.txt', mimeType: 'text/plain', text: 'a' } };
const embeddedBlob = { type: 'resource', resource: { uri: 'file:///a.bin', blob: 'AAE=' } };
const link = { type: 'resource_link', uri: 'file:///a.txt', name: 'a.txt' };

describe('defaultRevision', () => {
  it('is 2026-07-28 when the result carries resultType, whatever its value', () => {
    expect(defaultRevision({ content: [], resultType: 'complete' })).toBe('2026-07-28');
    expect(defaultRevision({ content: [], resultType: 42 })).toBe('2026-07-28');
    expect(defaultRevision(JSON.parse('{"content":[],"resultType":null}'))).toBe('2026-07-28');
  });

  it('is 2025-11-25 otherwise', () => {
    expect(defaultRevision({ content: [] })).toBe('2025-11-25');
    expect(defaultRevision(null)).toBe('2025-11-25');
    expect(defaultRevision([{ resultType: 'complete' }])).toBe('2025-11-25');
    expect(defaultRevision('resultType')).toBe('2025-11-25');
  });

  it('ignores an inherited resultType', () => {
    const proto = { resultType: 'complete' };
    expect(defaultRevision(Object.create(proto))).toBe('2025-11-25');
  });
});

describe('valid results', () => {
  it('accepts every block type from its revision on', () => {
    const since: Array<[unknown, Revision]> = [
      [text(), '2024-11-05'],
      [image, '2024-11-05'],
      [embeddedText, '2024-11-05'],
      [embeddedBlob, '2024-11-05'],
      [audio, '2025-03-26'],
      [link, '2025-06-18'],
    ];
    for (const rev of REVISIONS) {
      const content = since.filter(([, from]) => REVISIONS.indexOf(rev) >= REVISIONS.indexOf(from)).map(([b]) => b);
      expect(validateMcp(resultWith(rev, content), rev), rev).toEqual([]);
    }
  });

  it('accepts an empty content array and isError false', () => {
    for (const rev of REVISIONS) expect(validateMcp(resultWith(rev, [], { isError: false }), rev)).toEqual([]);
  });

  it('leaves unknown result members alone (Result is open in every revision)', () => {
    for (const rev of REVISIONS) {
      expect(validateMcp(resultWith(rev, [], { 'x-trace': 1, nextCursor: 'c' }), rev)).toEqual([]);
    }
  });

  it('accepts annotations {} at every revision', () => {
    for (const rev of REVISIONS) expect(validateBlock(rev, text({ annotations: {} }))).toEqual([]);
  });

  it('accepts full annotations on every block type', () => {
    const annotations = { audience: ['user', 'assistant'], priority: 0.5, lastModified: '2025-01-12T15:00:58Z' };
    const blocks = [text(), image, audio, embeddedText, embeddedBlob, link].map((b) => ({ ...b, annotations }));
    expect(validateMcp(resultWith('2025-11-25', blocks), '2025-11-25')).toEqual([]);
  });
});

describe('mcp.result.shape', () => {
  it('requires an object result', () => {
    for (const v of [null, 1, 'x', true, [], [{ content: [] }]]) {
      expectFindings(validateMcp(v, '2025-06-18'), [{ rule: 'mcp.result.shape', pointer: '' }]);
    }
  });

  it('requires content, as an array', () => {
    expectFindings(validateMcp({}, '2025-06-18'), [{ rule: 'mcp.result.shape', pointer: '' }]);
    expectFindings(validateMcp({ content: {} }, '2025-06-18'), [{ rule: 'mcp.result.shape', pointer: '/content' }]);
  });

  it('requires content items to be objects with a string type', () => {
    const r = validateMcp({ content: [1, null, [], {}, { type: 7 }, { text: 'no type' }] }, '2025-06-18');
    expectFindings(r, [
      { rule: 'mcp.result.shape', pointer: '/content/0' },
      { rule: 'mcp.result.shape', pointer: '/content/1' },
      { rule: 'mcp.result.shape', pointer: '/content/2' },
      { rule: 'mcp.result.shape', pointer: '/content/3' },
      { rule: 'mcp.result.shape', pointer: '/content/4/type' },
      { rule: 'mcp.result.shape', pointer: '/content/5' },
    ]);
  });

  it('requires isError to be a boolean', () => {
    expectFindings(validateMcp({ content: [], isError: 'true' }, '2025-06-18'), [
      { rule: 'mcp.result.shape', pointer: '/isError' },
    ]);
  });

  it('requires the result _meta to be an object', () => {
    expectFindings(validateMcp({ content: [], _meta: [] }, '2024-11-05'), [{ rule: 'mcp.result.shape', pointer: '/_meta' }]);
  });

  describe('structuredContent', () => {
    it('is not defined at 2025-03-26', () => {
      const r = validateMcp({ content: [], structuredContent: { a: 1 } }, '2025-03-26');
      expectFindings(r, [{ rule: 'mcp.result.shape', pointer: '/structuredContent' }]);
      expect(r[0]?.message).toContain('2025-06-18');
    });

    it('is an object at 2025-06-18 and 2025-11-25', () => {
      for (const rev of ['2025-06-18', '2025-11-25'] as const) {
        expect(validateMcp({ content: [], structuredContent: { a: 1 } }, rev)).toEqual([]);
        for (const bad of [[1], 'x', 1, null, true]) {
          expectFindings(validateMcp({ content: [], structuredContent: bad }, rev), [
            { rule: 'mcp.result.shape', pointer: '/structuredContent' },
          ]);
        }
      }
    });

    it('may be any JSON value at 2026-07-28 (the schema leaves it untyped)', () => {
      for (const v of [{ a: 1 }, [1], 'x', 1, null, true]) {
        expect(validateMcp(resultWith('2026-07-28', [], { structuredContent: v }), '2026-07-28')).toEqual([]);
      }
    });

    it('is absent when isError is true', () => {
      for (const rev of ['2025-06-18', '2025-11-25', '2026-07-28'] as const) {
        expectFindings(validateMcp(resultWith(rev, [], { isError: true, structuredContent: {} }), rev), [
          { rule: 'mcp.result.shape', pointer: '/structuredContent' },
        ]);
        expect(validateMcp(resultWith(rev, [], { isError: false, structuredContent: {} }), rev)).toEqual([]);
        expect(validateMcp(resultWith(rev, [], { isError: true }), rev)).toEqual([]);
      }
    });

    it('is reported once before 2025-06-18 even with isError true', () => {
      expectFindings(validateMcp({ content: [], isError: true, structuredContent: {} }, '2025-03-26'), [
        { rule: 'mcp.result.shape', pointer: '/structuredContent' },
      ]);
    });
  });

  describe('resultType', () => {
    it('is not defined at 2025-11-25', () => {
      const r = validateMcp({ content: [], resultType: 'complete' }, '2025-11-25');
      expectFindings(r, [{ rule: 'mcp.result.shape', pointer: '/resultType' }]);
    });

    it('is required at 2026-07-28', () => {
      const r = validateMcp({ content: [] }, '2026-07-28');
      expectFindings(r, [{ rule: 'mcp.result.shape', pointer: '' }]);
      expect(r[0]?.message).toContain('resultType');
    });

    it('is exactly "complete" at 2026-07-28', () => {
      expect(validateMcp({ content: [], resultType: 'complete' }, '2026-07-28')).toEqual([]);
      for (const bad of ['incomplete', 'Complete', 'input_required', '']) {
        expectFindings(validateMcp({ content: [], resultType: bad }, '2026-07-28'), [
          { rule: 'mcp.result.shape', pointer: '/resultType' },
        ]);
      }
      expectFindings(validateMcp({ content: [], resultType: 1 }, '2026-07-28'), [
        { rule: 'mcp.result.shape', pointer: '/resultType' },
      ]);
    });
  });
});

describe('mcp.content.type', () => {
  it('audio is unknown at 2024-11-05 and valid at 2025-03-26', () => {
    const r = validateBlock('2024-11-05', audio);
    expectFindings(r, [{ rule: 'mcp.content.type', pointer: '/content/0/type' }]);
    expect(r[0]?.message).toContain('2025-03-26');
    expect(validateBlock('2025-03-26', audio)).toEqual([]);
  });

  it('resource_link is unknown at 2025-03-26 and valid at 2025-06-18', () => {
    expectFindings(validateBlock('2025-03-26', link), [{ rule: 'mcp.content.type', pointer: '/content/0/type' }]);
    expect(validateBlock('2025-06-18', link)).toEqual([]);
  });

  it('reports an unknown type once, without member findings', () => {
    const r = validateBlock('2025-06-18', { type: 'video', 'x-a': 1, annotations: { priority: 9 }, _meta: { 'bad key': 1 } });
    expectFindings(r, [{ rule: 'mcp.content.type', pointer: '/content/0/type' }]);
  });

  it('requires the fields of each type', () => {
    expectFindings(validateBlock('2025-06-18', { type: 'text' }), [{ rule: 'mcp.content.type', pointer: '/content/0' }]);
    expectFindings(validateBlock('2025-06-18', { type: 'image', data: 'AA==' }), [
      { rule: 'mcp.content.type', pointer: '/content/0' },
    ]);
    expectFindings(validateBlock('2025-06-18', { type: 'audio', mimeType: 'audio/wav' }), [
      { rule: 'mcp.content.type', pointer: '/content/0' },
    ]);
    expectFindings(validateBlock('2025-06-18', { type: 'resource' }), [{ rule: 'mcp.content.type', pointer: '/content/0' }]);
    expectFindings(validateBlock('2025-06-18', { type: 'resource_link', uri: 'a:b' }), [
      { rule: 'mcp.content.type', pointer: '/content/0' },
    ]);
  });

  it('requires the JSON type of each member', () => {
    expectFindings(validateBlock('2025-06-18', text({ text: 5 })), [{ rule: 'mcp.content.type', pointer: '/content/0/text' }]);
    expectFindings(validateBlock('2025-06-18', { ...image, mimeType: null }), [
      { rule: 'mcp.content.type', pointer: '/content/0/mimeType' },
    ]);
    expectFindings(validateBlock('2025-06-18', { ...link, size: 1.5 }), [
      { rule: 'mcp.content.type', pointer: '/content/0/size' },
    ]);
    expect(validateBlock('2025-06-18', { ...link, size: 12, title: 'A', description: 'd', mimeType: 'text/plain' })).toEqual([]);
    expectFindings(validateBlock('2025-06-18', text({ _meta: 'x' })), [{ rule: 'mcp.content.type', pointer: '/content/0/_meta' }]);
  });

  it('requires annotations to be an object', () => {
    for (const bad of [null, [], 'user', 1]) {
      expectFindings(validateBlock('2025-06-18', text({ annotations: bad })), [
        { rule: 'mcp.content.type', pointer: '/content/0/annotations' },
      ]);
    }
  });

  it('requires an embedded resource with uri and text or blob', () => {
    expectFindings(validateBlock('2025-06-18', { type: 'resource', resource: 'file:///a' }), [
      { rule: 'mcp.content.type', pointer: '/content/0/resource' },
    ]);
    expectFindings(validateBlock('2025-06-18', { type: 'resource', resource: { uri: 'file:///a' } }), [
      { rule: 'mcp.content.type', pointer: '/content/0/resource' },
    ]);
    expectFindings(validateBlock('2025-06-18', { type: 'resource', resource: { text: 'a' } }), [
      { rule: 'mcp.content.type', pointer: '/content/0/resource' },
    ]);
    expectFindings(validateBlock('2025-06-18', { type: 'resource', resource: { uri: 'file:///a', blob: 1 } }), [
      { rule: 'mcp.content.type', pointer: '/content/0/resource/blob' },
    ]);
  });

  it('checks icon items on resource_link', () => {
    expect(validateBlock('2025-11-25', { ...link, icons: [{ src: 'https://x/i.png', sizes: ['48x48'], theme: 'dark' }] })).toEqual(
      [],
    );
    expectFindings(validateBlock('2025-11-25', { ...link, icons: [{ sizes: ['48x48'] }, 'x', { src: 1 }] }), [
      { rule: 'mcp.content.type', pointer: '/content/0/icons/0' },
      { rule: 'mcp.content.type', pointer: '/content/0/icons/1' },
      { rule: 'mcp.content.type', pointer: '/content/0/icons/2/src' },
    ]);
    expectFindings(validateBlock('2025-11-25', { ...link, icons: {} }), [
      { rule: 'mcp.content.type', pointer: '/content/0/icons' },
    ]);
  });
});

describe('mcp.content.members', () => {
  it('block _meta is an unknown member at 2025-03-26 and valid at 2025-06-18', () => {
    const block = text({ _meta: { 'com.example/a': 1 } });
    const r = validateBlock('2025-03-26', block);
    expectFindings(r, [{ rule: 'mcp.content.members', pointer: '/content/0/_meta' }]);
    expect(r[0]?.message).toContain('2025-06-18');
    expect(validateBlock('2025-06-18', block)).toEqual([]);
  });

  it('embedded resource _meta is an unknown member at 2025-03-26 and valid at 2025-06-18', () => {
    const block = { type: 'resource', resource: { uri: 'file:///a', text: 'a', _meta: { k: 1 } } };
    expectFindings(validateBlock('2025-03-26', block), [{ rule: 'mcp.content.members', pointer: '/content/0/resource/_meta' }]);
    expect(validateBlock('2025-06-18', block)).toEqual([]);
  });

  it('icons on resource_link are unknown at 2025-06-18 and valid at 2025-11-25', () => {
    const block = { ...link, icons: [{ src: 'https://example.com/i.png' }] };
    const r = validateBlock('2025-06-18', block);
    expectFindings(r, [{ rule: 'mcp.content.members', pointer: '/content/0/icons' }]);
    expect(r[0]?.message).toContain('2025-11-25');
    expect(validateBlock('2025-11-25', block)).toEqual([]);
  });

  it('rejects x- members and other unknown members on every block type', () => {
    for (const block of [text(), image, audio, embeddedText, link]) {
      expectFindings(validateBlock('2025-11-25', { ...block, 'x-example-style': 'brief', title2: 1 }), [
        { rule: 'mcp.content.members', pointer: '/content/0/x-example-style' },
        { rule: 'mcp.content.members', pointer: '/content/0/title2' },
      ]);
    }
  });

  it('rejects members of a resource link on other blocks', () => {
    expectFindings(validateBlock('2025-11-25', text({ uri: 'a:b', name: 'n' })), [
      { rule: 'mcp.content.members', pointer: '/content/0/uri' },
      { rule: 'mcp.content.members', pointer: '/content/0/name' },
    ]);
  });

  it('checks the embedded resource object members', () => {
    expectFindings(
      validateBlock('2025-11-25', { type: 'resource', resource: { uri: 'a:b', text: 't', 'x-a': 1, annotations: {} } }),
      [
        { rule: 'mcp.content.members', pointer: '/content/0/resource/x-a' },
        { rule: 'mcp.content.members', pointer: '/content/0/resource/annotations' },
      ],
    );
    // Text and blob together: the text variant is chosen and blob is foreign to it.
    expectFindings(validateBlock('2025-11-25', { type: 'resource', resource: { uri: 'a:b', text: 't', blob: 'AA==' } }), [
      { rule: 'mcp.content.members', pointer: '/content/0/resource/blob' },
    ]);
  });

  it('escapes member names in pointers', () => {
    expectFindings(validateBlock('2025-11-25', text({ 'a/b~c': 1 })), [
      { rule: 'mcp.content.members', pointer: '/content/0/a~1b~0c' },
    ]);
  });
});

describe('mcp.annotations.members', () => {
  it('lastModified is unknown at 2025-03-26 and valid at 2025-06-18', () => {
    const block = text({ annotations: { lastModified: '2025-01-12T15:00:58Z' } });
    const r = validateBlock('2025-03-26', block);
    expectFindings(r, [{ rule: 'mcp.annotations.members', pointer: '/content/0/annotations/lastModified' }]);
    expect(r[0]?.message).toContain('2025-06-18');
    expect(validateBlock('2025-06-18', block)).toEqual([]);
  });

  it('rejects x- and other unknown members, tool hints included', () => {
    for (const rev of REVISIONS) {
      expectFindings(validateBlock(rev, text({ annotations: { 'x-source': 'crm', readOnlyHint: true, priority: 1 } })), [
        { rule: 'mcp.annotations.members', pointer: '/content/0/annotations/x-source' },
        { rule: 'mcp.annotations.members', pointer: '/content/0/annotations/readOnlyHint' },
      ]);
    }
  });

  it('says where a misplaced trust claim belongs', () => {
    for (const key of ['sensitive', 'untrusted']) {
      for (const value of [true, false, 'yes']) {
        const r = validateBlock('2025-06-18', text({ annotations: { [key]: value } }));
        const f = expectFinding(r, 'mcp.annotations.members', `/content/0/annotations/${key}`);
        expect(f.message).toContain(`_meta["${TRUST_KEY}"]`);
        expect(r).toHaveLength(1);
      }
    }
  });

  it('applies to annotations of embedded resources and resource links', () => {
    expectFindings(validateBlock('2025-11-25', { ...embeddedText, annotations: { futureHint: 1 } }), [
      { rule: 'mcp.annotations.members', pointer: '/content/0/annotations/futureHint' },
    ]);
    expectFindings(validateBlock('2025-11-25', { ...link, annotations: { futureHint: 1 } }), [
      { rule: 'mcp.annotations.members', pointer: '/content/0/annotations/futureHint' },
    ]);
  });
});

describe('mcp.annotations.priority', () => {
  it('accepts 0, 1 and values between', () => {
    for (const p of [0, 1, 0.5, 1e-9, -0]) expect(validateBlock('2025-06-18', text({ annotations: { priority: p } }))).toEqual([]);
  });

  it('rejects values outside 0..1, non-numbers and non-finite numbers', () => {
    for (const p of [1.01, -0.1, '0.5', null, true, [0.5], Infinity, NaN, 2]) {
      expectFindings(validateBlock('2025-06-18', text({ annotations: { priority: p } })), [
        { rule: 'mcp.annotations.priority', pointer: '/content/0/annotations/priority' },
      ]);
    }
  });

  it('applies from the first revision', () => {
    expectFindings(validateBlock('2024-11-05', text({ annotations: { priority: 2 } })), [
      { rule: 'mcp.annotations.priority', pointer: '/content/0/annotations/priority' },
    ]);
  });
});

describe('mcp.annotations.audience', () => {
  it('accepts arrays of user and assistant, empty included', () => {
    for (const a of [[], ['user'], ['assistant'], ['user', 'assistant'], ['user', 'user']]) {
      expect(validateBlock('2025-06-18', text({ annotations: { audience: a } }))).toEqual([]);
    }
  });

  it('points at each bad item', () => {
    expectFindings(validateBlock('2025-06-18', text({ annotations: { audience: ['user', 'operator', 'User', 1, null] } })), [
      { rule: 'mcp.annotations.audience', pointer: '/content/0/annotations/audience/1' },
      { rule: 'mcp.annotations.audience', pointer: '/content/0/annotations/audience/2' },
      { rule: 'mcp.annotations.audience', pointer: '/content/0/annotations/audience/3' },
      { rule: 'mcp.annotations.audience', pointer: '/content/0/annotations/audience/4' },
    ]);
  });

  it('requires an array', () => {
    for (const a of ['user', {}, null]) {
      expectFindings(validateBlock('2025-06-18', text({ annotations: { audience: a } })), [
        { rule: 'mcp.annotations.audience', pointer: '/content/0/annotations/audience' },
      ]);
    }
  });
});

describe('mcp.annotations.lastModified', () => {
  const at = (v: unknown) => validateBlock('2025-06-18', text({ annotations: { lastModified: v } }));
  const ptr = '/content/0/annotations/lastModified';

  it('accepts RFC 3339 date-times', () => {
    for (const v of ['2025-01-12T15:00:58Z', '2025-01-12T15:00:58.123+02:00', '2016-12-31T23:59:60Z']) expect(at(v)).toEqual([]);
  });

  it('warns on other strings', () => {
    for (const v of ['2025-13-01T00:00:00Z', '2025-01-12 15:00:58Z', '2025-01-12', 'yesterday', '']) {
      expectFindings(at(v), [{ rule: 'mcp.annotations.lastModified', pointer: ptr, severity: 'warning' }]);
    }
  });

  it('is an error for non-strings', () => {
    for (const v of [1736694058, null, {}, ['2025-01-12T15:00:58Z']]) {
      expectFindings(at(v), [{ rule: 'mcp.annotations.lastModified', pointer: ptr }]);
    }
  });

  it('handles 100k-character adversarial strings', () => {
    const long = [
      '2025-01-01T' + '0'.repeat(100_000),
      '2025-01-01T00:00:00.' + '0'.repeat(100_000),
      '2025-01-01T00:00:00.' + '0'.repeat(100_000) + '+00:0',
      '9'.repeat(100_000),
      '2025-01-01T00:00:00Z'.repeat(5_000),
    ];
    for (const v of long) expectFindings(at(v), [{ rule: 'mcp.annotations.lastModified', pointer: ptr, severity: 'warning' }]);
    expect(at('2025-01-01T00:00:00.' + '0'.repeat(100_000) + 'Z')).toEqual([]);
  });
});

describe('mcp.meta.key', () => {
  const bad = ['bad key', '/x', 'a..b/c', '-a/x', 'a-/x', '1a/x', 'a/b/c', 'a/-x', '_private', 'é', 'com.exa_mple/x'];
  const good = ['', 'x', 'display_hint', 'traceparent', 'com.example/status', 'com.example/', TRUST_KEY, 'a-b.c1/x.y_z-0'];

  it('checks result _meta keys from 2025-06-18', () => {
    const meta = Object.fromEntries([...bad, ...good].map((k) => [k, 1]));
    expect(validateMcp({ content: [], _meta: meta }, '2025-03-26')).toEqual([]);
    for (const rev of ['2025-06-18', '2025-11-25'] as const) {
      expectFindings(
        validateMcp({ content: [], _meta: meta }, rev),
        bad.map((k) => ({ rule: 'mcp.meta.key', pointer: '/_meta/' + k.replace(/~/g, '~0').replace(/\//g, '~1') })),
      );
    }
  });

  it('checks block and embedded resource _meta keys', () => {
    const block = { type: 'resource', _meta: { 'bad key': 1, ok: 2 }, resource: { uri: 'a:b', text: 't', _meta: { 'bad key': 1 } } };
    expectFindings(validateBlock('2025-06-18', block), [
      { rule: 'mcp.meta.key', pointer: '/content/0/_meta/bad key' },
      { rule: 'mcp.meta.key', pointer: '/content/0/resource/_meta/bad key' },
    ]);
  });

  it('checks only the keys of _meta, not keys nested in its values', () => {
    expect(validateMcp({ content: [], _meta: { [TRUST_KEY]: { 'bad key': true } } }, '2025-06-18')).toEqual([]);
  });

  it('truncates long key names in messages', () => {
    const key = 'bad key ' + 'k'.repeat(10_000);
    const [f] = validateMcp({ content: [], _meta: { [key]: 1 } }, '2025-06-18');
    expect(f?.rule).toBe('mcp.meta.key');
    expect(f!.message.length).toBeLessThan(200);
  });
});

describe('prototype safety', () => {
  it('treats __proto__ and constructor as data', () => {
    const r = JSON.parse(
      '{"content":[{"type":"text","text":"a","__proto__":{"annotations":{"priority":9}},"constructor":1,' +
        '"annotations":{"__proto__":1,"toString":1}}],"_meta":{"__proto__":1,"toString":1}}',
    ) as unknown;
    expectFindings(validateMcp(r, '2025-06-18'), [
      { rule: 'mcp.content.members', pointer: '/content/0/__proto__' },
      { rule: 'mcp.content.members', pointer: '/content/0/constructor' },
      { rule: 'mcp.annotations.members', pointer: '/content/0/annotations/__proto__' },
      { rule: 'mcp.annotations.members', pointer: '/content/0/annotations/toString' },
      { rule: 'mcp.meta.key', pointer: '/_meta/__proto__' },
    ]);
    expect(({} as Record<string, unknown>).annotations).toBeUndefined();
  });

  it('does not read inherited members', () => {
    const block = Object.create({ text: 'inherited', 'x-a': 1 }) as Record<string, unknown>;
    block.type = 'text';
    expectFindings(validateBlock('2025-06-18', block), [{ rule: 'mcp.content.type', pointer: '/content/0' }]);
  });

  it('does not treat a type named after an Object.prototype member as known', () => {
    for (const t of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      expectFindings(validateBlock('2025-06-18', { type: t }), [{ rule: 'mcp.content.type', pointer: '/content/0/type' }]);
    }
  });
});

describe('messages', () => {
  it('never quote content values', () => {
    const secret = 'S3CRET-VALUE';
    const r = {
      resultType: secret,
      isError: secret,
      structuredContent: secret,
      content: [
        { type: 'text', text: 7, annotations: { priority: secret, audience: [secret], lastModified: secret, x: secret } },
        { type: secret, text: secret },
        { type: 'image', data: 1, mimeType: 2, secretless: secret },
        { type: 'resource', resource: { uri: secret, text: 1, _meta: { k: secret } } },
        { type: 'resource_link', uri: 1, name: secret, icons: [{ src: 1, theme: secret }] },
      ],
      _meta: { [TRUST_KEY]: { sensitive: secret } },
    };
    for (const rev of REVISIONS) {
      const findings = validateMcp(r, rev);
      expect(findings.length).toBeGreaterThan(0);
      for (const f of findings) expect(f.message).not.toContain(secret);
    }
  });

  it('are short', () => {
    const r = validateMcp(resultWith('2025-11-25', [text({ ['x'.repeat(5000)]: 1, annotations: { ['y'.repeat(5000)]: 1 } })]), '2025-11-25');
    expect(r).toHaveLength(2);
    for (const f of r) expect(f.message.length).toBeLessThan(200);
  });
});

describe('robustness', () => {
  it('reports an unknown revision instead of throwing', () => {
    expectFindings(validateMcp({ content: [] }, '1999-01-01' as Revision), [{ rule: 'mcp.result.shape', pointer: '' }]);
  });

  it('validates many blocks', () => {
    const content = Array.from({ length: 5000 }, (_, i) => (i % 2 ? text({ annotations: { priority: 0.5 } }) : embeddedBlob));
    expect(validateMcp(resultWith('2025-11-25', content), '2025-11-25')).toEqual([]);
    const bad = Array.from({ length: 5000 }, () => text({ annotations: { priority: 5 } }));
    expect(errors(validateMcp(resultWith('2025-11-25', bad), '2025-11-25'))).toHaveLength(5000);
  });

  it('copes with deeply nested values inside members', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 128; i++) deep = { a: deep };
    const r = resultWith('2026-07-28', [text({ _meta: deep as Record<string, unknown> })], { structuredContent: deep });
    expect(validateMcp(r, '2026-07-28')).toEqual([]);
  });
});
