/**
 * The answer's text means exactly the decision that was made: copying the
 * unchanged parts of the result from the request text (src/decision/answer.ts)
 * gives the same JSON value as serializing the decision, whatever the
 * request text looks like (member order, whitespace, escapes, number
 * spellings, repeated names, hostile values), for results left as they are
 * and for results the policies changed (spotlight, redact, drop, withheld
 * structuredContent). Checked on /v1/evaluate answers and on the gateway
 * interceptor's replacement results.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decisionJson, resultJson } from '../../src/decision/answer.js';
import { runDecision } from '../../src/decision/run.js';
import { parseRequestText } from '../../src/json/parse.js';
import { PolicyStore } from '../../src/policy/store.js';
import type { PolicySet } from '../../src/policy/load.js';
import { SHIPPED_POLICIES } from '../helpers/app.js';
import { evaluateRequestArb, mutatedText, mutationArb, type Json } from '../hostile/gen.js';
import { inlinePolicyDir, LAW_SEED, shuffledText } from './support.js';
import { rmSync } from 'node:fs';

const config = { modeOverride: undefined, maxBlocks: 10_000, maxEvidence: 1000, maxString: 65_536, evalBudgetMs: 10_000 };
let sets: PolicySet[];
let dir: string;
beforeAll(async () => {
  dir = inlinePolicyDir();
  sets = [await new PolicyStore(SHIPPED_POLICIES).load(), await new PolicyStore(dir).load()];
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A string literal with every non-ASCII character, and a few ASCII ones, written as \u escapes. */
function escapedString(s: string): string {
  let out = '"';
  for (const c of s) {
    for (let i = 0; i < c.length; i++) {
      const code = c.charCodeAt(i);
      out += code > 0x7e || c === 'a' || c === 'e' || c === 'T' ? '\\u' + code.toString(16).padStart(4, '0') : JSON.stringify(c).slice(1, -1);
    }
  }
  return out + '"';
}

function escapedText(v: unknown): string {
  if (typeof v === 'string') return escapedString(v);
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return '[' + v.map(escapedText).join(',') + ']';
  return '{' + Object.keys(v).map((k) => escapedString(k) + ':' + escapedText((v as Record<string, unknown>)[k])).join(',') + '}';
}

/** Ways to write one request: shuffled members, pretty-printed with CRLF, strings full of \u escapes. */
function spellings(v: unknown, seed: number): string[] {
  return [shuffledText(v, seed), JSON.stringify(v, null, 2).replace(/\n/g, '\r\n'), escapedText(v)];
}

/** Parse, decide, and check both texts of the answer mean the same. Returns whether the result came back changed. */
function check(text: string, set: PolicySet): 'skipped' | 'modified' | 'unchanged' | 'none' {
  let parsed: ReturnType<typeof parseRequestText>;
  try {
    parsed = parseRequestText(text);
  } catch {
    return 'skipped';
  }
  const body = parsed.value as any;
  if (body === null || typeof body !== 'object' || body.result === null || typeof body.result !== 'object') return 'skipped';
  let decision;
  try {
    decision = runDecision(body, parsed.scan, { config, policies: set });
  } catch {
    return 'skipped'; // limits: a 400, no answer to serialize
  }
  expect(JSON.parse(decisionJson(decision, body.result, parsed.scan))).toEqual(JSON.parse(JSON.stringify(decision)));
  return decision.result === undefined ? 'none' : decision.modified ? 'modified' : 'unchanged';
}

describe('answer text', () => {
  it('equals the serialized decision for generated requests in several spellings, with both policy sets', () => {
    const seen = { modified: 0, unchanged: 0, none: 0, skipped: 0 };
    fc.assert(
      fc.property(evaluateRequestArb, fc.nat(), fc.constantFrom(0, 1), (req, seed, which) => {
        for (const text of spellings(req, seed)) seen[check(text, sets[which]!)]++;
      }),
      { seed: LAW_SEED, numRuns: 300 },
    );
    // The property must have met changed and unchanged results alike.
    expect(seen.modified).toBeGreaterThan(50);
    expect(seen.unchanged).toBeGreaterThan(50);
  });

  it('equals the serialized decision for hostile request texts (repeated names, raw numbers, surrogates, __proto__)', () => {
    fc.assert(
      fc.property(evaluateRequestArb, fc.array(mutationArb, { minLength: 1, maxLength: 3 }), fc.constantFrom(0, 1), (req, mutations, which) => {
        const m = mutations.filter((x) => x.kind !== 'deep' && x.kind !== 'many' && x.kind !== 'long');
        check(mutatedText(req as Json, m), sets[which]!);
      }),
      { seed: LAW_SEED + 1, numRuns: 400 },
    );
  });

  it('of the interceptor: the replacement result means what was decided', () => {
    fc.assert(
      fc.property(evaluateRequestArb, fc.nat(), (req, seed) => {
        for (const text of spellings(req.result, seed)) {
          const { value, scan } = parseRequestText(text, '');
          const decision = runDecision({ result: value as Record<string, unknown> }, scan, { config, policies: sets[1]! });
          if (decision.result === undefined) continue;
          const json = resultJson(decision.result, value, scan);
          expect(json).toBeDefined();
          expect(JSON.parse(json!)).toEqual(JSON.parse(JSON.stringify(decision.result)));
        }
      }),
      { seed: LAW_SEED + 2, numRuns: 200 },
    );
  });

  it('falls back to serializing when the text repeats a member name or holds a number it would not write back as itself', () => {
    const block = (extra: string) => `{"result":{"content":[{"type":"text","text":"a",${extra}}]}}`;
    for (const text of [block('"text":"b"'), block('"n":12345678901234567890'), block('"n":-0'), block('"n":-0.0e5'), block('"n":1e400'), block('"n":-1e-400')]) {
      const { value, scan } = parseRequestText(text);
      const body = value as any;
      const decision = runDecision(body, scan, { config, policies: sets[0]! });
      expect(resultJson(decision.result!, body.result, scan)).toBeUndefined();
      expect(decisionJson(decision, body.result, scan)).toBe(JSON.stringify(decision));
    }
  });
});
