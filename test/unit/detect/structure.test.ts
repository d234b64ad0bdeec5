/**
 * A credential a member's name names in a result's JSON (`{"password": "..."}` in structuredContent, `_meta`,
 * annotations, the envelope): the value alone says nothing, so the structure is read as the JSON it is sent as, and a
 * find goes back to the strings it falls in (src/detect/structure.ts, DetectionCache.readStructure).
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decideResult } from '../../../src/decision/result.js';
import type { EvaluateRequest } from '../../../src/decision/types.js';
import { compilePolicyFiles } from '../../../src/policy/load.js';
import { leafAt, rawStretch, writeStructure } from '../../../src/detect/structure.js';
import { DetectionCache, scanSecrets } from '../../../src/detect/index.js';
import { TRUST_KEY } from '../../../src/mcp/meta-key.js';

const enc = new TextEncoder();
const SHIPPED = compilePolicyFiles([{ name: 'secrets.yaml', bytes: readFileSync(new URL('../../../policies/secrets.yaml', import.meta.url)) }], 'policies');
// A mask whose condition reads no text: it masks what the reading of names and seams finds all the same.
const ALWAYS = compilePolicyFiles([{ name: 'm.yaml', bytes: enc.encode('id: m\nmode: enforce\nrules:\n  - id: all\n    scope: result\n    when: "true"\n    effect: mask\n    mask: [secrets]\n') }], 'policies');
const decide = (policies: typeof SHIPPED, result: Record<string, unknown>) =>
  decideResult({ protocolVersion: '2025-06-18', result } as EvaluateRequest, { policies, decisionId: 'd', boundary: 'b0', maxBlocks: 100, maxEvidence: 10 });

/** The strings of `v` in the order JSON writes them: each member's name before its value; integers of 7 digits or more written in digits, as their digits. */
function inOrder(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (typeof v === 'number' && Number.isInteger(v) && Math.abs(v) >= 1e6 && /^-?[0-9]+$/.test(JSON.stringify(v))) out.push(JSON.stringify(v));
  else if (Array.isArray(v)) for (const x of v) inOrder(x, out);
  else if (v !== null && typeof v === 'object') for (const k of Object.keys(v)) (out.push(k), inOrder((v as Record<string, unknown>)[k], out));
  return out;
}

describe('a structure written as JSON for the detectors', () => {
  it('is the JSON of the value, and each string stands where it says, escaped as JSON escapes it', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.string({ unit: fc.constantFrom('a', '"', '\\', '\b', '\f', '\u0001', '\ud800', '\udc00', 'é') }), (v, odd) => {
        const value = { odd, v };
        const w = writeStructure(value)!;
        expect(w.text).toBe(JSON.stringify(value));
        const expected = inOrder(value);
        expect(w.starts.map((_, k) => leafAt(w, k))).toEqual(expected);
        w.starts.forEach((start, k) => {
          // The whole of a string as written is the whole string.
          expect(rawStretch(leafAt(w, k), 0, w.ends[k]! - start)).toEqual([0, expected[k]!.length]);
        });
      }),
      { numRuns: 500 },
    );
  });

  it('maps a stretch as written back to every character whose escape it touches, and no other', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('a', 'b', '"', '\\', '\n', '\b', '\u0001', 'é', '\ud800', '\udc00', '\ud83d\ude00'), minLength: 1, maxLength: 20 }), fc.nat(), fc.nat(), (s, x, y) => {
        const w = writeStructure({ k: s })!;
        const at = w.starts.length - 1;
        const len = w.ends[at]! - w.starts[at]!;
        const from = x % len;
        const to = from + 1 + (y % (len - from));
        const [a, b] = rawStretch(s, from, to);
        let off = 0;
        for (let i = 0; i < s.length; i++) {
          // (What JSON.stringify writes for this one character where it stands: half of a surrogate pair as itself.)
          const high = (c: string | undefined) => c !== undefined && c >= '\ud800' && c <= '\udbff';
          const low = (c: string | undefined) => c !== undefined && c >= '\udc00' && c <= '\udfff';
          const paired = (high(s[i]) && low(s[i + 1])) || (low(s[i]) && high(s[i - 1]));
          const own = paired ? 1 : JSON.stringify(s[i]).length - 2;
          const touches = off < to && off + own > from;
          expect(i >= a && i < b, `${i} of ${JSON.stringify(s)}, [${from}, ${to}) as written`).toBe(touches);
          off += own;
        }
      }),
      { numRuns: 500 },
    );
  });
});

