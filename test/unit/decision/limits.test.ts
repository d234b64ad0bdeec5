/**
 * TRUSTGATE_MAX_STRING over `tool` and `server`: a deep-frozen definition
 * (the proxy judges every call against the one its tools/list gave) is
 * measured once, and still refused, with the same pointer, under any limit
 * its longest string passes, also after it passed a looser one.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { checkStringLengths } from '../../../src/decision/limits.js';
import { deepFreeze } from '../../../src/json/frozen.js';
import { TrustgateError } from '../../../src/errors.js';

/** What checkStringLengths answers: nothing, or the refusal's code and pointers. */
function verdict(tool: Record<string, unknown>, server: Record<string, unknown>, max: number): string {
  try {
    checkStringLengths({ result: { content: [] }, tool, server }, max);
    return 'ok';
  } catch (err) {
    if (!(err instanceof TrustgateError)) throw err;
    return `${err.code} ${JSON.stringify(err.errors)}`;
  }
}

describe('string limits of deep-frozen definitions', () => {
  it('refuse what the same definition unfrozen is refused for, under every limit, in any order', () => {
    const value = fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 3 }));
    fc.assert(
      fc.property(value, value, fc.array(fc.integer({ min: 0, max: 14 }), { minLength: 1, maxLength: 4 }), (tool, server, limits) => {
        const frozenTool = deepFreeze(structuredClone(tool));
        const frozenServer = deepFreeze(structuredClone(server));
        for (const max of limits) expect(verdict(frozenTool, frozenServer, max)).toBe(verdict(tool, server, max));
      }),
    );
  });

  it('a frozen definition that passed a loose limit is refused under a tighter one', () => {
    const tool = deepFreeze({ name: 'echo', description: 'x'.repeat(40) });
    expect(verdict(tool, {}, 100)).toBe('ok');
    expect(verdict(tool, {}, 20)).toMatch(/^TG_ERR_LIMIT_STRING .*"\/tool\/description"/);
  });
});
