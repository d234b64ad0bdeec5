/**
 * The healthcare demo of the Trust Annotations reference SDK (Python,
 * sdk/python in modelcontextprotocol/experimental-ext-tool-annotations),
 * scenario by scenario, through the real routes (contract section 12).
 *
 * Each file in test/cases/healthcare/ is one session: `steps` are
 * /v1/evaluate-call and /v1/evaluate requests sent in order to one fresh
 * service (memory store, so tool pins start empty). Every file runs twice:
 * with the shipped policies (`want`), and with the shipped policies plus
 * examples/policies/healthcare.yaml (`want` overridden by `withExample`).
 * A file that cannot be read, or a step without `reference` and `want`,
 * fails the run. A step where Trustgate's verdict differs from the
 * reference's, under either policy set, must say `why`.
 *
 * Step:
 *   say          what the step is
 *   post         "/v1/evaluate-call" or "/v1/evaluate"
 *   body         the request body (names its session)
 *   reference    the reference SDK's decision: { allowed, effect, rule, reason?, note?, source }
 *   want         status (default 200), outcome, requiresConsent, modified,
 *                findings (exact list of "policy/rule"), pin, hints,
 *                session (listed members; dataClass null = none yet),
 *                labels, evidence (statuses in order), blocks (partial),
 *                forwarded: "unchanged" | "fenced" | "none"
 *   withExample  members of `want` that differ when the example policy is loaded
 *   why          why Trustgate decides differently, where it does
 */
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { answerOf, post, SHIPPED_POLICIES, testApp } from '../helpers/app.js';

const DIR = fileURLToPath(new URL('./healthcare', import.meta.url));
const EXAMPLE = fileURLToPath(new URL('../../examples/policies/healthcare.yaml', import.meta.url));
const ROUTES = new Set(['/v1/evaluate-call', '/v1/evaluate']);

const files = readdirSync(DIR)
  .filter((n) => n.endsWith('.json'))
  .sort();

/** The shipped policies and the example policy, in one folder. */
function exampleDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'trustgate-healthcare-'));
  for (const n of readdirSync(SHIPPED_POLICIES)) {
    if (/\.(ya?ml|json)$/.test(n)) copyFileSync(join(SHIPPED_POLICIES, n), join(dir, n));
  }
  copyFileSync(EXAMPLE, join(dir, 'healthcare.yaml'));
  return dir;
}

type Verdict = 'allow' | 'warn' | 'consent' | 'deny';

/** The reference's verdict in Trustgate's terms: block is deny, escalate (ask the user) is consent. */
function referenceVerdict(ref: any): Verdict {
  if (ref.effect === 'block') return 'deny';
  if (ref.effect === 'escalate') return 'consent';
  if (ref.effect === 'warn') return 'warn';
  if (ref.allowed === true && (ref.effect === 'allow' || ref.effect === 'merge')) return 'allow';
  throw new Error(`reference decision not understood: ${JSON.stringify(ref)}`);
}

function trustgateVerdict(want: any): Verdict {
  if (want.outcome === 'deny') return 'deny';
  if (want.requiresConsent === true) return 'consent';
  return want.outcome;
}

function readCase(file: string): any {
  const c = JSON.parse(readFileSync(join(DIR, file), 'utf8'));
  expect(typeof c.description, 'description').toBe('string');
  expect(Array.isArray(c.source) && c.source.length > 0, 'source').toBe(true);
  expect(Array.isArray(c.steps) && c.steps.length > 0, 'steps').toBe(true);
  const ids = new Set<string>();
  for (const [i, s] of c.steps.entries()) {
    const at = `step ${i}`;
    expect(ROUTES.has(s.post), `${at}: post`).toBe(true);
    expect(s.body, `${at}: body`).toBeTypeOf('object');
    expect(typeof s.body.session?.id, `${at}: body.session.id`).toBe('string');
    ids.add(s.body.session.id);
    expect(s.reference, `${at}: reference`).toBeTypeOf('object');
    expect(typeof s.reference.source, `${at}: reference.source`).toBe('string');
    expect(s.want, `${at}: want`).toBeTypeOf('object');
    const ref = referenceVerdict(s.reference);
    for (const want of [s.want, { ...s.want, ...s.withExample }]) {
      if (trustgateVerdict(want) !== ref) expect(typeof s.why, `${at}: decides ${trustgateVerdict(want)} where the reference decides ${ref}, so it says why`).toBe('string');
    }
  }
  expect(ids.size, 'one session per file').toBe(1);
  return c;
}

