/**
 * The four laws of what is forwarded (contract section 11), checked on one
 * answer of /v1/evaluate against what was planted in its request: strings
 * each remembered with the block (or the envelope) it belongs to, whether
 * fencing exempts it, and the block a mirror repeats. test/laws/forward.test.ts
 * plants unique markers in generated results; test/corpus/corpus.test.ts
 * plants the real strings of the reference servers' results.
 */
import { expect } from 'vitest';
import { K, type Json, type Obj } from '../hostile/gen.js';

/** Where a marker was written: a block (by input index) or the result envelope, and whether fencing exempts it. */
export interface Planted {
  marker: string;
  block: number | 'result';
  exempt: boolean;
  /** For mirrors: the block whose text it repeats. */
  mirrorOf?: number;
}

export interface Built {
  request: Obj;
  planted: Planted[];
  /** Names written as case-fold collisions (must never be forwarded). */
  colliding: string[];
  /** Blocks whose own claim holds a case-folded flag name, with the flag. */
  shadowFlags: Array<{ block: number; flag: 'sensitive' | 'untrusted' }>;
}

/** How a string appears inside JSON text (the forwarded result is searched as text). */
const jsonText = (s: string): string => JSON.stringify(s).slice(1, -1);

// ------------------------------------------------------------ reading the forwarded result

const FENCE = /<untrusted-content boundary="([0-9a-f]{32})">\n[\s\S]*?\n<\/untrusted-content boundary="\1">/g;

/** Every member name and string value of a JSON value, each string with its fenced parts cut out. */
function unfenced(v: unknown, boundary: string | undefined, out: string[] = []): string[] {
  if (typeof v === 'string') {
    out.push(boundary === undefined ? v : v.replace(FENCE, (m, b) => (b === boundary ? '' : m)));
  } else if (Array.isArray(v)) {
    for (const x of v) unfenced(x, boundary, out);
  } else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      out.push(k);
      unfenced(x, boundary, out);
    }
  }
  return out;
}

function memberNames(v: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(v)) for (const x of v) memberNames(x, out);
  else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      out.add(k);
      memberNames(x, out);
    }
  }
  return out;
}

const escapeToken = (t: string | number) => String(t).replace(/~/g, '~0').replace(/\//g, '~1');

function resolve(v: unknown, tokens: Array<string | number>): { found: boolean; value?: unknown } {
  let cur: unknown = v;
  for (const t of tokens) {
    if (cur === null || typeof cur !== 'object' || !Object.prototype.hasOwnProperty.call(cur, t)) return { found: false };
    cur = (cur as Record<string, unknown>)[t as string];
  }
  return { found: true, value: cur };
}

function parsePointer(p: string): string[] {
  return p === '' ? [] : p.slice(1).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** Every law for one answer of /v1/evaluate on a built request. */
export function checkLaws(built: Built, answer: any): void {
  const input = built.request.result as Obj;
  if (answer.outcome === 'deny') {
    expect(answer).not.toHaveProperty('result');
    return;
  }
  const out = answer.result;
  expect(out, 'result').toBeTypeOf('object');
  const text = JSON.stringify(out);
  const boundary = /boundary=\\"([0-9a-f]{32})\\"/.exec(text)?.[1];
  const actions = new Map<number, string[]>(answer.blocks.map((b: any) => [b.index, b.actions]));
  const withheldBlock = (i: number) => actions.get(i)?.includes('redact') || actions.get(i)?.includes('drop');
  const spotlit = (i: number) => actions.get(i)?.some((a) => a.startsWith('spotlight'));
  const applied = answer.findings.filter((f: any) => f.applied);
  const resultWithhold = applied.some((f: any) => f.scope === 'result' && (f.effect === 'redact' || f.effect === 'drop'));

  // Law 1.
  for (const p of built.planted) {
    const owner = p.mirrorOf ?? p.block;
    if (typeof owner === 'number' && withheldBlock(owner)) expect(text.includes(jsonText(p.marker)), `law 1: ${p.marker} of withheld block ${owner}`).toBe(false);
  }
  if (resultWithhold) {
    for (const key of Object.keys(out)) expect(['content', 'isError', 'resultType', '_meta'], `law 1: ${key} after a scope-result withhold`).toContain(key);
    if (out._meta !== undefined) expect(Object.keys(out._meta), 'law 1: _meta holds the trust claim alone').toEqual([K]);
    for (const p of built.planted) if (p.block === 'result') expect(text.includes(jsonText(p.marker)), `law 1: ${p.marker} of the envelope`).toBe(false);
  }

  // Law 2.
  const visible = unfenced(out, boundary).join('\u0000');
  for (const p of built.planted) {
    const owner = p.mirrorOf ?? p.block;
    if (p.exempt || typeof owner !== 'number' || !spotlit(owner)) continue;
    expect(visible.includes(p.marker), `law 2: ${p.marker} of spotlit block ${owner} outside a fence`).toBe(false);
  }
  // Text mirrors written outside any block (toolResult, StructuredContent) repeat block text markers.
  if ([...actions.keys()].some(spotlit)) {
    for (const p of built.planted) if (p.block === 'result' && answer.labels.untrusted === true) expect(visible.includes(p.marker), `law 2: ${p.marker} of an untrusted result`).toBe(false);
  }

  // Law 3.
  const names = memberNames(out);
  for (const c of built.colliding) expect(names.has(c), `law 3: ${c} forwarded`).toBe(false);
  if (built.colliding.length > 0) {
    expect(answer.modified, 'law 3: modified').toBe(true);
    expect(answer.validation.some((v: any) => v.rule === 'mcp.member.casefold'), 'law 3: mcp.member.casefold reported').toBe(true);
  }
  for (const s of built.shadowFlags) expect(answer.blocks[s.block][s.flag], `law 3: a folded ${s.flag} on block ${s.block} is true`).toBe(true);

  // Law 4.
  const withheld: string[] = answer.withheld;
  for (const w of withheld) expect(resolve(input, parsePointer(w)).found, `law 4: ${w} names a member of the input`).toBe(true);
  const listed = (tokens: Array<string | number>) => {
    for (let k = tokens.length; k > 0; k--) if (withheld.includes('/' + tokens.slice(0, k).map(escapeToken).join('/'))) return true;
    return false;
  };
  // Input index -> forwarded index (dropped blocks have none).
  const map = new Map<number, number>();
  let k = 0;
  for (let i = 0; i < (input.content as Json[]).length; i++) if (!actions.get(i)?.includes('drop')) map.set(i, k++);
  const walk = (v: unknown, tokens: Array<string | number>, outTokens: Array<string | number>) => {
    if (v === null || typeof v !== 'object') return;
    const entries: Array<[string | number, unknown]> = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
    for (const [key, x] of entries) {
      const t = [...tokens, key];
      let o = [...outTokens, key];
      if (tokens.length === 1 && tokens[0] === 'content') {
        if (withheldBlock(key as number)) continue;
        o = [...outTokens, map.get(key as number)!];
      }
      if (!resolve(out, o).found) {
        expect(listed(t), `law 4: ${'/' + t.map(escapeToken).join('/')} is missing and not listed`).toBe(true);
        continue;
      }
      if (listed(t)) continue;
      walk(x, t, o);
    }
  };
  walk(input, [], []);
  if (!answer.modified) expect(out).toEqual(input);
}
