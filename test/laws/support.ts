/**
 * Shared set-up of the law suites: the apps they run against (the shipped
 * policies, and an inline set that exposes every flag through findings and
 * applies every transforming effect), a text serializer that writes object
 * members in a seeded random order, and the normalisation that makes two
 * answers comparable.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { believingServersFile, SHIPPED_POLICIES, testApp, type TestApp } from '../helpers/app.js';
import { rng } from '../../bench/fixtures.js';

export const LAW_SEED = Number(process.env.LAW_SEED ?? 0x1a3_2025);
export const FLAGS = ['sensitive', 'untrusted'] as const;
export type Flag = (typeof FLAGS)[number];

/**
 * Inline policies. `flags` reports, for the result and every block, which
 * flags are true, which are asserted at all, and which are asserted false;
 * `effects` applies redact, drop, spotlight and consent on conditions the
 * request's context chooses, so that transformed results are covered too.
 */
export function inlinePolicyDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'trustgate-laws-'));
  const rules: unknown[] = [];
  for (const f of FLAGS) {
    rules.push({ id: `result-${f}-true`, scope: 'result', when: `result.${f}`, effect: 'flag' });
    rules.push({ id: `result-${f}-asserted`, scope: 'result', when: `has(result.asserted.${f})`, effect: 'flag' });
    rules.push({ id: `result-${f}-false`, scope: 'result', when: `has(result.asserted.${f}) && !result.asserted.${f}`, effect: 'flag' });
    rules.push({ id: `block-${f}-true`, scope: 'block', when: `block.${f}`, effect: 'flag' });
    rules.push({ id: `block-${f}-asserted`, scope: 'block', when: `has(block.asserted.${f})`, effect: 'flag' });
    rules.push({ id: `block-${f}-false`, scope: 'block', when: `has(block.asserted.${f}) && !block.asserted.${f}`, effect: 'flag' });
  }
  writeFileSync(join(dir, '10-flags.json'), JSON.stringify({ id: 'flags', mode: 'enforce', rules }));
  writeFileSync(
    join(dir, '20-effects.yaml'),
    [
      'id: effects',
      'mode: enforce',
      'rules:',
      '  - id: redact-sensitive-external',
      '    when: block.sensitive && has(context.destination) && context.destination == "external-model"',
      '    effect: redact',
      '  - id: drop-untrusted-for-user',
      '    when: block.untrusted && has(context.reader) && context.reader == "user"',
      '    effect: drop',
      '  - id: spotlight-untrusted',
      '    when: block.untrusted',
      '    effect: spotlight',
      '  - id: spotlight-everything-untrusted-result',
      '    scope: result',
      '    when: result.untrusted && has(context.destination) && context.destination == "local"',
      '    effect: spotlight',
      '  - id: withhold-sensitive-result',
      '    scope: result',
      '    when: result.sensitive && has(context.reader) && context.reader == "assistant"',
      '    effect: redact',
      '  - id: consent-sensitive',
      '    scope: result',
      '    when: result.sensitive',
      '    effect: consent',
      '',
    ].join('\n'),
  );
  return dir;
}

export interface LawApps {
  shipped: TestApp;
  inline: TestApp;
  close(): Promise<void>;
}

export async function lawApps(): Promise<LawApps> {
  // Laws about claims: the tools' own hints decide the open-world label (the operator believes the servers).
  const env = { LOG_LEVEL: 'warn', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', TRUSTGATE_SERVERS: believingServersFile() };
  const shipped = await testApp(env, SHIPPED_POLICIES);
  const dir = inlinePolicyDir();
  const inline = await testApp(env, dir);
  return {
    shipped,
    inline,
    close: async () => {
      await shipped.close();
      await inline.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** POST a body text as JSON; the answer with every spotlight boundary replaced by a fixed one. */
export async function evaluate(t: TestApp, text: string): Promise<{ status: number; json: any; raw: string }> {
  const r = await t.app.inject({ method: 'POST', url: '/v1/evaluate', payload: text, headers: { 'content-type': 'application/json' } });
  const raw = r.body.replace(/boundary=\\"[0-9a-f]{32}\\"/g, 'boundary=\\"B\\"');
  return { status: r.statusCode, json: JSON.parse(raw), raw: r.body };
}

/** Seeded generator shared with the benchmarks, so that reorderings are reproducible from a fast-check value. */
export { rng };

/** JSON text of `v` with the members of every object written in a random order (arrays keep theirs). */
export function shuffledText(v: unknown, seed: number): string {
  const next = rng(seed);
  const write = (x: unknown): string => {
    if (x === null || typeof x !== 'object') return JSON.stringify(x) ?? 'null';
    if (Array.isArray(x)) return '[' + x.map(write).join(',') + ']';
    const keys = Object.keys(x);
    for (let i = keys.length - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      [keys[i], keys[j]] = [keys[j]!, keys[i]!];
    }
    return '{' + keys.map((k) => JSON.stringify(k) + ':' + write((x as Record<string, unknown>)[k])).join(',') + '}';
  };
  return write(v);
}

/** The answer without what differs by design between two decisions (the id), validation as a multiset. */
export function comparable(answer: any): any {
  const { decisionId: _id, ...rest } = answer;
  if (Array.isArray(rest.validation)) rest.validation = [...rest.validation].map((v) => JSON.stringify(v)).sort();
  return rest;
}

/** The tri-state flags the inline `flags` policy saw, read back from the findings. */
export function flagsSeen(answer: any): { labels: Record<Flag, boolean | null>; blocks: Map<number, Record<Flag, boolean | null>> } {
  const matched = new Set<string>(answer.findings.filter((f: any) => f.policy === 'flags').map((f: any) => `${f.rule}@${f.pointer}`));
  const tri = (scope: 'result' | 'block', f: Flag, pointer: string): boolean | null =>
    matched.has(`${scope}-${f}-true@${pointer}`) ? true : matched.has(`${scope}-${f}-asserted@${pointer}`) ? false : null;
  const labels = { sensitive: tri('result', 'sensitive', ''), untrusted: tri('result', 'untrusted', '') };
  const blocks = new Map<number, Record<Flag, boolean | null>>();
  for (const b of answer.blocks) {
    const p = `/content/${b.index}`;
    blocks.set(b.index, { sensitive: tri('block', 'sensitive', p), untrusted: tri('block', 'untrusted', p) });
  }
  return { labels, blocks };
}

/** Errors in the inline `flags` policy would make every rule match (fail closed) and void the read-back. */
export function flagErrors(answer: any): unknown[] {
  return answer.findings.filter((f: any) => f.policy === 'flags' && f.error !== undefined);
}