/** Every string of `v`, member names included. */
function strings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) strings(x, out);
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) (out.push(k), strings(x, out));
  return out;
}

describe('a credential a name names in the JSON of a result', () => {
  const value = fc.stringMatching(/^[A-Za-z0-9]{18,28}$/).filter((v) => /[a-z]/.test(v) && /[A-Z]/.test(v) && /[0-9]/.test(v) && new Set(v).size >= 12);
  const name = fc.constantFrom('password', 'api_key', 'apiKey', 'DB_PASSWORD', 'client_secret', 'token', 'X-Api-Key');
  // Where: structuredContent at any depth, `_meta`, a block's annotations or `_meta`, the envelope.
  const where = fc.constantFrom('structured', 'meta', 'annotations', 'blockMeta');
  const around = fc.jsonValue({ maxDepth: 2 });
  const depth = fc.array(fc.constantFrom('config', 'data', 'items', 'env', 'settings'), { maxLength: 3 });

  it('never reaches the host, under the shipped set and under a mask whose condition reads no text', () => {
    fc.assert(
      fc.property(value, name, where, around, depth, fc.integer({ min: 0, max: 4 }), (v, n, w, other, path, pick) => {
        fc.pre(!strings(other).some((s) => s.includes(v)));
        // How the name names it: a member, a pair's `value`, a collection's item, a collection's member, a list of pairs.
        const shapes = [{ [n]: v }, { name: n, value: v }, { [`${n.toLowerCase()}s`]: [v] }, { passwords: { prod: v } }, [{ key: n, value: v }]];
        let node: unknown = shapes[pick]!;
        // What is found in the JSON of the shape, read as a text, is found wherever the shape stands in a result.
        fc.pre(scanSecrets(JSON.stringify(node)).length > 0);
        for (const p of path) node = { [p]: node, other };
        const result: Record<string, unknown> = { content: [{ type: 'text', text: 'done' }] };
        if (w === 'structured') result.structuredContent = node;
        else if (w === 'meta') result._meta = { debug: node, [TRUST_KEY]: { untrusted: false } };
        else if (w === 'annotations') result.content = [{ type: 'text', text: 'done', annotations: { audience: ['user'], extra: node } }];
        else result.content = [{ type: 'text', text: 'done', _meta: { trace: node } }];
        for (const policies of [SHIPPED, ALWAYS]) {
          const d = decide(policies, result);
          const shown = strings(d.result);
          expect(shown.some((s) => s.includes(v)), JSON.stringify(result)).toBe(false);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('masks only the value: names, other members and words stay', () => {
    const d = decide(SHIPPED, { content: [{ type: 'text', text: 'done' }], structuredContent: { user: 'deploy', password: 'Xr4mQ9vLt2Kp7zBn', note: 'rotated monthly' } });
    expect((d.result as { structuredContent: unknown }).structuredContent).toEqual({ user: 'deploy', password: '[secret-assignment withheld by secrets/mask-secrets]', note: 'rotated monthly' });
    // A name alone, words under a secret's name, a reference: none.
    const none = decide(SHIPPED, { content: [{ type: 'text', text: 'done' }], structuredContent: { password: 'required', secrets: ['db_password', 'api_key'], token_file: '/run/secrets/token' } });
    expect((none.result as { structuredContent: unknown }).structuredContent).toEqual({ password: 'required', secrets: ['db_password', 'api_key'], token_file: '/run/secrets/token' });
  });
});

describe('reading a structure under the decision deadline', () => {
  it('stops where the time is spent, and a string not read since is withheld whole', () => {
    const rows = Array.from({ length: 20_000 }, (_, i) => ({ name: `row${i}`, password_hint: `aB3${i}` }));
    const cache = new DetectionCache(() => true);
    cache.readStructure({ rows, api_key: 'Xr4mQ9vLt2Kp7zBnq8Wd' });
    expect(cache.stopped).toBe(true);
    expect(cache.spans('secrets', 'row7')).toEqual([{ kind: 'unchecked', start: 0, end: 4 }]);
  });
});