function expectFenced(sent: any, got: any): void {
  for (const [i, block] of sent.content.entries()) {
    if (block.type !== 'text') continue;
    const text: string = got.content[i].text;
    const m = /^<untrusted-content boundary="([0-9a-f]{32})">\n/.exec(text);
    expect(m, 'fence opens with a boundary').not.toBeNull();
    expect(text).toContain(`\n${block.text}\n`);
    expect(text.endsWith(`</untrusted-content boundary="${m![1]}">`)).toBe(true);
  }
}

async function runCase(c: any, policyDir: string, withExample: boolean): Promise<void> {
  const t = await testApp({}, policyDir);
  try {
    let last: any;
    for (const [i, s] of c.steps.entries()) {
      const w = withExample ? { ...s.want, ...s.withExample } : s.want;
      const at = `step ${i} (${s.say})`;
      const r = await post(t.app, s.post, s.body);
      expect(r.status, `${at}: ${r.body}`).toBe(w.status ?? 200);
      const d = r.json;
      for (const k of ['outcome', 'requiresConsent', 'modified']) {
        if (k in w) expect(d[k], `${at}: ${k}`).toBe(w[k]);
      }
      if (w.findings) {
        const got = d.findings.map((f: any) => `${f.policy}/${f.rule}`).sort();
        expect(got, `${at}: findings`).toEqual([...w.findings].sort());
      }
      if ('pin' in w) expect(d.tool?.pin, `${at}: pin`).toBe(w.pin);
      if (w.hints) expect(d.tool?.hints, `${at}: hints`).toEqual(w.hints);
      if (w.labels) expect(d.labels, `${at}: labels`).toEqual(w.labels);
      if (w.evidence) expect(d.evidence.map((e: any) => e.status), `${at}: evidence`).toEqual(w.evidence);
      if (w.blocks) expect(d.blocks, `${at}: blocks`).toMatchObject(w.blocks);
      if (w.forwarded === 'unchanged') expect(d.result, `${at}: forwarded`).toEqual(s.body.result);
      if (w.forwarded === 'none') expect(d, `${at}: forwarded`).not.toHaveProperty('result');
      if (w.forwarded === 'fenced') expectFenced(s.body.result, d.result);
      if (w.session) {
        expect(d.session?.id, `${at}: session.id`).toBe(s.body.session.id);
        for (const [k, v] of Object.entries(w.session)) {
          if (k === 'dataClass' && v === null) {
            const dc = d.session.dataClass;
            expect(dc === undefined || Object.keys(dc).length === 0, `${at}: session.dataClass none`).toBe(true);
          } else {
            expect(d.session[k], `${at}: session.${k}`).toEqual(v);
          }
        }
      }
      last = d;
    }
    // What the session shows afterwards is what the last answer said.
    const id = c.steps[0].body.session.id;
    const g = answerOf(await t.app.inject({ method: 'GET', url: `/v1/sessions/${id}` }));
    expect(g.status).toBe(200);
    expect(g.json).toMatchObject(last.session);
  } finally {
    await t.close();
  }
}

describe('healthcare demo of the reference SDK', () => {
  it('has its scenario files', () => {
    expect(files.length).toBeGreaterThanOrEqual(8);
  });

  const withExampleDir = exampleDir();
  afterAll(() => rmSync(withExampleDir, { recursive: true, force: true }));
  describe.each(files)('%s', (file) => {
    it('with the shipped policies', async () => {
      await runCase(readCase(file), SHIPPED_POLICIES, false);
    });
    it('with the shipped policies and examples/policies/healthcare.yaml', async () => {
      await runCase(readCase(file), withExampleDir, true);
    });
  });
});
