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
});
