/**
 * `tool` as the CEL fast path reads it (src/policy/cel/values.ts): a
 * deep-frozen definition's plain form is kept and reused across decisions
 * (the proxy judges every call against the same frozen definition). Kept or
 * not, it must be what a fresh copy of the definition gives, with every
 * toolMembers a decision passes, and a definition that was not frozen must
 * never be frozen or changed by being read.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deepFreeze, isDeepFrozen } from '../../../src/json/frozen.js';
import { buildActivation, prepareShared } from '../../../src/policy/cel/values.js';
import type { PlainVars } from '../../../src/policy/cel/fast.js';

const emptyBlock = {};
function plainTool(tool: Record<string, unknown> | undefined, toolMembers?: Record<string, unknown>): unknown {
  const act = buildActivation(prepareShared({ result: {}, tool, toolMembers, server: undefined, context: undefined, validation: [] } as never), { block: emptyBlock, evidence: [], dataClass: emptyBlock } as never);
  return (act as unknown as { plain: PlainVars }).plain.tool;
}

const json = fc.jsonValue({ maxDepth: 3 });
const definition = fc.record(
  {
    name: fc.oneof(fc.string(), json),
    description: fc.string(),
    annotations: fc.oneof(fc.record({ readOnlyHint: fc.boolean(), openWorldHint: fc.boolean(), destructiveHint: json }, { requiredKeys: [] }), json),
    hints: json,
    inputSchema: json,
  },
  { requiredKeys: [] },
);
const members = fc.option(
  fc.oneof(
    fc.record({ hints: fc.record({ readOnlyHint: fc.boolean() }), pin: fc.constantFrom('match', 'first-seen', 'changed') }),
    fc.record({ pin: fc.constantFrom('match', 'unlisted') }),
  ),
  { nil: undefined },
);

describe('tool as the fast path reads it', () => {
  it('a deep-frozen definition gives, every time, what a fresh copy gives; a plain one stays as it was', () => {
    fc.assert(
      fc.property(fc.option(definition, { nil: undefined }), members, (def, extra) => {
        const fresh = () => (def === undefined ? undefined : (structuredClone(def) as Record<string, unknown>));
        const plain = fresh();
        const expected = plainTool(plain, extra);
        if (plain !== undefined) {
          expect(Object.isFrozen(plain)).toBe(false);
          expect(plain).toEqual(def);
        }
        const frozen = deepFreeze(fresh());
        expect(plainTool(frozen, extra)).toEqual(expected);
        // The second read of the same definition comes from what was kept.
        expect(plainTool(frozen, extra)).toEqual(expected);
        expect(frozen === undefined || isDeepFrozen(frozen)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
