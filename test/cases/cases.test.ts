/**
 * Decision cases as data (test/cases/**.json), through the real
 * /v1/evaluate route. A file that cannot be read or lacks an expectation
 * fails the run: nothing is skipped silently.
 *
 * Case file:
 *   description  what the case shows, naming the contract rule
 *   policies     "shipped" (policies/) or an array of policy documents
 *   env          extra settings, e.g. { "TRUSTGATE_MODE": "audit" }
 *   request      the /v1/evaluate body
 *   expect       status (default 200), problemCode, outcome, modified,
 *                requiresConsent, resultOmitted, labels, labelSources (exact),
 *                sourcesAbsent (no labelSources, no blocks[].sources),
 *                structuredContent, blocks (partial, per element),
 *                evidence (partial, per element), findings (exact list of
 *                partial findings), validation (partial findings that must
 *                be present), validationAbsent (rule ids that must not be),
 *                result (exact) or resultAbsent, spotlit (block indexes
 *                whose text must be fenced around the original text)
 */
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { post, SHIPPED_POLICIES, testApp, type TestApp } from '../helpers/app.js';

const ROOT = fileURLToPath(new URL('.', import.meta.url));

/** Folders of sequence cases, run by their own harness (healthcare.test.ts). */
const SEQUENCES = new Set([join(ROOT, 'healthcare')]);

function caseFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return SEQUENCES.has(p) ? [] : caseFiles(p);
    return name.endsWith('.json') ? [p] : [];
  });
}

const files = caseFiles(ROOT).sort();
const apps = new Map<string, Promise<TestApp>>();

function appFor(policies: unknown, env: Record<string, string>): Promise<TestApp> {
  const key = JSON.stringify([policies, env]);
  let app = apps.get(key);
  if (!app) {
    let dir = SHIPPED_POLICIES;
    if (policies !== 'shipped') {
      if (!Array.isArray(policies) || policies.length === 0) throw new Error('policies must be "shipped" or a non-empty array');
      dir = mkdtempSync(join(tmpdir(), 'trustgate-case-'));
      policies.forEach((p, i) => writeFileSync(join(dir, `${String(i).padStart(2, '0')}.json`), JSON.stringify(p)));
    }
    app = testApp(env, dir);
    apps.set(key, app);
  }
  return app;
}

afterAll(async () => {
  for (const a of apps.values()) await (await a).close();
});

describe('decision cases', () => {
  it('there are case files', () => {
    expect(files.length).toBeGreaterThan(40);
  });

  it.each(files.map((f) => [f.slice(ROOT.length), f]))('%s', async (_name, file) => {
    const c = JSON.parse(readFileSync(file, 'utf8'));
    expect(typeof c.description, 'description').toBe('string');
    expect(c.request, 'request').toBeTypeOf('object');
    expect(c.expect, 'expect').toBeTypeOf('object');
    const t = await appFor(c.policies ?? 'shipped', c.env ?? {});
    const r = await post(t.app, '/v1/evaluate', c.request);
    const e = c.expect;
    expect(r.status, r.body).toBe(e.status ?? 200);
    if (e.problemCode) {
      expect(r.json.code).toBe(e.problemCode);
      return;
    }
    const d = r.json;
    for (const k of ['outcome', 'modified', 'requiresConsent', 'resultOmitted']) {
      if (k in e) expect(d[k], k).toBe(e[k]);
    }
    if (e.labels) expect(d.labels).toEqual(e.labels);
    if (e.labelSources) expect(d.labelSources).toEqual(e.labelSources);
    if (e.sourcesAbsent) {
      expect(d).not.toHaveProperty('labelSources');
      for (const b of d.blocks) expect(b).not.toHaveProperty('sources');
    }
    if ('structuredContent' in e) expect(d.structuredContent).toEqual(e.structuredContent);
    if (e.blocks) expect(d.blocks).toMatchObject(e.blocks);
    if (e.evidence) expect(d.evidence).toMatchObject(e.evidence);
    if (e.findings) expect(d.findings).toMatchObject(e.findings);
    if (e.findings) expect(d.findings).toHaveLength(e.findings.length);
    for (const v of e.validation ?? []) expect(d.validation).toContainEqual(expect.objectContaining(v));
    for (const rule of e.validationAbsent ?? []) expect(d.validation.map((v: any) => v.rule)).not.toContain(rule);
    if (e.resultAbsent) expect(d).not.toHaveProperty('result');
    if (e.result) expect(d.result).toEqual(e.result);
    for (const i of e.spotlit ?? []) {
      const inBlock = c.request.result.content[i];
      const original = inBlock.type === 'resource' ? inBlock.resource.text : inBlock.text;
      const out = d.result.content.find((_: unknown, j: number) => j === i);
      const text = inBlock.type === 'resource' ? out.resource.text : out.text;
      const m = /^<untrusted-content boundary="([0-9a-f]{32})">\n/.exec(text);
      expect(m, 'fence opens with a boundary').not.toBeNull();
      expect(text).toContain(`\n${original}\n`);
      expect(text.endsWith(`</untrusted-content boundary="${m![1]}">`)).toBe(true);
    }
  });
});
