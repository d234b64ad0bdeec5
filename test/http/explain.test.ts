/**
 * `options.explain` adds `trace` (contract section 17): one entry per rule
 * evaluated and scope instance, with the value of its condition (true,
 * false or "error: <message>"), on /v1/evaluate and /v1/evaluate-call; no
 * trace without it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, testApp, type TestApp } from '../helpers/app.js';

const POLICIES = fileURLToPath(new URL('../fixtures/policytest/explain', import.meta.url));
const K = 'io.modelcontextprotocol/trust-annotations';

const result = {
  content: [
    { type: 'text', text: 'from the web', _meta: { [K]: { untrusted: true } } },
    { type: 'text', text: 'from the operator' },
  ],
};

describe('options.explain: trace', () => {
  let t: TestApp;
  beforeAll(async () => {
    // A loaded machine must not turn a value into the budget error, nor shed the request.
    t = await testApp({ TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', TRUSTGATE_EVAL_BUDGET_MS: '60000' }, POLICIES);
  });
  afterAll(() => t.close());

  it('lists every result and block rule with its value, per block, in policy, rule, block order', async () => {
    const r = await post(t.app, '/v1/evaluate', { result, context: { destination: 'local' }, options: { explain: true } });
    expect(r.status).toBe(200);
    expect(r.json.trace).toEqual([
      { policy: 'explain', rule: 'fence-untrusted', scope: 'block', pointer: '/content/0', value: true },
      { policy: 'explain', rule: 'fence-untrusted', scope: 'block', pointer: '/content/1', value: false },
      { policy: 'explain', rule: 'errors-at-runtime', scope: 'result', pointer: '', value: expect.stringMatching(/^error: .+/) },
      { policy: 'explain', rule: 'external-destination', scope: 'result', pointer: '', value: false },
    ]);
    // The rule that failed to evaluate counts as matched (fail closed), and its finding says why.
    const failed = r.json.findings.find((f: { rule: string }) => f.rule === 'errors-at-runtime');
    expect(failed.error).toBeDefined();
    expect(r.json.trace[2].value).toBe(`error: ${failed.error}`);
  });

  it('no trace without explain', async () => {
    for (const options of [undefined, { explain: false }]) {
      const r = await post(t.app, '/v1/evaluate', { result, ...(options ? { options } : {}) });
      expect(r.status).toBe(200);
      expect(r.json).not.toHaveProperty('trace');
    }
  });

  it('a denied result still lists every rule', async () => {
    const r = await post(t.app, '/v1/evaluate', { result: { content: [] }, context: { destination: 'external', missing: 'x' }, options: { explain: true } });
    expect(r.json.trace).toEqual([
      { policy: 'explain', rule: 'errors-at-runtime', scope: 'result', pointer: '', value: true },
      { policy: 'explain', rule: 'external-destination', scope: 'result', pointer: '', value: true },
    ]);
  });

  it('/v1/evaluate-call lists every call rule, matched or not', async () => {
    const r = await post(t.app, '/v1/evaluate-call', { call: { name: 'write' }, options: { explain: true } });
    expect(r.status).toBe(200);
    expect(r.json.trace).toEqual([
      { policy: 'explain', rule: 'deny-after-untrusted', scope: 'call', pointer: '', value: false },
      { policy: 'explain', rule: 'never-on-calls', scope: 'call', pointer: '', value: false },
    ]);
    const plain = await post(t.app, '/v1/evaluate-call', { call: { name: 'write' } });
    expect(plain.json).not.toHaveProperty('trace');
    const typo = await post(t.app, '/v1/evaluate-call', { call: { name: 'write' }, options: { explian: true } });
    expect(typo.status).toBe(400);
  });

  it('rules left unevaluated once the CEL budget is spent are listed with the budget error', async () => {
    const b = await testApp({ TRUSTGATE_EVAL_BUDGET_MS: '1', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' }, POLICIES);
    try {
      // Enough blocks that evaluating them takes longer than 1 ms.
      const many = { content: Array.from({ length: 5000 }, (_, i) => ({ type: 'text', text: `b${i}` })) };
      const r = await post(b.app, '/v1/evaluate', { result: many, options: { explain: true } });
      expect(r.status).toBe(200);
      // One entry per block for the block rule, one per result rule: listed, or counted past the answer's size bound.
      expect(r.json.trace.length + (r.json.traceOmitted ?? 0)).toBe(5002);
      expect(new Set(r.json.trace.map((e: { rule: string }) => e.rule))).toEqual(new Set(['fence-untrusted', 'errors-at-runtime', 'external-destination']));
      expect(r.json.trace.some((e: { value: unknown }) => typeof e.value === 'string' && e.value.startsWith('error: evaluation budget exceeded'))).toBe(true);
    } finally {
      await b.close();
    }
  });

  it('stays within the answer size bound: past its share the trace keeps the first entry of every rule', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-explain-'));
    const rules = Array.from({ length: 30 }, (_, i) => `  - id: rule-${i}\n    when: block.index == ${i}\n    effect: flag\n`).join('');
    writeFileSync(join(dir, 'many.yaml'), `id: many\nmode: audit\nrules:\n${rules}`);
    const b = await testApp({ TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', TRUSTGATE_EVAL_BUDGET_MS: '60000' }, dir);
    try {
      const body = JSON.stringify({ result: { content: Array.from({ length: 5000 }, () => ({ type: 'text', text: '' })) }, options: { explain: true } });
      const r = await post(b.app, '/v1/evaluate', body);
      expect(r.status).toBe(200);
      const { result: _forwarded, ...rest } = r.json;
      expect(JSON.stringify(rest).length).toBeLessThanOrEqual(10 * body.length + 64 * 1024);
      expect(r.json.traceOmitted).toBeGreaterThan(0);
      expect(r.json.trace.length + r.json.traceOmitted).toBe(30 * 5000);
      const listed = new Set(r.json.trace.map((e: { rule: string }) => e.rule));
      expect(listed.size).toBe(30);
      // The trace takes what the other lists leave: asking for it cuts none of them.
      const plain = await post(b.app, '/v1/evaluate', body.replace('"explain":true', '"explain":false'));
      const lists = (j: any) => ({ findings: j.findings, findingsOmitted: j.findingsOmitted, validation: j.validation, blocks: j.blocks.length, blocksOmitted: j.blocksOmitted });
      expect(lists(r.json)).toEqual(lists(plain.json));
    } finally {
      await b.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
