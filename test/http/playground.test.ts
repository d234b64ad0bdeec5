/**
 * The playground routes (contract section 17): absent unless
 * TRUSTGATE_PLAYGROUND=1, under the bearer token when one is set, deciding
 * with the given policies only, writing no session and no pin, 422 naming
 * file and rule for policies that do not load, the limits of /v1/evaluate.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, testApp, type TestApp } from '../helpers/app.js';

const K = 'io.modelcontextprotocol/trust-annotations';
const POLICY = 'id: fence\nmode: enforce\nrules:\n  - id: spotlight-untrusted\n    when: block.untrusted\n    effect: spotlight\n';
const untrusted = { result: { content: [{ type: 'text', text: 'from the web', _meta: { [K]: { untrusted: true } } }] } };
const QUIET = { TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', TRUSTGATE_EVAL_BUDGET_MS: '60000' };

describe('playground off (the default)', () => {
  it('serves neither the page nor the route', async () => {
    const t = await testApp(QUIET);
    try {
      expect((await t.app.inject({ method: 'GET', url: '/playground' })).statusCode).toBe(404);
      expect((await post(t.app, '/v1/playground/evaluate', { policies: [{ name: 'a.yaml', text: POLICY }], request: untrusted })).status).toBe(404);
    } finally {
      await t.close();
    }
  });
});

describe('playground on', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ ...QUIET, TRUSTGATE_PLAYGROUND: '1' });
  });
  afterAll(() => t.close());

  it('serves one page holding the editors and outputs, its script from its own origin only', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/playground' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    for (const id of ['request', 'policy', 'evaluate', 'outcome', 'findings', 'forwarded', 'trace', 'as-test']) expect(page.body).toContain(`data-testid="${id}"`);
    expect(page.body).not.toMatch(/https?:\/\/(?!127)/);
    const js = await t.app.inject({ method: 'GET', url: '/playground/app.js' });
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toMatch(/^text\/javascript/);
  });

  it('decides with the given policies only (the shipped set is not used)', async () => {
    const r = await post(t.app, '/v1/playground/evaluate', { policies: [{ name: 'fence.yaml', text: POLICY }], request: { ...untrusted, context: { destination: 'external' }, options: { explain: true } } });
    expect(r.status).toBe(200);
    expect(r.json.outcome).toBe('allow');
    expect(r.json.findings.map((f: { policy: string; rule: string }) => `${f.policy}/${f.rule}`)).toEqual(['fence/spotlight-untrusted']);
    expect(r.json.result.content[0].text).toContain('<untrusted-content boundary=');
    expect(r.json.trace).toEqual([{ policy: 'fence', rule: 'spotlight-untrusted', scope: 'block', pointer: '/content/0', value: true }]);
    // Not the revision in force.
    const loaded = await t.app.inject({ method: 'GET', url: '/v1/policies' });
    expect(r.json.policyRevision).not.toBe(JSON.parse(loaded.body).policyRevision);
  });

  it('writes no session and no pin', async () => {
    const session = { id: 'playground-s1' };
    const r = await post(t.app, '/v1/playground/evaluate', { policies: [{ name: 'fence.yaml', text: POLICY }], request: { ...untrusted, session } });
    expect(r.status).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/v1/sessions/playground-s1' })).statusCode).toBe(404);
    const tool = { name: 'send', description: 'one' };
    const c = await post(t.app, '/v1/playground/evaluate', { policies: [{ name: 'fence.yaml', text: POLICY }], call: true, request: { call: { name: 'send' }, server: { name: 'pg' }, tool } });
    expect(c.status).toBe(200);
    expect(c.json.tool.pin).toBe('first-seen');
    // The service's own pins never saw it: the first real call is first-seen too.
    const real = await post(t.app, '/v1/evaluate-call', { call: { name: 'send' }, server: { name: 'pg' }, tool });
    expect(real.json.tool.pin).toBe('first-seen');
  });

  it('a policy that does not load is a 422 naming the file and the rule', async () => {
    const broken = 'id: broken\nrules:\n  - id: bad-cel\n    when: block.untrusted &&\n    effect: flag\n';
    const r = await post(t.app, '/v1/playground/evaluate', { policies: [{ name: 'ok.yaml', text: POLICY }, { name: 'broken.yaml', text: broken }], request: untrusted });
    expect(r.status).toBe(422);
    expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(r.json.code).toBe('TG_ERR_POLICY_INVALID');
    expect(r.json.detail).toContain('broken.yaml');
    expect(r.json.detail).toContain('rule bad-cel');
    expect(r.json.errors[0].message).toBe('broken.yaml / bad-cel');
  });

  it('requests the evaluate route refuses are 400s here, and bodies are bounded', async () => {
    const typo = await post(t.app, '/v1/playground/evaluate', { policies: [{ name: 'a.yaml', text: POLICY }], request: { result: { content: [] }, evidences: [] } });
    expect(typo.status).toBe(400);
    expect(typo.json.errors[0].pointer).toBe('/request');
    const none = await post(t.app, '/v1/playground/evaluate', { policies: [], request: untrusted });
    expect(none.status).toBe(400);
    const many = await post(t.app, '/v1/playground/evaluate', {
      policies: [{ name: 'a.yaml', text: POLICY }],
      request: { result: { content: Array.from({ length: 10_001 }, () => ({ type: 'text', text: 'x' })) } },
    });
    expect(many.status).toBe(400);
    expect(many.json.code).toBe('TG_ERR_LIMIT_BLOCKS');
  });

  it('is under the bearer token when one is set', async () => {
    const s = await testApp({ ...QUIET, TRUSTGATE_PLAYGROUND: '1', TRUSTGATE_TOKEN: 'sekret-token' });
    try {
      expect((await s.app.inject({ method: 'GET', url: '/playground' })).statusCode).toBe(401);
      expect((await s.app.inject({ method: 'GET', url: '/playground/app.js' })).statusCode).toBe(401);
      expect((await post(s.app, '/v1/playground/evaluate', { policies: [{ name: 'a.yaml', text: POLICY }], request: untrusted })).status).toBe(401);
      const ok = await s.app.inject({ method: 'GET', url: '/playground', headers: { authorization: 'Bearer sekret-token' } });
      expect(ok.statusCode).toBe(200);
    } finally {
      await s.close();
    }
  });
});

describe('playground: a policy that would run for minutes', () => {
  it('nested comprehensions over lists it builds itself stop at the evaluation budget: an error, fail closed', async () => {
    const t = await testApp({ TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', TRUSTGATE_EVAL_BUDGET_MS: '200', TRUSTGATE_PLAYGROUND: '1' });
    try {
      // A billion steps from 12 KB of policy text.
      const l = `[${Array.from({ length: 1000 }, (_, i) => i).join(',')}]`;
      const when = `${l}.all(a, ${l}.all(b, ${l}.all(c, a + b + c >= 0)))`;
      const policy = `id: slow\nmode: enforce\nrules:\n  - id: r\n    scope: result\n    when: "${when}"\n    effect: deny\n`;
      const r = await post(t.app, '/v1/playground/evaluate', { policies: [{ name: 'slow.yaml', text: policy }], request: untrusted });
      expect(r.status).toBe(200);
      expect(r.json.outcome).toBe('deny');
      expect(r.json.findings).toEqual([expect.objectContaining({ policy: 'slow', rule: 'r', error: 'evaluation budget exceeded' })]);
    } finally {
      await t.close();
    }
  });
});
