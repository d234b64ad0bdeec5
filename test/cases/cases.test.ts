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
 *   expect       status (default 200), problemCode, outcome, modified, protocolVersion,
 *                requiresConsent, resultOmitted, labels, labelSources (exact),
 *                sourcesAbsent (no labelSources, no blocks[].sources),
 *                structuredContent, blocks (partial, per element),
 *                evidence (partial, per element), findings (exact list of
 *                partial findings), validation (partial findings that must
 *                be present), validationAbsent (rule ids that must not be),
 *                result (exact, after every spotlight boundary in the
 *                answer is replaced by "B") or resultAbsent, withheld
 *                (exact list), spotlit (block indexes whose text must be
 *                fenced around the original text), session (partial: the
 *                session after the request)
 *
 * A sequence case (contract section 12) has `steps` instead of
 * `request`/`expect`, run in order against an app of its own (so sessions
 * and tool pins start empty). Each step names its route by one member:
 *   evaluate      a /v1/evaluate body, with `expect` as above
 *   evaluateCall  a /v1/evaluate-call body; `expect`: status, problemCode,
 *                 outcome, requiresConsent, findings (exact list of partial
 *                 findings; `"error": "*"` asks for any error text), tool
 *                 (partial), session (partial), sessionAbsent
 *   getSession / deleteSession  a session id; `expect`: status, problemCode,
 *                 session (exact, for getSession)
 *   acceptPin     a PUT /v1/pins body; `expect`: status, problemCode, pin (partial)
 *   note          optional: what the step shows
 */
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { answerOf, post, SHIPPED_POLICIES, testApp, type TestApp, believingServersFile } from '../helpers/app.js';

const ROOT = fileURLToPath(new URL('.', import.meta.url));

function caseFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return caseFiles(p);
    return name.endsWith('.json') ? [p] : [];
  });
}

const files = caseFiles(ROOT).sort();

/** A forwarded result with every spotlight boundary replaced by "B", so fenced text can be written out in a case file. */
function fixedBoundary(v: unknown): unknown {
  return v === undefined ? v : JSON.parse(JSON.stringify(v).replace(/boundary=\\"[0-9a-f]{32}\\"/g, 'boundary=\\"B\\"'));
}
const apps = new Map<string, Promise<TestApp>>();

/** The folder a case's policies load from: the shipped one, or a fresh one holding the case's documents. */
function policyDir(policies: unknown): string {
  if (policies === 'shipped') return SHIPPED_POLICIES;
  if (!Array.isArray(policies) || policies.length === 0) throw new Error('policies must be "shipped" or a non-empty array');
  const dir = mkdtempSync(join(tmpdir(), 'trustgate-case-'));
  policies.forEach((p, i) => writeFileSync(join(dir, `${String(i).padStart(2, '0')}.json`), JSON.stringify(p)));
  return dir;
}

function appFor(policies: unknown, env: Record<string, string>): Promise<TestApp> {
  const key = JSON.stringify([policies, env]);
  let app = apps.get(key);
  if (!app) {
    app = testApp({ TRUSTGATE_SERVERS: believingServersFile(), ...env }, policyDir(policies));
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
    if (c.steps !== undefined) return runSteps(c);
    expect(c.request, 'request').toBeTypeOf('object');
    expect(c.expect, 'expect').toBeTypeOf('object');
    const t = await appFor(c.policies ?? 'shipped', c.env ?? {});
    const r = await post(t.app, '/v1/evaluate', c.request);
    checkEvaluate(r, c.request, c.expect);
  });
});

type Answer = Awaited<ReturnType<typeof post>>;

