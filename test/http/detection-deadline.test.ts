/**
 * A result that takes the detectors past the decision's CEL budget is decided as the error it is (every rule not
 * evaluated counts as matched: fail closed), answered 200, never a 5xx, and the next request is answered as usual.
 */
import { describe, expect, it } from 'vitest';
import { post, testApp } from '../helpers/app.js';

describe('detection past the deadline', () => {
  it.each(['20', '60', '100'])('with a budget of %s ms: a 200 that forwards no credential, then the next request', async (budget) => {
    const t = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_EVAL_BUDGET_MS: budget, TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' });
    try {
      const text = 'a1 4 5 a@ '.repeat(200_000) + ' key AKIAIOSFODNN7EXAMPLE';
      const r = await post(t.app, '/v1/evaluate', { result: { content: [{ type: 'text', text }] }, tool: { name: 'notes' } });
      expect(r.status, r.body.slice(0, 500)).toBe(200);
      expect(JSON.stringify(r.json.result ?? {})).not.toContain('AKIAIOSFODNN7EXAMPLE');
      const next = await post(t.app, '/v1/evaluate', { result: { content: [{ type: 'text', text: 'hello' }] } });
      expect(next.status).toBe(200);
    } finally {
      await t.close();
    }
  }, 60_000);

  it.each(['20', '60'])('with a budget of %s ms, links whose names and descriptions are read across their seams: no half of a split credential goes out', async (budget) => {
    const t = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_EVAL_BUDGET_MS: budget, TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' });
    try {
      // Every link's name and description are one long token each (their seams are read at their longest), and the
      // last link holds an AWS key split between the two.
      const token = (i: number) => Buffer.from(`line ${i} of some text that is long enough to read `.repeat(6)).toString('base64url');
      const content: unknown[] = Array.from({ length: 5000 }, (_, i) => ({ type: 'resource_link', uri: `file:///f/${i}`, name: token(i), description: token(i + 1) }));
      content.push({ type: 'resource_link', uri: 'file:///f/key', name: 'aws_access_key_id=AKIAIOSFOD', description: 'NN7EXAMPLE' });
      const r = await post(t.app, '/v1/evaluate', { result: { content }, tool: { name: 'links' } });
      expect(r.status, r.body.slice(0, 500)).toBe(200);
      const out = JSON.stringify(r.json.result ?? {});
      expect(out).not.toContain('AKIAIOSFOD');
      expect(out).not.toContain('NN7EXAMPLE');
      const next = await post(t.app, '/v1/evaluate', { result: { content: [{ type: 'text', text: 'hello' }] } });
      expect(next.status).toBe(200);
    } finally {
      await t.close();
    }
  }, 60_000);
});
