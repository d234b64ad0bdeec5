import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { deepFreeze } from '../../../src/json/frozen.js';
import { toolDigest } from '../../../src/session/pins.js';

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

  it('a definition that is not deep-frozen is digested anew, so a change to it changes its digest', () => {
    const t = tool();
    const before = toolDigest(t);
    t.inputSchema.properties.message.type = 'number';
    expect(toolDigest(t)).not.toBe(before);
    // Frozen at its top only: what is below may still change, and the digest follows it.
    const top = Object.freeze(tool());
    const first = toolDigest(top);
    top.inputSchema.properties.message.type = 'number';
    expect(toolDigest(top)).not.toBe(first);
  });
});
