/** Tool hints: MCP's defaults for what a definition leaves out, the same for a deep-frozen definition as for its plain copy. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { deepFreeze } from '../../../src/json/frozen.js';
import { HINT_DEFAULTS, toolHints } from '../../../src/mcp/hints.js';

describe('toolHints', () => {
  it('takes boolean hints and defaults the rest, for a frozen definition as for its plain copy', () => {
    const hint = fc.oneof(fc.boolean(), fc.jsonValue({ maxDepth: 1 }));
    const annotations = fc.record({ readOnlyHint: hint, destructiveHint: hint, idempotentHint: hint, openWorldHint: hint }, { requiredKeys: [] });
    fc.assert(
      fc.property(annotations, (ann) => {
        const tool = { name: 't', annotations: ann };
        const got = toolHints(tool);
        for (const k of Object.keys(HINT_DEFAULTS) as Array<keyof typeof HINT_DEFAULTS>) {
          const v = (ann as Record<string, unknown>)[k];
          expect(got[k]).toBe(typeof v === 'boolean' ? v : HINT_DEFAULTS[k]);
        }
        expect(toolHints(deepFreeze(structuredClone(tool)))).toEqual(got);
      }),
    );
  });

  it('defaults every hint without a definition', () => {
    expect(toolHints(undefined)).toEqual(HINT_DEFAULTS);
  });
});
