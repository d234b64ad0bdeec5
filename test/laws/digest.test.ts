/**
 * Canonical digests do not depend on how a record is written (contract
 * section 2, RFC 8785 and RFC 8949 section 4.2.1): `/v1/digest` gives the
 * same digest and canonical form, for both schemes and every algorithm,
 * whatever order the members of every object in the record are written in.
 * A record the service refuses is refused the same way in any order.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestApp } from '../helpers/app.js';
import { recordArb } from '../hostile/gen.js';
import { LAW_SEED, shuffledText } from './support.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' });
});
afterAll(() => t.close());

const SCHEMES = ['jcs/rfc8785', 'cbor/rfc8949'] as const;
const ALGORITHMS = ['sha256', 'sha384', 'sha512'] as const;

/** Records with many members at several levels, non-ASCII and integer-like keys, and numbers of every kind. */
const keyArb = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom('a', 'b', 'aa', '10', '2', '1', '\u00e9', '\u20ac', '\ud83d\ude00', 'Z', '_', '', 'class'),
);
/**
 * Numbers of integral value outside ±(2^53-1) (every double from 2^53 up, 1e300 say) make a
 * record non-I-JSON, refused by /v1/digest; brought into range so that the law is checked on
 * records that digest.
 */
const inRange = (v: unknown): unknown => {
  if (typeof v === 'number') return Number.isInteger(v) && !Number.isSafeInteger(v) ? Math.sign(v) * (Math.abs(v) % 1e15) : v;
  if (Array.isArray(v)) return v.map(inRange);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v)) Object.defineProperty(out, k, { value: inRange((v as Record<string, unknown>)[k]), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return v;
};
const recordLike = fc
  .oneof(
    recordArb,
    fc.jsonValue({ maxDepth: 4 }),
    fc.dictionary(keyArb, fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.dictionary(keyArb, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 6 })), { minKeys: 2, maxKeys: 10 }),
  )
  .map(inRange);

async function digest(body: string): Promise<{ status: number; json: any }> {
  const r = await t.app.inject({ method: 'POST', url: '/v1/digest', payload: body, headers: { 'content-type': 'application/json' } });
  return { status: r.statusCode, json: JSON.parse(r.body) };
}

describe('digests are invariant under member reordering', () => {
  it('both schemes, every algorithm, deep reorder', async () => {
    let ok = 0;
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(recordLike, fc.nat(), fc.nat(), async (record, o1, o2) => {
        runs++;
        for (const canonicalization of SCHEMES) {
          for (const algorithm of ALGORITHMS) {
            const a = await digest(shuffledText({ record, canonicalization, algorithm }, o1));
            const b = await digest(shuffledText({ algorithm, canonicalization, record }, o2));
            expect(b.status, `${canonicalization} ${algorithm}`).toBe(a.status);
            if (a.status === 200) {
              ok++;
              expect(b.json.digest).toBe(a.json.digest);
              expect(b.json.canonical).toBe(a.json.canonical);
              expect(a.json.digest.startsWith(`${algorithm}:`)).toBe(true);
            } else {
              expect(b.json.code).toBe(a.json.code);
            }
          }
        }
      }),
      { seed: LAW_SEED + 10, numRuns: 200 },
    );
    // Most records are canonicalizable: the law was not checked on refusals only.
    expect(ok).toBeGreaterThan(runs * 6 * 0.8);
  }, 120_000);
});
