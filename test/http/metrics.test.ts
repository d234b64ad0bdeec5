import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, testApp, type TestApp } from '../helpers/app.js';

const K = 'io.modelcontextprotocol/trust-annotations';

function metric(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('GET /metrics (contract section 7)', () => {
  let t: TestApp;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'trustgate-metrics-'));
    writeFileSync(join(dir, 'p.yaml'), 'id: p\nmode: enforce\nrules:\n  - id: deny-untrusted\n    when: block.untrusted\n    effect: deny\n');
    t = await testApp({}, dir);
  });
  afterAll(() => t.close());

  it('counts decisions by outcome, evidence by status, reloads by result, and times evaluations', async () => {
    await post(t.app, '/v1/evaluate', { result: { content: [{ type: 'text', text: 'a' }] } });
    await post(t.app, '/v1/evaluate', { result: { content: [{ type: 'text', text: 'b', _meta: { [K]: { untrusted: true } } }] } });
    await post(t.app, '/v1/evaluate', {
      result: { _meta: { [K]: { evidenceRef: { type: 'x', digest: 'sha256:' + 'a'.repeat(64), canonicalization: 'jcs/rfc8785' } } }, content: [] },
    });
    await t.app.inject({ method: 'POST', url: '/v1/policies/reload' });
    writeFileSync(join(dir, 'broken.yaml'), 'id: [');
    await t.app.inject({ method: 'POST', url: '/v1/policies/reload' });

    const r = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/plain/);
    expect(metric(r.body, 'trustgate_decisions_total', 'outcome="allow"')).toBe(2);
    expect(metric(r.body, 'trustgate_decisions_total', 'outcome="deny"')).toBe(1);
    expect(metric(r.body, 'trustgate_evidence_total', 'status="unresolved"')).toBe(1);
    expect(metric(r.body, 'trustgate_policy_reloads_total', 'result="success"')).toBe(1);
    expect(metric(r.body, 'trustgate_policy_reloads_total', 'result="failure"')).toBe(1);
    expect(r.body).toMatch(/^trustgate_evaluation_duration_seconds_count 3$/m);
    expect(r.body).toContain('trustgate_process_resident_memory_bytes');
    expect(r.body).toContain('trustgate_nodejs_eventloop_lag_seconds');
  });
});
