import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { deepFreeze, toolDigest } from '../../../src/session/pins.js';

const tool = () => ({
  name: 'echo',
  description: 'Echoes back the input',
  inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
  annotations: { readOnlyHint: true },
  _meta: { note: 'not covered by the pin' },
});

describe('tool digests of frozen definitions', () => {
  it('a frozen definition has the digest of the same definition unfrozen, however often it is asked', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string(), (schema, description) => {
        const plain = { ...tool(), description, inputSchema: { type: 'object', properties: { x: schema } } };
        const frozen = deepFreeze(structuredClone(plain));
        const want = toolDigest(plain);
        expect(toolDigest(frozen)).toBe(want);
        expect(toolDigest(frozen)).toBe(want);
      }),
    );
  });

  it('a definition that is not frozen is digested anew, so a change to it changes its digest', () => {
    const t = tool();
    const before = toolDigest(t);
    t.inputSchema.properties.message.type = 'number';
    expect(toolDigest(t)).not.toBe(before);
  });

  it('deepFreeze freezes every nested member, also of a definition nested far deeper than the stack allows', () => {
    const t = deepFreeze(tool());
    expect(Object.isFrozen(t.inputSchema.properties.message)).toBe(true);
    expect(() => {
      (t.inputSchema.properties.message as { type: string }).type = 'number';
    }).toThrow(TypeError);
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 200_000; i++) deep = deep.next = {};
    expect(() => deepFreeze(root)).not.toThrow();
    expect(Object.isFrozen(deep)).toBe(true);
  });
});
