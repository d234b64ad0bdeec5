/**
 * Hostile policies and requests on POST /v1/playground/evaluate: whatever
 * text a page sends as policies (YAML that does not parse, alias bombs,
 * CEL that does not compile or nests deeply, patterns RE2 refuses) and
 * whatever it sends as the request, the answer is a 200, a 400 or a 422
 * problem+json, never a 5xx, and the service keeps answering.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, testApp, type TestApp } from '../helpers/app.js';

const K = 'io.modelcontextprotocol/trust-annotations';

/** Rule conditions: valid ones, broken ones, deep ones, hostile patterns. */
const when = fc.oneof(
  fc.constantFrom('block.untrusted', 'result.sensitive', 'tool.name == "x"', 'context.a.b.c == 1', 'block.uri.matches("^(a+)+$")', 'block.uri.matches("(")', '1 / 0 == 1', 'size(block.audience) > 0'),
  fc.string({ maxLength: 40 }),
  fc.integer({ min: 1, max: 3000 }).map((n) => '('.repeat(n) + 'true' + ')'.repeat(n)),
  fc.integer({ min: 1, max: 3000 }).map((n) => Array.from({ length: n }, () => 'true').join(' && ')),
);

const policyText = fc.oneof(
  fc.record({ id: fc.constantFrom('p', 'q', 'bad id', ''), when, effect: fc.constantFrom('spotlight', 'deny', 'drop', 'nope'), scope: fc.constantFrom('block', 'result', 'call', 'x') }).map(
    (r) => `id: ${JSON.stringify(r.id)}\nmode: enforce\nrules:\n  - id: r\n    scope: ${r.scope}\n    when: ${JSON.stringify(r.when)}\n    effect: ${r.effect}\n`,
  ),
  fc.string({ maxLength: 200 }),
  fc.constant('a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n'),
  fc.constant('{"id": "j", "rules": [{"id": "r", "when": "true", "effect": "flag", "__proto__": {}}]}'),
);

const request = fc.oneof(
  fc.constant({ result: { content: [{ type: 'text', text: 'x', _meta: { [K]: { untrusted: true } } }] } }),
  fc.record({ result: fc.anything({ maxDepth: 4 }) }),
  fc.anything({ maxDepth: 3 }),
  fc.record({ call: fc.record({ name: fc.string() }), tool: fc.object({ maxDepth: 2 }) }),
);

describe('playground: hostile policies and requests', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ TRUSTGATE_PLAYGROUND: '1', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' });
  });
  afterAll(() => t.close());

  it('answers 200, 400 or 422, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ name: fc.constantFrom('a.yaml', 'b.yml', 'c.json', 'd'), text: policyText }), { minLength: 1, maxLength: 3 }),
        request,
        fc.boolean(),
        async (policies, req, call) => {
          const r = await post(t.app, '/v1/playground/evaluate', { policies, request: req, call });
          expect([200, 400, 422]).toContain(r.status);
          if (r.status !== 200) {
            expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
            expect(r.json.code).toMatch(/^TG_ERR_/);
          }
        },
      ),
      { numRuns: 150 },
    );
    const ok = await post(t.app, '/v1/playground/evaluate', {
      policies: [{ name: 'a.yaml', text: 'id: a\nmode: enforce\nrules:\n  - id: r\n    when: block.untrusted\n    effect: spotlight\n' }],
      request: { result: { content: [{ type: 'text', text: 'x', _meta: { [K]: { untrusted: true } } }] } },
    });
    expect(ok.status).toBe(200);
  }, 120_000);
});
