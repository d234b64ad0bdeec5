import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { REVISIONS } from '../../../src/mcp/revisions.js';
import { validateMcp } from '../../../src/mcp/shape.js';

const revision = fc.constantFrom(...REVISIONS);

/** Keys that exercise the member tables, prototype names and the key grammar. */
const key = fc.oneof(
  fc.constantFrom(
    'type', 'text', 'data', 'mimeType', 'resource', 'uri', 'blob', 'name', 'title', 'size', 'icons', 'src',
    'annotations', 'audience', 'priority', 'lastModified', '_meta', 'sensitive', 'untrusted',
    '__proto__', 'constructor', 'toString', 'x-a', 'com.example/k', 'bad key',
  ),
  fc.string({ maxLength: 8 }),
);

const leaf = fc.oneof(
  fc.constantFrom('text', 'image', 'audio', 'resource', 'resource_link', 'user', 'assistant', 'complete', '2025-01-12T15:00:58Z'),
  fc.jsonValue({ maxDepth: 1 }),
);

/** JSON values biased toward CallToolResult shapes. */
const node: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('object'), tie('array')),
  object: fc.dictionary(key, tie('value'), { maxKeys: 6 }),
  array: fc.array(tie('value'), { maxLength: 4 }),
})).value;

const resultish = fc.record(
  {
    content: fc.array(node, { maxLength: 5 }),
    isError: node,
    structuredContent: node,
    resultType: node,
    _meta: node,
  },
  { requiredKeys: [] },
);

function wellFormed(findings: unknown): void {
  expect(Array.isArray(findings)).toBe(true);
  for (const f of findings as Array<Record<string, unknown>>) {
    expect(typeof f.rule === 'string' && f.rule.startsWith('mcp.')).toBe(true);
    expect(['error', 'warning']).toContain(f.severity);
    expect(typeof f.pointer === 'string' && (f.pointer === '' || f.pointer.startsWith('/'))).toBe(true);
    expect(typeof f.message).toBe('string');
  }
}

describe('validateMcp never throws', () => {
  it('on arbitrary JSON values', () => {
    fc.assert(
      fc.property(fc.jsonValue(), revision, (v, rev) => {
        wellFormed(validateMcp(v, rev));
      }),
      { numRuns: 500 },
    );
  });

  it('on result-like objects (parsed from JSON text, so __proto__ is an own member)', () => {
    fc.assert(
      fc.property(resultish, revision, (r, rev) => {
        wellFormed(validateMcp(JSON.parse(JSON.stringify(r)), rev));
      }),
      { numRuns: 1000 },
    );
  });

  it('on non-JSON host values', () => {
    const odd = [undefined, () => 1, Symbol('s'), 1n, new Map(), new Date(0), Object.create(null)];
    for (const rev of REVISIONS) {
      for (const v of odd) {
        wellFormed(validateMcp(v, rev));
        wellFormed(validateMcp({ content: [v, { type: 'text', text: v, annotations: { priority: v } }], _meta: v }, rev));
      }
      // A getter that throws still yields findings rather than an exception.
      const hostile = Object.defineProperty({}, 'content', {
        enumerable: true,
        get: () => {
          throw new Error('boom');
        },
      });
      wellFormed(validateMcp(hostile, rev));
    }
  });
});
