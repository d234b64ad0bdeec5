/**
 * Contract section 12: session labels only go up. Any sequence of
 * /v1/evaluate and /v1/evaluate-call requests naming one session, through
 * the real app and its memory store, with policies that deny, drop, redact,
 * spotlight and ask consent, never lowers a label: `sensitive`/`untrusted`
 * stay true once true, the data class never falls in rank, `regulatory`
 * and `tools` never lose an item, and the counts grow by exactly one per
 * answered request of their kind (refused requests count nothing).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { digestOf, jcsText } from '../../src/evidence/digest.js';
import { dataClassRank } from '../../src/session/store.js';
import { answerOf, post, type TestApp } from '../helpers/app.js';
import { lawApps, LAW_SEED, type LawApps } from './support.js';

const K = 'io.modelcontextprotocol/trust-annotations';
const CLASSES = ['public', 'internal', 'personal', 'confidential', 'restricted', 'highly_confidential', 'top-secret'];

const flag = fc.constantFrom(undefined, true, false, 'yes');
const claim = fc.record({ sensitive: flag, untrusted: flag }, { requiredKeys: [] }).map((c) => JSON.parse(JSON.stringify(c)));
const record = fc.record({ class: fc.constantFrom(...CLASSES), regulatory: fc.subarray(['GDPR', 'hipaa', 'pci', 'CCPA']) });
const block = fc.record({
  text: fc.string({ maxLength: 8 }),
  claim: fc.option(claim, { nil: undefined }),
  record: fc.option(record, { nil: undefined }),
  audience: fc.option(fc.constantFrom(['user'], ['assistant']), { nil: undefined }),
});
const evaluateStep = fc.record({
  kind: fc.constant('evaluate' as const),
  resultClaim: fc.option(claim, { nil: undefined }),
  blocks: fc.array(block, { maxLength: 3 }),
  structured: fc.boolean(),
  context: fc.constantFrom({}, { destination: 'local' }, { destination: 'external-model' }, { reader: 'user' }, { reader: 'assistant' }),
  withEvidence: fc.boolean(),
});
const callStep = fc.record({
  kind: fc.constant('call' as const),
  name: fc.constantFrom('search', 'send_email', 'rm'),
  readOnly: fc.option(fc.boolean(), { nil: undefined }),
  description: fc.constantFrom('a', 'b'),
});
const badStep = fc.constant({ kind: 'bad' as const });
const step = fc.oneof({ arbitrary: evaluateStep, weight: 5 }, { arbitrary: callStep, weight: 3 }, { arbitrary: badStep, weight: 1 });

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function evaluateBody(s: any, session: string) {
  const evidence: unknown[] = [];
  const content = s.blocks.map((b: any) => {
    const c: Record<string, unknown> = { ...(b.claim ?? {}) };
    if (b.record) {
      const digest = digestOf(jcsText(b.record), 'sha256');
      c.evidenceRef = { type: 'data-class.v1', digest, canonicalization: 'jcs/rfc8785' };
      if (s.withEvidence) evidence.push({ digest, record: b.record });
    }
    const out: Record<string, unknown> = { type: 'text', text: b.text };
    if (Object.keys(c).length > 0) out._meta = { [K]: c };
    if (b.audience) out.annotations = { audience: b.audience };
    return out;
  });
  const result: Record<string, unknown> = { content };
  if (s.resultClaim) result._meta = { [K]: s.resultClaim };
  if (s.structured) result.structuredContent = { n: 1 };
  return { protocolVersion: '2025-06-18', result, context: s.context, evidence, session: { id: session } };
}

type View = { sensitive: boolean; untrusted: boolean; dataClass: { class?: string; regulatory?: string[] }; calls: number; results: number; tools: string[] };

function expectNotLower(before: View, after: View, counted: { calls: number; results: number }): void {
  if (before.sensitive) expect(after.sensitive).toBe(true);
  if (before.untrusted) expect(after.untrusted).toBe(true);
  if (before.dataClass.class !== undefined) {
    expect(after.dataClass.class).toBeDefined();
    expect(dataClassRank(after.dataClass.class!)).toBeGreaterThanOrEqual(dataClassRank(before.dataClass.class));
    for (const r of before.dataClass.regulatory ?? []) expect(after.dataClass.regulatory).toContain(r);
  }
  for (const t of before.tools) expect(after.tools).toContain(t);
  expect(after.tools.slice(0, before.tools.length)).toEqual(before.tools);
  expect(after.calls).toBe(before.calls + counted.calls);
  expect(after.results).toBe(before.results + counted.results);
}

describe('session labels only go up (section 12)', () => {
  let apps: LawApps;
  beforeAll(async () => {
    apps = await lawApps();
  });
  afterAll(async () => apps.close());

  it.each(['shipped', 'inline'] as const)('any sequence of requests, %s policies', async (set) => {
    let run = 0;
    const raised = { sensitive: 0, untrusted: 0, dataClass: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async (steps) => {
        const t: TestApp = apps[set];
        const id = `mono-${set}-${run++}`;
        let before: View = { sensitive: false, untrusted: false, dataClass: {}, calls: 0, results: 0, tools: [] };
        for (const s of steps) {
          let r;
          let counted = { calls: 0, results: 0 };
          if (s.kind === 'evaluate') {
            r = await post(t.app, '/v1/evaluate', evaluateBody(s, id));
            expect(r.status, r.body).toBe(200);
            counted = { calls: 0, results: 1 };
            if (r.json.outcome === 'deny') {
              // A denied result adds no labels.
              expect(r.json.session).toMatchObject({ sensitive: before.sensitive, untrusted: before.untrusted, dataClass: before.dataClass });
            }
          } else if (s.kind === 'call') {
            const tool: Record<string, unknown> = { name: s.name, description: s.description };
            if (s.readOnly !== undefined) tool.annotations = { readOnlyHint: s.readOnly };
            r = await post(t.app, '/v1/evaluate-call', { call: { name: s.name }, tool, server: { name: 'x' }, session: { id } });
            expect(r.status, r.body).toBe(200);
            counted = { calls: 1, results: 0 };
          } else {
            r = await post(t.app, '/v1/evaluate', { result: { content: 'not a list' }, session: { id }, extra: true });
            expect(r.status).toBe(400);
          }
          const g = answerOf(await t.app.inject({ method: 'GET', url: `/v1/sessions/${id}` }));
          const after: View = g.status === 404 ? before : g.json;
          if (r.status === 200) expect(r.json.session).toEqual(after);
          expectNotLower(before, after, counted);
          if (after.sensitive && !before.sensitive) raised.sensitive++;
          if (after.untrusted && !before.untrusted) raised.untrusted++;
          if (after.dataClass.class !== before.dataClass.class) raised.dataClass++;
          before = after;
        }
      }),
      { seed: LAW_SEED, numRuns: 40 },
    );
    // The sequences did raise labels: the property was not checked on sessions that never change.
    expect(raised.sensitive).toBeGreaterThan(0);
    expect(raised.untrusted).toBeGreaterThan(0);
    expect(raised.dataClass).toBeGreaterThan(0);
  });
});
