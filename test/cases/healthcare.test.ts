/**
 * The healthcare demo of the Trust Annotations reference SDK (Python,
 * sdk/python in modelcontextprotocol/experimental-ext-tool-annotations),
 * scenario by scenario (contract section 12).
 *
 * Each file in test/cases/healthcare/ is a sequence case of cases.test.ts
 * (one session; `evaluateCall` and `evaluate` steps, then a `getSession`),
 * which runs it with the shipped policies. Its steps also carry:
 *   reference    the reference SDK's decision: { allowed, effect, rule,
 *                reason?, note?, source } (effect: allow, merge, warn,
 *                escalate or block)
 *   withExample  members of `expect` that differ when
 *                examples/policies/healthcare.yaml is loaded beside the
 *                shipped policies
 *   why          why Trustgate decides differently from the reference
 *
 * This file checks that every file says where it comes from and what the
 * reference decides at every step, that a step where Trustgate's verdict
 * differs from the reference's (under either policy set) says why, and runs
 * every file again with the example policy added, against `expect`
 * overridden by `withExample`. A file that cannot be read fails the run.
 */
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { answerOf, post, SHIPPED_POLICIES, testApp, believingServersFile } from '../helpers/app.js';

const DIR = fileURLToPath(new URL('./healthcare', import.meta.url));
const EXAMPLE = fileURLToPath(new URL('../../examples/policies/healthcare.yaml', import.meta.url));

const files = readdirSync(DIR)
  .filter((n) => n.endsWith('.json'))
  .sort();

type Verdict = 'allow' | 'warn' | 'consent' | 'deny';

/** The reference's verdict in Trustgate's terms: block is deny, escalate (the user confirms) is consent. */
function referenceVerdict(ref: any): Verdict {
  if (ref.effect === 'block' && ref.allowed === false) return 'deny';
  if (ref.effect === 'escalate' && ref.allowed === false) return 'consent';
  if (ref.effect === 'warn' && ref.allowed === true) return 'warn';
  if ((ref.effect === 'allow' || ref.effect === 'merge') && ref.allowed === true) return 'allow';
  throw new Error(`reference decision not understood: ${JSON.stringify(ref)}`);
}

function trustgateVerdict(e: any): Verdict {
  if (e.outcome === 'deny') return 'deny';
  if (e.requiresConsent === true) return 'consent';
  if (e.outcome === 'warn' || e.outcome === 'allow') return e.outcome;
  throw new Error(`expectation names no outcome: ${JSON.stringify(e)}`);
}

const isDecision = (s: any) => 'evaluate' in s || 'evaluateCall' in s;

function readCase(file: string): any {
  const c = JSON.parse(readFileSync(join(DIR, file), 'utf8'));
  expect(typeof c.description, 'description').toBe('string');
  expect(Array.isArray(c.source) && c.source.length > 0, 'source lists the reference files').toBe(true);
  expect(typeof c.reference, 'reference (what the reference decides overall)').toBe('string');
  expect(c.policies, 'runs with the shipped policies').toBe('shipped');
  expect(Array.isArray(c.steps) && c.steps.length > 0, 'steps').toBe(true);
  const ids = new Set<string>();
  for (const [i, s] of c.steps.entries()) {
    const at = `step ${i} (${s.note})`;
    expect(typeof s.note, `${at}: note`).toBe('string');
    expect(s.reference, `${at}: reference`).toBeTypeOf('object');
    expect(typeof s.reference.source, `${at}: reference.source`).toBe('string');
    expect(s.expect, `${at}: expect`).toBeTypeOf('object');
    if (!isDecision(s)) {
      expect(typeof s.getSession, `${at}: evaluate, evaluateCall or getSession`).toBe('string');
      ids.add(s.getSession);
      continue;
    }
    const body = s.evaluate ?? s.evaluateCall;
    expect(typeof body.session?.id, `${at}: names its session`).toBe('string');
    ids.add(body.session.id);
    const ref = referenceVerdict(s.reference);
    for (const e of [s.expect, { ...s.expect, ...s.withExample }]) {
      const tg = trustgateVerdict(e);
      if (tg !== ref) expect(typeof s.why, `${at}: decides ${tg} where the reference decides ${ref}, so it says why`).toBe('string');
    }
  }
  expect([...ids], 'one session per file').toHaveLength(1);
  expect('getSession' in c.steps.at(-1), 'ends with the session as GET shows it').toBe(true);
  return c;
}

