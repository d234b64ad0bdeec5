/**
 * Tool hints: what a server declares (MCP's defaults for what it leaves out) and what is believed (a declared hint
 * that lowers protection only with the operator's `hints: "declared"`; the operator's own annotations always).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { deepFreeze } from '../../../src/json/frozen.js';
import { believedHints, declaredHints, HINT_DEFAULTS, HINT_NAMES, type ToolHints } from '../../../src/mcp/hints.js';

const hint = fc.oneof(fc.boolean(), fc.jsonValue({ maxDepth: 1 }));
const annotations = fc.record({ readOnlyHint: hint, destructiveHint: hint, idempotentHint: hint, openWorldHint: hint }, { requiredKeys: [] });
const operatorAnnotations = fc.record({ readOnlyHint: fc.boolean(), destructiveHint: fc.boolean(), idempotentHint: fc.boolean(), openWorldHint: fc.boolean() }, { requiredKeys: [] });

describe('declaredHints', () => {
  it('takes boolean hints and defaults the rest, for a frozen definition as for its plain copy', () => {
    fc.assert(
      fc.property(annotations, (ann) => {
        const tool = { name: 't', annotations: ann };
        const got = declaredHints(tool);
        for (const k of HINT_NAMES) {
          const v = (ann as Record<string, unknown>)[k];
          expect(got[k]).toBe(typeof v === 'boolean' ? v : HINT_DEFAULTS[k]);
        }
        expect(declaredHints(deepFreeze(structuredClone(tool)))).toEqual(got);
      }),
    );
  });

  it('defaults every hint without a definition', () => {
    expect(declaredHints(undefined)).toEqual(HINT_DEFAULTS);
  });
});

describe('believedHints', () => {
  it('believes no declared hint that lowers protection unless the operator says "declared"', () => {
    const tool = { name: 'read_file', annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } };
    expect(believedHints(tool, undefined)).toEqual(HINT_DEFAULTS);
    expect(believedHints(tool, { hints: 'defaults' })).toEqual(HINT_DEFAULTS);
    expect(believedHints(tool, { hints: 'declared' })).toEqual(tool.annotations);
  });

  it('never believes less protection than the defaults without the operator, and the operator\'s annotations always win', () => {
    fc.assert(
      fc.property(annotations, fc.constantFrom(undefined, 'defaults' as const, 'declared' as const), fc.option(operatorAnnotations, { nil: undefined }), (ann, trust, mine) => {
        const tool = { name: 't', annotations: ann };
        const op = { ...(trust ? { hints: trust } : {}), ...(mine ? { tools: { t: { annotations: mine } } } : {}) };
        const got = believedHints(tool, op);
        const declared = declaredHints(tool);
        for (const k of HINT_NAMES) {
          const given = (mine as Partial<ToolHints> | undefined)?.[k];
          if (given !== undefined) expect(got[k]).toBe(given);
          else if (trust === 'declared') expect(got[k]).toBe(declared[k]);
          else expect(got[k]).toBe(HINT_DEFAULTS[k]);
        }
      }),
    );
  });

  it('reads the operator\'s annotations of the tool named, not of another', () => {
    const op = { tools: { other: { annotations: { openWorldHint: false } } } };
    expect(believedHints({ name: 'fetch' }, op).openWorldHint).toBe(true);
    expect(believedHints({ name: 'other' }, op).openWorldHint).toBe(false);
    expect(believedHints(undefined, op, 'other').openWorldHint).toBe(false);
  });
});
