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
import { call, waitFor, type Answer } from '../helpers/http.js';
import { serviceStarter, type Running } from '../helpers/process.js';

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
  // The service runs in a process of its own, as in production: a client sharing its event
  // loop would be blocked with it and send its requests only after the block, when the
  // loop is idle again and serving them is right.
  const start = serviceStarter();
  let s: Running;
  beforeAll(async () => {
    // (One serving process: with more, the quick requests the primary hands to an idle one are served, rightly.)
    s = await start({ TRUSTGATE_POLICY_DIR: slowPolicies(), TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '50', TRUSTGATE_EVAL_BUDGET_MS: '60000', TRUSTGATE_WORKERS: '1' });
  }, 90_000);

  const send = (body: unknown) => call(s, 'POST', '/v1/evaluate', body);

  it('answers 503 problem+json with Retry-After while the event loop is saturated, then recovers', async () => {
    // Each slow request blocks the service's loop for a long stretch; quick ones sent while it
    // is blocked wait in the socket and are read once it is free, when the sampler has seen the
    // delay: they are shed. Quick ones go out every 25 ms for a second after each slow one, so
    // that some arrive during the block however long the slow one takes to begin (a loaded
    // machine); rounds repeat (bounded).
    const slow: Array<Promise<Answer>> = [];
    const statuses: number[] = [];
    let shed: Answer | undefined;
    for (let round = 0; round < 5 && !shed; round++) {
      slow.push(send(request(2000)));
      const sent: Array<Promise<Answer>> = [];
      for (let k = 0; k < 40; k++) {
        sent.push(send(request(0)));
        await new Promise((r) => setTimeout(r, 25));
      }
      const quick = await Promise.all(sent);
      statuses.push(...quick.map((r) => r.status));
      shed = quick.find((r) => r.status === 503);
    }
    expect(statuses.every((c) => c === 200 || c === 503)).toBe(true);
    expect(shed, `statuses: ${statuses.join(',')}`).toBeDefined();
    expect(shed!.headers['retry-after']).toBe('1');
    expect(shed!.type).toMatch(/^application\/problem\+json/);
    expect(shed!.json.code).toBe('TG_ERR_SERVER_OVERLOADED');
    for (const r of await Promise.all(slow)) expect(r.status === 200 || r.status === 503).toBe(true);
    // Liveness stays open; once the loop is idle again, requests are served.
    expect((await call(s, 'GET', '/healthz')).status).toBe(200);
    await waitFor(async () => (await send(request(0))).status === 200, 20_000, 'a quick request served after the load');
  }, 120_000);
});