function checkEvaluate(r: Answer, request: any, e: any): void {
  expect(r.status, r.body).toBe(e.status ?? 200);
  if (e.problemCode) {
    expect(r.json.code).toBe(e.problemCode);
    return;
  }
  const d = r.json;
  for (const k of ['outcome', 'modified', 'requiresConsent', 'resultOmitted', 'protocolVersion']) {
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
  if (e.result) expect(fixedBoundary(d.result)).toEqual(e.result);
  if (e.withheld) expect(d.withheld, 'withheld').toEqual(e.withheld);
  if (e.session) expect(d.session).toMatchObject(e.session);
  if (e.sessionAbsent) expect(d).not.toHaveProperty('session');
  for (const i of e.spotlit ?? []) {
    const inBlock = request.result.content[i];
    const original = inBlock.type === 'resource' ? inBlock.resource.text : inBlock.text;
    const out = d.result.content.find((_: unknown, j: number) => j === i);
    const text = inBlock.type === 'resource' ? out.resource.text : out.text;
    const m = /^<untrusted-content boundary="([0-9a-f]{32})">\n/.exec(text);
    expect(m, 'fence opens with a boundary').not.toBeNull();
    expect(text).toContain(`\n${original}\n`);
    expect(text.endsWith(`</untrusted-content boundary="${m![1]}">`)).toBe(true);
  }
}

const STEP_KINDS = ['evaluate', 'evaluateCall', 'getSession', 'deleteSession', 'acceptPin'] as const;

async function runSteps(c: any): Promise<void> {
  expect(Array.isArray(c.steps) && c.steps.length > 0, 'steps is a non-empty list').toBe(true);
  const t = await testApp({ TRUSTGATE_SERVERS: believingServersFile(), ...(c.env ?? {}) }, policyDir(c.policies ?? 'shipped'));
  try {
    for (const [i, step] of (c.steps as any[]).entries()) {
      const kinds = STEP_KINDS.filter((k) => k in step);
      expect(kinds, `step ${i} names exactly one of ${STEP_KINDS.join(', ')}`).toHaveLength(1);
      const e = step.expect ?? {};
      const at = `step ${i}${step.note ? ` (${step.note})` : ''}`;
      const kind = kinds[0]!;
      if (kind === 'evaluate') {
        const r = await post(t.app, '/v1/evaluate', step.evaluate);
        try {
          checkEvaluate(r, step.evaluate, e);
        } catch (err) {
          throw new Error(`${at}: ${(err as Error).message}`);
        }
        continue;
      }
      let r: Answer;
      if (kind === 'evaluateCall') r = await post(t.app, '/v1/evaluate-call', step.evaluateCall);
      else if (kind === 'acceptPin') r = answerOf(await t.app.inject({ method: 'PUT', url: '/v1/pins', payload: step.acceptPin }));
      else {
        const method = kind === 'getSession' ? 'GET' : 'DELETE';
        r = answerOf(await t.app.inject({ method, url: `/v1/sessions/${encodeURIComponent(step[kind])}` }));
      }
      const status = e.status ?? (kind === 'deleteSession' ? 204 : 200);
      expect(r.status, `${at}: ${r.body}`).toBe(status);
      if (e.problemCode) {
        expect(r.json.code, at).toBe(e.problemCode);
        continue;
      }
      const d = r.json;
      for (const k of ['outcome', 'requiresConsent']) if (k in e) expect(d[k], `${at}: ${k}`).toBe(e[k]);
      if (e.findings) {
        // `"error": "*"`: the finding carries an error, whatever its text.
        const want = e.findings.map((f: any) => (f.error === '*' ? { ...f, error: expect.any(String) } : f));
        expect(d.findings, at).toMatchObject(want);
        expect(d.findings, at).toHaveLength(e.findings.length);
      }
      if (e.tool) expect(d.tool, at).toMatchObject(e.tool);
      if (e.pin) expect(d, at).toMatchObject(e.pin);
      if (e.session) {
        if (kind === 'getSession') expect(d, at).toEqual(e.session);
        else expect(d.session, at).toMatchObject(e.session);
      }
      if (e.sessionAbsent) expect(d, at).not.toHaveProperty('session');
    }
  } finally {
    await t.close();
  }
}
