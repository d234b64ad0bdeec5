/**
 * Contract v2 section 11 input rules as laws, on generated input through
 * /v1/evaluate with the shipped policies:
 *
 * - audience: an `annotations.audience` that is not an array of
 *   "user"/"assistant" (any JSON value, any array with one other item)
 *   excludes every reader: the block is dropped for the model and for the
 *   user; a well-formed audience drops it exactly when it is not empty and
 *   lacks the reader;
 * - data-class evidence: a `data-class.v1` evidenceRef whose
 *   canonicalization is anything but the two schemes (near misses included)
 *   is `unsupported`, makes its scope sensitive and is flagged at `warn`,
 *   whatever record is supplied.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveDigest } from '../../src/evidence/digest.js';
import { TRUST_KEY } from '../../src/mcp/meta-key.js';
import { CANONICALIZATIONS } from '../../src/evidence/algorithms.js';
import { post, testApp, type TestApp, believingServersFile } from '../helpers/app.js';
import { LAW_SEED } from './support.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_SERVERS: believingServersFile() });
});
afterAll(() => t.close());

const RUNS = 150;
const ROLES = ['user', 'assistant'];
const json = fc.jsonValue({ maxDepth: 2 });
const wellFormed = fc.array(fc.constantFrom(...ROLES), { maxLength: 4 });
/** Not an array of roles: a non-array, or an array holding at least one item that is not a role. */
const malformed = fc.oneof(
  json.filter((v) => !Array.isArray(v)),
  fc
    .tuple(wellFormed, json.filter((v) => !(typeof v === 'string' && ROLES.includes(v))), wellFormed)
    .map(([a, bad, b]) => [...a, bad, ...b]),
  fc.constantFrom('assistant', 'user', ['User'], ['assistant '], [null], ['user', 3]),
);

async function dropped(audience: unknown, reader: 'user' | 'assistant'): Promise<boolean> {
  const r = await post(t.app, '/v1/evaluate', {
    protocolVersion: '2025-06-18',
    // A closed-world tool: the open-world label (section 16) is not what this law is about.
    tool: { name: 'read', annotations: { openWorldHint: false } },
    result: { content: [{ type: 'text', text: 'marker-8c1f', annotations: { audience } }, { type: 'text', text: 'other' }] },
    context: reader === 'user' ? { reader: 'user', destination: 'local' } : { destination: 'local' },
  });
  expect(r.status).toBe(200);
  const gone = r.json.blocks[0].actions.includes('drop');
  expect(JSON.stringify(r.json.result).includes('marker-8c1f')).toBe(!gone);
  expect(r.json.blocks[1].actions).toEqual([]);
  return gone;
}

describe('audience (section 11)', () => {
  it('a malformed audience is dropped for the model and for the user', async () => {
    await fc.assert(
      fc.asyncProperty(malformed, async (audience) => {
        expect(await dropped(audience, 'assistant'), JSON.stringify(audience)).toBe(true);
        expect(await dropped(audience, 'user'), JSON.stringify(audience)).toBe(true);
      }),
      { numRuns: RUNS, seed: LAW_SEED },
    );
  });

  it('a well-formed audience is dropped exactly when it is set and lacks the reader', async () => {
    await fc.assert(
      fc.asyncProperty(wellFormed, async (audience) => {
        for (const reader of ['assistant', 'user'] as const) {
          expect(await dropped(audience, reader)).toBe(audience.length > 0 && !audience.includes(reader));
        }
      }),
      { numRuns: 40, seed: LAW_SEED },
    );
  });
});

describe('data-class evidence that cannot be checked (section 11)', () => {
  const record = { class: 'public' };
  const digest = deriveDigest(record, 'jcs/rfc8785', 'sha256').digest;
  /** Near misses of the two schemes (case, spaces, suffixes) and arbitrary strings. */
  const canonicalization = fc
    .oneof(
      fc.tuple(fc.constantFrom(...CANONICALIZATIONS), fc.constantFrom(' ', '\t', '\u00a0', '/', '.', 'x', '\u200b'), fc.boolean()).map(([c, x, before]) => (before ? x + c : c + x)),
      fc.constantFrom(...CANONICALIZATIONS).map((c) => c.toUpperCase()),
      fc.string({ maxLength: 20 }),
    )
    .filter((c) => !(CANONICALIZATIONS as readonly string[]).includes(c));

  it('is unsupported, sensitive and flagged at warn, whatever the record says', async () => {
    await fc.assert(
      fc.asyncProperty(canonicalization, fc.boolean(), async (c, blockLevel) => {
        const ref = { [TRUST_KEY]: { evidenceRef: { type: 'data-class.v1', digest, canonicalization: c } } };
        const block: Record<string, unknown> = { type: 'text', text: 'figures' };
        if (blockLevel) block._meta = ref;
        const result: Record<string, unknown> = { content: [block] };
        if (!blockLevel) result._meta = ref;
        const r = await post(t.app, '/v1/evaluate', { protocolVersion: '2025-06-18', result, evidence: [{ digest, record }], context: { destination: 'local' } });
        expect(r.status).toBe(200);
        expect(r.json.evidence).toMatchObject([{ status: 'unsupported', type: 'data-class.v1' }]);
        expect(r.json.labels.sensitive).toBe(true);
        expect(r.json.blocks[0].sensitive).toBe(true);
        expect(r.json.outcome).toBe('warn');
        expect(r.json.findings).toContainEqual(expect.objectContaining({ policy: 'evidence', rule: 'flag-dataclass-unchecked', mode: 'warn' }));
      }),
      { numRuns: RUNS, seed: LAW_SEED },
    );
  });
});
