/**
 * structuredContent labelled untrusted where no block is (contract section
 * 15): a result-level claim over blocks that say `untrusted: false` or over
 * no blocks at all, a fides label on `$['structuredContent']` (or a path
 * below it), an ifc result-level label. Whatever the shape, under the
 * shipped policies no string of that structuredContent reaches the
 * forwarded result unfenced: structuredContent is withheld, and the text
 * mirror of it is fenced.
 */
import fc from 'fast-check';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createDecisionCore, type DecisionCore } from '../../src/decision/core.js';
import { PolicyStore } from '../../src/policy/reload.js';
import { MemorySessionStore } from '../../src/session/memory.js';

const SHIPPED = fileURLToPath(new URL('../../policies', import.meta.url));
const K = 'io.modelcontextprotocol/trust-annotations';
const FIDES = 'com.github.ifc/labels';
const MARK = 'IGNORE-PREVIOUS-INSTRUCTIONS';

let core: DecisionCore;
let runs = 0;
beforeAll(async () => {
  const config = loadConfig({ TRUSTGATE_POLICY_DIR: SHIPPED });
  const store = new PolicyStore(config.policyDir);
  await store.load();
  core = createDecisionCore({ config, policies: () => store.current, sessions: new MemorySessionStore({ maxSessions: 100_000, maxPins: 10, ttlMs: 60_000 }) });
});

/** Every string in a JSON value, with member names. */
function strings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) strings(x, out);
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push(k), strings(x, out);
  return out;
}

/** Where the untrusted label on structuredContent comes from. */
const labelling = fc.constantFrom('result-claim', 'fides-structured', 'fides-structured-member', 'ifc-result');

describe('structuredContent under a result-level untrusted label', () => {
  it('is never forwarded unfenced, whatever the blocks say and however the label is spelled', async () => {
    await fc.assert(
      fc.asyncProperty(
        labelling,
        fc.array(fc.constantFrom('trusted-false', 'plain', 'mirror'), { maxLength: 3 }),
        fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.oneof(fc.string(), fc.constant(MARK)), { maxKeys: 4 }),
        fc.option(fc.constantFrom('2025-06-18', '2025-11-25'), { nil: undefined }),
        fc.boolean(),
        async (how, blocks, extra, protocolVersion, session) => {
          const structured = { note: MARK, ...extra, nested: { deeper: [MARK] } };
          const content = blocks.map((b) =>
            b === 'trusted-false'
              ? { type: 'text', text: `block ${MARK}`, _meta: { [K]: { untrusted: false } } }
              : b === 'mirror'
                ? { type: 'text', text: JSON.stringify(structured) }
                : { type: 'text', text: 'plain' },
          );
          const meta: Record<string, unknown> = {};
          if (how === 'result-claim') meta[K] = { untrusted: true };
          if (how === 'fides-structured') meta[FIDES] = { "$['structuredContent']": { integrity: 'untrusted', confidentiality: ['public'] } };
          if (how === 'fides-structured-member') meta[FIDES] = { "$['structuredContent']['note']": { integrity: 'untrusted' } };
          if (how === 'ifc-result') meta.ifc = { integrity: 'untrusted', confidentiality: 'public' };
          const result = { content, structuredContent: structured, _meta: meta };
          const d = await core.evaluateResult({
            request: { result, ...(protocolVersion ? { protocolVersion } : {}), ...(session ? { session: { id: `s-${runs++}` } } : {}) } as never,
          });
          if (d.outcome === 'deny') return;
          const forwarded = d.result ?? result;
          expect(forwarded).not.toHaveProperty('structuredContent');
          for (const s of strings(forwarded)) {
            if (s.includes(MARK)) expect(s.startsWith('<untrusted-content boundary="'), `unfenced: ${s.slice(0, 80)}`).toBe(true);
          }
          // The session takes in what the model read: blocks that may mirror the untrusted structuredContent (none read, nothing taken in).
          if (session) expect(d.session?.untrusted).toBe(blocks.length > 0);
        },
      ),
      { numRuns: 200 },
    );
  });
});