function expectFenced(sent: any, got: any, indexes: number[]): void {
  for (const i of indexes) {
    const original: string = sent.content[i].text;
    const text: string = got.content[i].text;
    const m = /^<untrusted-content boundary="([0-9a-f]{32})">\n/.exec(text);
    expect(m, 'fence opens with a boundary').not.toBeNull();
    expect(text).toContain(`\n${original}\n`);
    expect(text.endsWith(`</untrusted-content boundary="${m![1]}">`)).toBe(true);
  }
}

/** One file through a fresh service with `policyDir`; `expect` overridden by `withExample`. */
async function runWithExample(c: any, policyDir: string): Promise<void> {
  const t = await testApp({ TRUSTGATE_SERVERS: believingServersFile() }, policyDir);
  try {
    for (const [i, s] of c.steps.entries()) {
      const e = { ...s.expect, ...s.withExample };
      const at = `step ${i} (${s.note})`;
      const r =
        'evaluate' in s
          ? await post(t.app, '/v1/evaluate', s.evaluate)
          : 'evaluateCall' in s
            ? await post(t.app, '/v1/evaluate-call', s.evaluateCall)
            : answerOf(await t.app.inject({ method: 'GET', url: `/v1/sessions/${encodeURIComponent(s.getSession)}` }));
      expect(r.status, `${at}: ${r.body}`).toBe(e.status ?? 200);
      const d = r.json;
      if ('getSession' in s) {
        expect(d, at).toEqual(e.session);
        continue;
      }
      for (const k of ['outcome', 'requiresConsent', 'modified']) if (k in e) expect(d[k], `${at}: ${k}`).toBe(e[k]);
      if (e.findings) {
        expect(d.findings, `${at}: findings`).toMatchObject(e.findings);
        expect(d.findings, `${at}: findings`).toHaveLength(e.findings.length);
      }
      if (e.tool) expect(d.tool, `${at}: tool`).toMatchObject(e.tool);
      if (e.labels) expect(d.labels, `${at}: labels`).toEqual(e.labels);
      if (e.evidence) expect(d.evidence, `${at}: evidence`).toMatchObject(e.evidence);
      if (e.blocks) expect(d.blocks, `${at}: blocks`).toMatchObject(e.blocks);
      if (e.resultAbsent) expect(d, `${at}: not forwarded`).not.toHaveProperty('result');
      if (e.modified === false && !e.resultAbsent) expect(d.result, `${at}: forwarded as it came`).toEqual(s.evaluate.result);
      if (e.spotlit) expectFenced(s.evaluate.result, d.result, e.spotlit);
      if (e.session) expect(d.session, `${at}: session`).toMatchObject(e.session);
    }
  } finally {
    await t.close();
  }
}

describe('healthcare demo of the reference SDK', () => {
  // The shipped policies and the example, in one folder.
  const dir = mkdtempSync(join(tmpdir(), 'trustgate-healthcare-'));
  for (const n of readdirSync(SHIPPED_POLICIES)) {
    if (/\.(ya?ml|json)$/.test(n)) copyFileSync(join(SHIPPED_POLICIES, n), join(dir, n));
  }
  copyFileSync(EXAMPLE, join(dir, 'healthcare.yaml'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('has a file for each scenario of host.py, the mcp_client.py sequence and the untrusted-then-write pair', () => {
    expect(files.length).toBeGreaterThanOrEqual(11);
  });

  it.each(files)('%s: with examples/policies/healthcare.yaml beside the shipped policies', async (file) => {
    await runWithExample(readCase(file), dir);
  });
});
