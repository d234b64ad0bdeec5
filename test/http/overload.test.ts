/**
 * A deliberately slow policy: the evaluation budget fails the rest of the
 * decision closed, and a saturated event loop is answered with 503 +
 * Retry-After instead of an unbounded queue.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, testApp, type TestApp } from '../helpers/app.js';

const SLOW = 'size(context.items) > 0 && context.items.all(a, context.items.all(b, a == b || a != b))';

function slowPolicies(): string {
  const dir = mkdtempSync(join(tmpdir(), 'trustgate-slow-'));
  writeFileSync(
    join(dir, 'slow.yaml'),
    [
      'id: slow',
      'mode: enforce',
      'rules:',
      '  - id: quadratic',
      '    scope: result',
      `    when: '${SLOW}'`,
      '    effect: flag',
      '  - id: after-the-slow-one',
      '    scope: result',
      '    when: "false"',
      '    effect: deny',
      '',
    ].join('\n'),
  );
  return dir;
}

const items = (n: number) => Array.from({ length: n }, (_, i) => i);
const request = (n: number) => ({ result: { content: [{ type: 'text', text: 'x' }] }, context: { items: items(n) } });

describe('evaluation budget (TRUSTGATE_EVAL_BUDGET_MS)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ TRUSTGATE_EVAL_BUDGET_MS: '50', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' }, slowPolicies());
  });
  afterAll(() => t.close());

  it('rules left when the budget is spent count as matched, so the result is denied (fail closed)', async () => {
    const r = await post(t.app, '/v1/evaluate', request(2500));
    expect(r.status).toBe(200);
    const late = r.json.findings.find((f: any) => f.rule === 'after-the-slow-one');
    expect(late).toMatchObject({ effect: 'deny', applied: true });
    expect(late.error).toMatch(/budget exceeded/);
    expect(r.json.outcome).toBe('deny');
  });

  it('a cheap request on the same policies is decided normally', async () => {
    const r = await post(t.app, '/v1/evaluate', request(0));
    expect(r.json.outcome).toBe('allow');
  });
});

describe('overload (TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS)', () => {
  let t: TestApp;
  let base = '';
  beforeAll(async () => {
    t = await testApp({ TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '50', TRUSTGATE_EVAL_BUDGET_MS: '60000' }, slowPolicies());
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.server.address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  });
  afterAll(() => t.close());

  const send = (body: unknown, path = '/v1/evaluate') =>
    fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('answers 503 problem+json with Retry-After while the event loop is saturated, then recovers', async () => {
    // Each slow request blocks the loop for a long stretch; quick ones that arrive after the
    // sampler has seen the delay are shed. Rounds repeat until that happens (bounded).
    const slow: Array<Promise<Response>> = [];
    const statuses: number[] = [];
    let shed: Response | undefined;
    for (let round = 0; round < 10 && !shed; round++) {
      slow.push(send(request(1500)));
      await new Promise((r) => setTimeout(r, 30));
      const quick = await Promise.all(Array.from({ length: 10 }, () => send(request(0))));
      statuses.push(...quick.map((r) => r.status));
      shed = quick.find((r) => r.status === 503);
    }
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    expect(shed, `statuses: ${statuses.join(',')}`).toBeDefined();
    expect(shed!.headers.get('retry-after')).toBe('1');
    expect(shed!.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(((await shed!.json()) as { code: string }).code).toBe('TG_ERR_SERVER_OVERLOADED');
    for (const r of await Promise.all(slow)) expect(r.status === 200 || r.status === 503).toBe(true);
    // Liveness stays open; once the loop is idle again, requests are served.
    expect((await fetch(base + '/healthz')).status).toBe(200);
    let ok = false;
    for (let i = 0; i < 50 && !ok; i++) {
      await new Promise((r) => setTimeout(r, 100));
      ok = (await send(request(0))).status === 200;
    }
    expect(ok).toBe(true);
  });
});
