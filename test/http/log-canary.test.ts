/**
 * The decision log must never carry what the policies protect (contract
 * section 9): block text, structuredContent, evidence records. A unique
 * marker is put in all of them, for every effect and every error path,
 * at the most verbose log level, and must not appear in any log line.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveDigest } from '../../src/evidence/digest.js';
import { EFFECTS } from '../../src/policy/vocabulary.js';
import { post, testApp, type TestApp } from '../helpers/app.js';

const MARKER = 'CANARY-7f1c2e-do-not-log';
const K = 'io.modelcontextprotocol/trust-annotations';
const record = { class: 'confidential', note: MARKER };
const digest = deriveDigest(record, 'jcs/rfc8785', 'sha256').digest;

function request(extra: Record<string, unknown> = {}) {
  return {
    protocolVersion: '2025-06-18',
    result: {
      _meta: { [K]: { sensitive: true, evidenceRef: { type: 'data-class.v1', digest, canonicalization: 'jcs/rfc8785' } } },
      content: [
        // A member named with the marker: withheld when the block is rebuilt, counted in the log line, never named there.
        { type: 'text', text: `plain ${MARKER}`, _meta: { [K]: { untrusted: true } }, [`x-${MARKER}`]: 'extra' },
        { type: 'resource', resource: { uri: 'file:///x', text: `embedded ${MARKER}` } },
        { type: 'text', text: MARKER, annotations: { audience: ['user'], priority: 7 } },
      ],
      structuredContent: { secret: MARKER },
    },
    context: { destination: 'external-model' },
    evidence: [{ digest, record }],
    ...extra,
  };
}

/** The members effects `label` and `mask` need (contract section 16). */
function members(effect: string): Record<string, unknown> {
  if (effect === 'label') return { labels: { untrusted: true, sensitive: true } };
  if (effect === 'mask') return { mask: ['secrets', 'pii'] };
  return {};
}

const apps: TestApp[] = [];
afterAll(async () => {
  for (const a of apps) await a.close();
});

function allLogs(): string {
  return apps.flatMap((a) => a.logs).join('\n');
}

describe('decision log canary', () => {
  const byEffect = new Map<string, TestApp>();
  beforeAll(async () => {
    for (const effect of EFFECTS) {
      const dir = mkdtempSync(join(tmpdir(), `trustgate-canary-${effect}-`));
      writeFileSync(
        join(dir, 'p.json'),
        JSON.stringify({
          id: 'canary',
          mode: 'enforce',
          rules: [
            { id: `${effect}-block`, scope: 'block', when: 'true', effect, ...members(effect) },
            { id: `${effect}-result`, scope: 'result', when: 'true', effect, ...members(effect) },
          ],
        }),
      );
      const t = await testApp({ LOG_LEVEL: 'trace', TRUSTGATE_TOKEN: 'tok' }, dir);
      apps.push(t);
      byEffect.set(effect, t);
    }
  });

  it.each([...EFFECTS])('effect %s: decided, logged, and no marker in the log', async (effect) => {
    const t = byEffect.get(effect)!;
    const r = await post(t.app, '/v1/evaluate', request(), { authorization: 'Bearer tok' });
    expect(r.status).toBe(200);
    expect(r.json.findings.map((f: any) => f.effect)).toContain(effect);
    const decisionLines = t.logs.filter((l) => l.includes('"msg":"decision"'));
    expect(decisionLines.length).toBeGreaterThan(0);
    const line = JSON.parse(decisionLines.at(-1)!);
    expect(line).toMatchObject({ decisionId: r.json.decisionId, outcome: r.json.outcome, policyRevision: r.json.policyRevision });
    expect(line.evidence).toEqual([expect.objectContaining({ status: 'verified' })]);
    const withheld = r.json.withheld.length + (r.json.withheldOmitted ?? 0);
    expect(line.withheldCount).toBe(withheld > 0 ? withheld : undefined);
    // The effects that rebuild the result withhold structuredContent at least.
    if (['redact', 'drop', 'spotlight'].includes(effect)) expect(line.withheldCount).toBeGreaterThan(0);
    expect(t.logs.join('\n')).not.toContain(MARKER);
  });

  it.each([
    ['malformed JSON', '/v1/evaluate', `{"result":{"content":[{"type":"text","text":"${MARKER}"`],
    ['schema failure', '/v1/evaluate', JSON.stringify({ ...request(), [MARKER]: 1 })],
    ['unknown protocolVersion', '/v1/evaluate', JSON.stringify(request({ protocolVersion: MARKER }))],
    ['result too deep', '/v1/evaluate', `{"result":{"content":[{"type":"text","text":"${MARKER}"}],"x":${'['.repeat(130)}${']'.repeat(130)}}}`],
    ['body too deep', '/v1/validate', `{"result":{"t":"${MARKER}","x":${'['.repeat(300)}${']'.repeat(300)}}}`],
    ['digest of a non-I-JSON record', '/v1/digest', `{"record":{"a":"${MARKER}","a":"${MARKER}"},"canonicalization":"jcs/rfc8785"}`],
    ['digest with a lone surrogate', '/v1/digest', `{"record":{"a":"${MARKER}\\ud800"},"canonicalization":"cbor/rfc8949"}`],
    ['validate', '/v1/validate', JSON.stringify(request())],
  ])('error path %s leaves no marker in the log', async (_what, url, payload) => {
    const t = byEffect.get('flag')!;
    await t.app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json', authorization: 'Bearer tok' } });
    await t.app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'text/plain' } });
    await t.app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json', authorization: 'Bearer wrong' } });
    expect(allLogs()).not.toContain(MARKER);
  });

  it('the token never reaches the log', () => {
    expect(allLogs()).not.toMatch(/Bearer tok/);
  });
});
